"""Cascaded evaluation: the stages' models as one system on a split, scored beside gold inputs.

    meditod eval-cascade --nlu runs/llama3-8b/nlu --pol runs/llama3-8b/pol \\
        --nlg runs/llama3-8b/nlg --data meditod --split test --out runs/cascade/llama3-8b/test

The split's dialogues are replayed with their real patient utterances and their real history:
NLU reads every patient line; POL sees the state folded from NLU's predictions of every patient
line before the doctor's (`views.cascade_pol_rows`), NLG the actions POL predicted
(`views.cascade_nlg_rows`). The same POL and NLG also run on gold inputs, so each score has two
columns. A row's cascaded input that equals its gold input is generated once (greedy decoding
gives the same output). Each module runs as one batched call over every dialogue and turn:
turns of different dialogues are independent, and a turn depends on earlier turns of its own
dialogue only through NLU predictions, which all come first.

Writes, in `--out`: `results.json` (every score of both columns, the attribution counts, the
models and the seconds each stage took), `results.md`, `results.png` (gold-input and cascaded
bars per metric) and the predictions of every stage under `predictions/` (model outputs on the
split's text: keep them where the data may be).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from meditod_hub.data import proof, provenance
from meditod_hub.data.dataset import load_split as load
from meditod_hub.data.metrics import MalformedLabel, make_judge
from meditod_hub.data.tasks import TASKS, Task
from meditod_hub.errors import UsageError
from meditod_hub.evaluation.report import bar_chart
from meditod_hub.files import atomic_write, output_folder
from meditod_hub.models.cascade import CascadeRun, Pipeline, PipelineArguments, cascade, stages
from meditod_hub.models.records import Prediction, value_at, write_predictions
from meditod_hub.models.runs import (
    RunError,
    base_label,
    hub_id,
    run_info_digest,
)

PURPOSE = "eval-cascade"  # the output guard's name for what this command writes (files.py)
OUT_FILES = ("results.json", "results.md", "results.png")
COLUMNS = ("gold_input", "cascaded")
COLUMN_LABELS = {"gold_input": "gold input", "cascaded": "cascaded"}


@dataclass
class EvalCascadeArguments:
    data: str | None = field(default=None, metadata={
        "help": "built dataset folder or Hub id (default: the one the runs were trained on, else "
                "./meditod)"})
    split: str = field(default="test", metadata={"help": "test, test_ood, validation, ..."})
    out: str | None = field(default=None, metadata={
        "help": "output folder (default runs/cascade/<model>/<split>)"})
    limit: int | None = field(default=None, metadata={"min": 1,
        "help": "only the first N dialogues of the split (smoke runs)"})
    judge: str = field(default="exact", metadata={
        "help": "non-medical value judge: exact, or embedding (with --judge_model, a local "
                "sentence-embedding model; default the bundled all-MiniLM-L6-v2)",
        "choices": ["exact", "embedding"]})
    judge_model: str | None = field(default=None, metadata={"help": "embedding judge model"})
    pak_mode: str = field(default="exact", metadata={
        "help": "POL Precision@K mode (see `meditod evaluate`)",
        "choices": ["exact", "exact_medical", "medical_present"]})
    bertscore_model: str | None = field(default=None, metadata={
        "help": "NLG BERTScore model (local or cached; paper: roberta-large); null without it"})
    bertscore_layer: int | None = field(default=None, metadata={"min": 0, "help": "BERTScore layer"})


def first() -> Task:
    """The stage that reads the dialogue only (NLU): its rows are the patient lines replayed."""
    return stages()[0]


def cascaded() -> list[Task]:
    """The stages after the first, in cascade order (POL, NLG), each scored on both inputs: the
    drop is attributed over them, each by the input the cascade built for it."""
    return stages()[1:]


def default_out(args: PipelineArguments, split: str) -> Path:
    """runs/cascade/<the first stage's model name>/<split>: run folders runs/<model>/<task> give
    <model>."""
    first_model = args.sources()[first().name]
    source = Path(first_model)
    name = source.parent.name if source.is_dir() and source.parent.name else \
        first_model.replace("/", "--")
    return Path("runs") / "cascade" / name / split


def select_dialogues(rows: dict[str, list[dict]], limit: int | None) -> dict[str, list[dict]]:
    if limit is None:
        return rows
    keep = list(dict.fromkeys(r["dialogue_id"] for r in rows[first().name]))[:limit]
    return {task: [r for r in task_rows if r["dialogue_id"] in set(keep)]
            for task, task_rows in rows.items()}


# --- scoring: the one place this module calls into the evaluation --------------------------
def load_split(data: str, split: str) -> dict[str, list[dict]]:
    return {task.name: load(data, task.name, split) for task in stages()}


def score(task: Task, gold_rows: list[dict], records: list[Prediction], args: EvalCascadeArguments,
          judge) -> dict:
    return task.score(gold_rows, [r.label for r in records], judge=judge,
                                pak_mode=args.pak_mode, bertscore_model=args.bertscore_model,
                                bertscore_layer=args.bertscore_layer)


def label_wrong(task: Task, gold: list, predicted) -> bool:
    """A structured row is wrong unless its label's tuples equal the gold ones (exact match)."""
    try:
        return predicted is None or task.tuples(predicted).all != task.tuples(gold).all
    except MalformedLabel:
        return True


# --- attribution ---------------------------------------------------------------------------
def _differ(column: str) -> str:
    """The input's verb, as its name reads: the state differs, the actions differ."""
    return "differ" if column.endswith("s") else "differs"


def attribution(rows: dict[str, list[dict]], run: CascadeRun) -> dict:
    """How much of the drop the upstream stages explain, as counts over each cascaded stage's
    rows: those whose built input differs from the gold one and, for a structured label, the
    wrong rows on either input and the cascaded ones among the differing rows."""
    counts = {}
    for task in cascaded():
        gold, column = rows[task.name], task.input_column
        differs = [c[column] != g[column] for g, c in zip(gold, run[task].rows)]
        key = f"{task.name}_rows_{column}_{_differ(column)}"
        counts.update({f"{task.name}_rows": len(gold), key: sum(differs)})
        if not task.structured:
            continue
        wrong = {c: [label_wrong(task, g[task.target_column], r.label)
                     for g, r in zip(gold, getattr(run[task], c))] for c in COLUMNS}
        counts.update({
            f"{task.name}_errors_gold_input": sum(wrong["gold_input"]),
            f"{task.name}_errors_cascaded": sum(wrong["cascaded"]),
            f"{task.name}_errors_cascaded_{column}_{_differ(column)}": sum(
                w and d for w, d in zip(wrong["cascaded"], differs))})
    return counts


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({part / whole:.1%})" if whole else f"{part}/0"


def attribution_lines(counts: dict) -> list[str]:
    """One line per cascaded stage, from `attribution`'s counts."""
    lines = []
    for task in cascaded():
        name, shown, column = task.name, task.display_name, task.input_column
        verb = _differ(column)
        gold = "the gold ones" if verb == "differ" else "the gold one"
        rows, differ = counts[f"{name}_rows"], counts[f"{name}_rows_{column}_{verb}"]
        if not task.structured:
            lines.append(f"{shown}: {_share(differ, rows)} rows get predicted {column} that "
                         f"{verb} from {gold}.")
            continue
        errors = counts[f"{name}_errors_cascaded"]
        lines.append(
            f"{shown}: {_share(counts[f'{name}_errors_cascaded_{column}_{verb}'], errors)} of the "
            f"cascaded {shown} errors are on rows whose predicted {column} {verb} from {gold} "
            f"(the {column} {verb} on "
            f"{_share(differ, rows)} rows; rows with wrong {task.target_column}: "
            f"{counts[f'{name}_errors_gold_input']} on gold input, {errors} cascaded; exact "
            f"match of {task.item_head} tuples).")
    return lines


# --- reports -------------------------------------------------------------------------------
def table_rows(results: dict) -> list[dict]:
    """{task, name, gold_input, cascaded} for every metric of a cascaded stage (POL, NLG)
    present in either column (the model card's metric list and formats)."""
    rows = []
    for task in cascaded():
        for metric in task.metrics:
            values = [value_at(results[task.name][column], metric.key) for column in COLUMNS]
            if any(v is not None for v in values):
                rows.append({"task": task.display_name, "name": metric.name, **{
                    column: "—" if v is None else format(v, metric.fmt)
                    for column, v in zip(COLUMNS, values)}})
    return rows


def models_line(models: dict) -> str:
    return ", ".join(f"{task.upper()} `{model['label']}`" for task, model in models.items())


def summary(results: dict) -> str:
    """Each cascaded stage's headline metric, on gold input and cascaded, in one line."""
    return "; ".join(
        f"{task.display_name} {task.headline_metric.name} "
        + " -> ".join(format(value_at(results[task.name][column], task.headline),
                             task.headline_metric.fmt) for column in COLUMNS)
        + " cascaded" for task in cascaded())


def write_markdown(results: dict, path: Path) -> None:
    head = first()
    opening = results[head.name]
    reads = ", ".join(f"{task.display_name} sees the {task.input_column} built from predicted "
                      f"{TASKS[task.upstream].display_name}" for task in cascaded())
    lines = [f"# MediTOD cascaded evaluation ({results['split']})", "",
             f"Models: {models_line(results['models'])}. Real patient utterances and dialogue "
             f"history; {reads}. "
             + ("Decoded under the CMAS grammar (--constrained)." if results.get("constrained")
                else "Decoded freely, as in the paper."),
             "",
             f"{head.display_name} (the same in both columns): F1 {opening['f1']:.4f}, joint "
             f"accuracy {opening['joint_accuracy']:.4f}, {opening['parse_failures']} parse "
             f"failures in {opening['examples']} patient lines.", "",
             "| module | metric | gold input | cascaded |", "|---|---|---|---|"]
    lines += [f"| {r['task']} | {r['name']} | {r['gold_input']} | {r['cascaded']} |"
              for r in table_rows(results)]
    lines += ["", "Parse failures: " + "; ".join(
        f"{task.display_name} {results[task.name]['gold_input']['parse_failures']} on gold "
        f"input, {results[task.name]['cascaded']['parse_failures']} cascaded"
        for task in cascaded()) + ".", "", "Where the drop comes from:", ""]
    lines += [f"- {line}" for line in attribution_lines(results["attribution"])]
    atomic_write(path, "\n".join(lines) + "\n", purpose=PURPOSE)


def write_chart(results: dict, path: Path) -> None:
    """Gold-input and cascaded bars per charted metric of each cascaded stage (POL, NLG; BLEU
    scaled to 0-1 like the rest)."""
    rows = {}
    for task in cascaded():
        for metric in task.metrics:
            pair = [value_at(results[task.name][column], metric.key) for column in COLUMNS]
            if metric.key not in task.chart_metrics or None in pair:
                continue
            scale = 100 if metric.key.startswith("bleu") else 1  # NLTK BLEU is x100
            name = f"{task.display_name} {metric.name.replace(' (NLTK, x100)', '/100')}"
            rows[name] = {COLUMN_LABELS[c]: value / scale for c, value in zip(COLUMNS, pair)}
    data = provenance.Provenance.from_json(results.get("provenance"))
    title = "Cascade " + " → ".join(f"{t.display_name} {results['models'][t.name]['label']}"
                                    for t in stages())
    subtitle = (f"{results['split']} split of {data.short() if data else 'unrecorded data'}; "
                f"{'constrained' if results.get('constrained') else 'free'} decoding")
    atomic_write(path, bar_chart(title, subtitle, rows, list(COLUMN_LABELS.values()), "score"),
                 purpose=PURPOSE)


def model_label(source: str, predictor) -> str:
    """How reports name a model: its Hub id, else its recipe's model name, else its folder name
    (never a local path)."""
    return hub_id(source) or getattr(predictor, "info", {}).get("model") or base_label(source)


def card_section(folder: Path, run_path: Path, task: str) -> tuple[dict, dict[str, Path]]:
    """The model card's cascade table for the run at `run_path`, and the files to publish.

    Refuses a cascade that did not run this very run (by its run_info.json)."""

    results_file = Path(folder) / "results.json"
    try:
        results = json.loads(results_file.read_text(encoding="utf-8"))
        used = results["models"][task]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError, KeyError,
            TypeError) as exc:
        raise RunError(f"{results_file}: not a cascaded evaluation ({type(exc).__name__}); run "
                       "`make eval-cascade` first") from None
    mine = run_info_digest(run_path)
    if mine is None or used.get("run_info_sha256") != mine:
        raise RunError(f"{results_file}: its {task.upper()} model ({used.get('label')}) is not the "
                       f"run {run_path}; give the cascade these three runs were evaluated in")
    section = {"split": results["split"], "models": models_line(results["models"]),
               "nlu_f1": results[first().name]["f1"], "rows": table_rows(results),
               "lines": attribution_lines(results["attribution"])}
    files = {f"eval/cascade/{name}": Path(folder) / name
             for name in OUT_FILES if (Path(folder) / name).is_file()}
    return section, files


def stage_prediction_files() -> list[str]:
    """The predictions files under `predictions/`: one per stage and input (gold or cascaded)."""
    return [f"{first().name}.jsonl"] + [f"{task.name}.{column}.jsonl" for task in cascaded()
                                        for column in COLUMNS]


def write_stage_predictions(run: CascadeRun, folder: Path) -> None:
    """One predictions file per stage and input (gold or cascaded), in the records format."""
    records = [run.first.cascaded] + [getattr(run[task], column) for task in cascaded()
                                      for column in COLUMNS]
    for name, stage in zip(stage_prediction_files(), records):
        write_predictions(stage, folder / name, purpose=PURPOSE)


def evaluate_cascade(pipeline: PipelineArguments, args: EvalCascadeArguments,
                     models: Pipeline | None = None) -> dict:
    """Run, score and write everything; returns results.json's content."""
    out = Path(args.out) if args.out else default_out(pipeline, args.split)
    output_folder(out, OUT_FILES + tuple(f"predictions/{name}" for name in
                                         stage_prediction_files()),
                  purpose=PURPOSE, input_folders=[args.data, *pipeline.sources().values()])

    judge = make_judge(args.judge, model=args.judge_model)
    rows = select_dialogues(load_split(args.data, args.split), args.limit)
    head = first().name
    if not rows[head]:
        raise UsageError(f"split {args.split!r} of {args.data} has no patient lines to replay")
    start = time.perf_counter()
    specs = pipeline.specs(constrained=False)  # the paper's setting unless --constrained
    models = models or Pipeline.load(specs)
    loaded = time.perf_counter()
    run = cascade(models, rows)
    results = {
        "split": args.split, "dialogues": len({r["dialogue_id"] for r in rows[head]}),
        **proof.record(args.data),
        "models": {task: {"label": model_label(spec.source, models.predictors[task]),
                          "revision": spec.revision,
                          "run_info_sha256": run_info_digest(
                              getattr(models.predictors[task], "folder", None))}
                   for task, spec in specs.items()},
        "constrained": specs[head].decode.constrained,
        run.first.task.name: score(run.first.task, rows[run.first.task.name], run.first.cascaded,
                                   args, judge),
        **{task.name: {column: score(task, rows[task.name], getattr(run[task], column), args, judge)
                       for column in COLUMNS} for task in cascaded()},
        "attribution": attribution(rows, run),
        "seconds": {"load": loaded - start, **run.seconds},
    }
    write_stage_predictions(run, out / "predictions")
    atomic_write(out / "results.json", json.dumps(results, indent=2) + "\n", purpose=PURPOSE)
    write_markdown(results, out / "results.md")
    write_chart(results, out / "results.png")
    results["out"] = str(out)
    return results
