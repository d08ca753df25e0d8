"""`meditod results`: the paper's tables beside your runs and every published checkpoint.

    meditod results --runs runs                                    # every evaluated run under runs/
    meditod results --runs runs other --hub_dataset org/meditod    # + the Hub's models trained on it
    make results RUNS="runs other" HUB_DATASET=org/meditod OUT=out/results

One table per task and split (test, test_ood, then any other split a run was scored on): every
row of the paper's tables (`paper_results`: supervised and in-context), then each evaluated run
found under `--runs` (training runs' `eval/<split>/results.json`: supervised; `meditod fewshot`
outputs: in-context; `meditod eval-cascade` outputs: POL and NLG cascaded; any other
results.json: setting unknown), then, with `--hub_dataset`, every Hub model whose card declares
that dataset, read from its model-index (`--hub_models` names more, e.g. private ones a listing
may not show). Each row says whether decoding was constrained (a results' `constrained` field,
or the card's `meditod.constrained` splits; `no` without one). A Hub model that cannot be read
(no model-index, a malformed one, a private repo this token cannot see, a card that does not
download) is listed as such with the reason, never a failure; a local results.json that cannot
be read is named on stderr.

Writes, in `--out` (default out/results): results.md (also printed), results.csv (one line per
row, every table), results.json, and `<task>.png` per task: the headline metric of every system
(test split, then test_ood), the paper's rows shaded. The leaderboard Space (`leaderboard`)
shows the same tables from the Hub.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import sys
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from meditod_hub.arguments import parse_args
from meditod_hub.data import about, paper_results, provenance
from meditod_hub.data.paper_results import cell
from meditod_hub.data.release import EVAL_SPLITS, OOD_SPLIT
from meditod_hub.data.tasks import CASCADED_TASK_NAMES, TASK_NAMES, TASKS, Metric, get_task
from meditod_hub.errors import MeditodError, UsageError, run_main
from meditod_hub.files import atomic_write, output_path, read_json
from meditod_hub.models.records import Results, is_results_name, value_at
from meditod_hub.models.runs import FEWSHOT_INFO, RUN_INFO

PAPER_DATASET = "MediTOD"
SPLIT_LABELS = {"test": "test (respiratory, in-domain)",
                OOD_SPLIT: f"{OOD_SPLIT} (musculoskeletal, out-of-domain)"}
SETTINGS = ("supervised", "in-context", "cascaded")
SOURCES = ("paper", "local", "hub")
CARD_KEY = "meditod"  # the model card's identity block (model_card.CARD_KEY)


@dataclass
class Row:
    """One system's scores on one task and split."""

    task: str
    split: str
    system: str        # how the table names it: the paper's name, a run's model, a Hub repo id
    source: str        # paper | local (found under --runs) | hub
    setting: str       # supervised | in-context | cascaded | unknown
    constrained: bool  # decoding constrained to the label grammar
    family: str        # the kit's family name (`families`), `gpt` for OpenAI models, "" unknown
    scores: dict[str, float]  # metric key (results.json, dotted) -> value
    link: str = ""     # the paper, a local results.json, or the model's Hub page
    note: str = ""
    dataset: str = PAPER_DATASET  # what it was scored on (`provenance.Provenance.short`)
    comparable: bool = True       # MediTOD (or a Hub dataset): under the paper's headings

    def value(self, key: str) -> float | None:
        return self.scores.get(key)


@dataclass
class Unread:
    """A Hub model that has no row, and why."""

    repo: str
    reason: str
    link: str


@dataclass
class Report:
    rows: list[Row]
    unread: list[Unread] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # local files that are not results
    dataset: str | None = None
    generated: str = field(default_factory=lambda: datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"))

    def tables(self) -> list[tuple[str, str, list[Row]]]:
        """(task, split, rows) in task order, test and test_ood first; rows in report order.
        Rows scored on other data than MediTOD (a synthetic build, the user's own) get tables
        of their own after the paper's, one per dataset: never under the paper's headings."""
        splits = list(EVAL_SPLITS) + sorted({r.split for r in self.rows} - set(EVAL_SPLITS))
        others = list(dict.fromkeys(r.dataset for r in self.rows if not r.comparable))
        return [(task, split, rows) for task in TASK_NAMES for split in splits
                for dataset in (None, *others)
                if (rows := [r for r in self.rows if (r.task, r.split) == (task, split)
                             and (r.comparable if dataset is None
                                  else not r.comparable and r.dataset == dataset)])]

    def as_json(self) -> dict:
        return {"generated": self.generated, "dataset": self.dataset, "paper": paper_results.SOURCE,
                "tables": [{"task": task, "split": split, "heading": heading(task, split, rows),
                            "metrics": [{"key": m.key, "name": m.name}
                                        for m in table_metrics(task, rows)],
                            "rows": [asdict(r) for r in rows]}
                           for task, split, rows in self.tables()],
                "unread": [asdict(u) for u in self.unread], "skipped": self.skipped}


def table_metrics(task: str, rows: Iterable[Row]) -> list[Metric]:
    """The task's metrics that some row of the table reports, in the task's order."""
    present = {key for row in rows for key in row.scores}
    return [m for m in get_task(task).metrics if m.key in present]


def _scores(task: str, scores: dict) -> dict[str, float]:
    return {m.key: v for m in get_task(task).metrics if (v := value_at(scores, m.key)) is not None}


# --- the paper ---------------------------------------------------------------------------------
def paper_rows() -> list[Row]:
    rows = []
    for (key, task, split), scores in paper_results.RESULTS.items():
        model = paper_results.paper_model(key)
        setting = paper_results.setting(key)
        rows.append(Row(task, split, model.name, "paper", setting, False, model.family,
                        dict(scores), about.PAPER,
                        "5 retrieved exemplars" if setting == "in-context" else ""))
    return rows


# --- local runs --------------------------------------------------------------------------------
def _json(path: Path) -> dict:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


def _constrained(*sources: dict) -> bool:
    return any(bool(source.get("constrained")) for source in sources)


def _cascade_rows(path: Path, data: dict) -> list[Row]:
    """The cascaded POL and NLG scores of an `eval-cascade` results.json."""
    models = data["models"]
    chain = " → ".join(f"{t.upper()} {models.get(t, {}).get('label', '?')}" for t in TASK_NAMES)
    scored_on = provenance.Provenance.from_json(data.get("provenance")) \
        or provenance.unknown("unrecorded dataset")
    return [Row(task, str(data.get("split", "")), str(models.get(task, {}).get("label", "?")),
                "local", "cascaded", _constrained(data, data[task]["cascaded"]), "",
                _scores(task, data[task]["cascaded"]), str(path), f"cascade: {chain}",
                scored_on.short(), scored_on.comparable)
            for task in CASCADED_TASK_NAMES if isinstance(data.get(task), dict)
            and isinstance(data[task].get("cascaded"), dict)]


def _results_row(path: Path, results: Results) -> Row:
    """A `meditod evaluate` results file, placed by what sits around it, with what it was
    scored on: the results' provenance, else its run's (or its few-shot output's data)."""
    row, info = _bare_row(path, results)
    found = provenance.Provenance.from_json(results.provenance) or provenance.of_run(info)
    row.dataset, row.comparable = found.short(), found.comparable
    return row


def _bare_row(path: Path, results: Results) -> tuple[Row, dict]:
    """The row and the record beside it (run_info, or the few-shot output's data)."""
    run_info = path.parent.parent.parent / RUN_INFO
    beside = path.parent / FEWSHOT_INFO
    if path.parent.parent.name == "eval" and run_info.is_file():  # <run>/eval/<split>/
        # a damaged run_info names no model: skipped and said, not listed under the folder's name
        info = read_json(run_info, fix=f"its results {path} are not listed until it is fixed")
        return Row(results.task, results.split, str(info.get("model", path.parent.parent.parent.name)),
                   "local", "supervised", _constrained(results.scores, info),
                   str(info.get("family", "")), _scores(results.task, results.scores), str(path),
                   f"run {path.parent.parent.parent}"), info
    if beside.is_file() and "shots" in (info := _json(beside)):  # a `meditod fewshot` output
        paper_model = paper_results.MODELS.get(str(info.get("paper_row")).removeprefix(
            paper_results.IN_CONTEXT))
        family = paper_model.family if paper_model else ""
        return Row(results.task, results.split, str(info.get("model", path.parent.name)), "local",
                   "in-context", _constrained(results.scores, info), family,
                   _scores(results.task, results.scores), str(path),
                   f"{info['shots']} retrieved exemplars"), {"dataset": info.get("data")}
    return Row(results.task, results.split, path.parent.name or path.stem, "local", "unknown",
               _constrained(results.scores), "", _scores(results.task, results.scores), str(path),
               "results file outside a run folder"), {}


def local_rows(folders: Iterable[str | Path]) -> tuple[list[Row], list[str]]:
    """Every evaluated run under `folders` (or the results.json files named), and the results
    files found there that could not be read (with why)."""
    rows, skipped, seen = [], [], set()
    for folder in map(Path, folders):
        if not folder.exists():
            raise UsageError(f"--runs {folder}: no such folder")
        for path in [folder] if folder.is_file() else sorted(
                p for p in folder.rglob("*.json") if is_results_name(p.name)):
            if path.resolve() in seen:  # folders given twice, or one inside another
                continue
            seen.add(path.resolve())
            data = _json(path)
            if isinstance(data.get("models"), dict) and isinstance(data.get("pol"), dict) \
                    and "cascaded" in data["pol"]:
                rows += _cascade_rows(path, data)
                continue
            try:
                rows.append(_results_row(path, Results.read(path)))
            except MeditodError as exc:  # the results file, or its run's run_info.json
                skipped.append(str(exc))
    return rows, skipped


# --- the Hub -----------------------------------------------------------------------------------
def _card_rows(repo: str, card, dataset: str | None, link: str) -> tuple[list[Row], str | None]:
    """The rows of one model card's model-index, or the reason it has none."""
    from meditod_hub.models.families import FAMILIES

    results = card.data.eval_results
    if not results:
        return [], "no model-index in its card"
    identity = card.data.to_dict().get(CARD_KEY)
    identity = identity if isinstance(identity, dict) else {}
    constrained = identity.get("constrained") or []
    family = next((t for t in card.data.tags or [] if t in FAMILIES), "")
    grouped: dict[tuple[str, str], dict[str, float]] = {}
    scored_on: dict[tuple[str, str], str | None] = {}  # the card's dataset_name (`model_card`)
    unusable = 0
    for result in results:
        if dataset and result.dataset_type != dataset and result.dataset_name != about.PRETTY_NAME:
            continue  # another dataset's results
        task = next((t for t in (result.dataset_config, identity.get("task")) if t in TASKS),
                    next((t for t in TASK_NAMES if t.upper() in str(result.task_name).split()),
                         None))
        keys = {m.key for m in get_task(task).metrics} if task else set()
        key = next((k for k in (result.metric_config, result.metric_type) if k in keys), None)
        value = result.metric_value
        if key is None or isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value):
            unusable += 1
            continue
        grouped.setdefault((task, result.dataset_split or "test"), {})[key] = float(value)
        scored_on.setdefault((task, result.dataset_split or "test"), result.dataset_name)
    if not grouped:
        return [], (f"malformed model-index: none of its {unusable} entries is a MediTOD task "
                    "metric with a number" if unusable else
                    f"its model-index has no results on {dataset}")
    note = f"model {identity['model']}" if identity.get("model") else ""
    if unusable:
        note = f"{note}; {unusable} model-index entries unreadable".lstrip("; ")
    rows = [Row(task, split, repo, "hub", "supervised",
                constrained is True or (isinstance(constrained, list) and split in constrained),
                family, {m.key: scores[m.key] for m in get_task(task).metrics if m.key in scores},
                link, note, scored_on[task, split] or about.PRETTY_NAME,
                scored_on[task, split] in (None, about.PRETTY_NAME))
            for (task, split), scores in grouped.items()]
    return rows, None


def _read_failure(exc: Exception) -> str:
    """Why a model's card could not be read, in a few words (never the token)."""
    import httpx2
    from huggingface_hub.errors import (
        EntryNotFoundError,
        GatedRepoError,
        HfHubHTTPError,
        RepositoryNotFoundError,
    )

    if isinstance(exc, GatedRepoError):
        return "gated: this token has no access to its card"
    if isinstance(exc, RepositoryNotFoundError):
        return "not visible to this token (private, or deleted)"
    if isinstance(exc, EntryNotFoundError):
        return "no model card (README.md)"
    if isinstance(exc, HfHubHTTPError):
        status = exc.response.status_code if exc.response is not None else "no"
        return f"its card did not download (HTTP {status})"
    if isinstance(exc, httpx2.TimeoutException):
        return "its card did not download in time"
    if isinstance(exc, httpx2.TransportError):
        return f"its card did not download ({type(exc).__name__})"
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if "model_index" in text or "model-index" in text or "eval_results" in text:
        # huggingface_hub's message, less its advice to ignore the error
        text = re.sub(r"<class '(?:\w+\.)*(\w+)'>", r"\1", text.split(". Pass `")[0])
        return f"malformed model-index ({text.split('cannot be parsed: ')[-1][:160]})"
    return f"unreadable card metadata ({text[:160]})"


def hub_rows(dataset: str | None, models: Iterable[str] = (), timeout: float = 120.0
             ) -> tuple[list[Row], list[Unread]]:
    """Rows of every Hub model whose card declares `dataset` (and of `models`), read from their
    model-index; models without usable rows are `Unread`. `timeout` bounds each request and the
    whole read, retries included (`hubclient.deadline`); the listing failing is an error
    (`HubError`), one model failing is that model's `Unread` reason."""
    # deferred: the Hub's client libraries load only when the Hub is read, not for local tables
    import httpx2
    import yaml
    from huggingface_hub import HfApi, ModelCard, constants
    from huggingface_hub.errors import EntryNotFoundError, HfHubHTTPError

    from meditod_hub.hubclient import check_timeout, deadline, http_timeout, translate_errors

    timeout = check_timeout(timeout)
    action = f"list the Hub models trained on {dataset}" if dataset else "read the Hub models"

    def work() -> tuple[list[Row], list[Unread]]:
        api = HfApi()
        rows, unread = [], []
        with http_timeout(timeout):
            found: list[str] = []
            if dataset:
                with translate_errors(action):
                    found = [m.id for m in api.list_models(trained_dataset=dataset)]
            for repo in dict.fromkeys([*found, *models]):
                link = f"{constants.ENDPOINT}/{repo}"
                try:
                    card = ModelCard.load(api.hf_hub_download(repo, "README.md",
                                                              etag_timeout=timeout))
                    these, reason = _card_rows(repo, card, dataset, link)
                except (HfHubHTTPError, EntryNotFoundError, httpx2.TransportError, ValueError,
                        TypeError, KeyError, yaml.YAMLError, OSError) as exc:
                    these, reason = [], _read_failure(exc)
                rows += these
                if reason:
                    unread.append(Unread(repo, reason, link))
        return rows, unread

    return deadline(timeout, action, work)


def build_report(runs: Iterable[str | Path] = (), dataset: str | None = None,
                 models: Iterable[str] = (), timeout: float = 120.0) -> Report:
    local, skipped = local_rows(runs)
    rows, unread = hub_rows(dataset, models, timeout) if dataset or models else ([], [])
    return Report(paper_rows() + local + rows, unread, skipped, dataset)


# --- writing -----------------------------------------------------------------------------------
def markdown(report: Report) -> str:
    lines = ["# MediTOD results", "",
             f"The paper's rows ({paper_results.SOURCE}) beside evaluated runs"
             + (f" and the Hub's models trained on `{report.dataset}`" if report.dataset else "")
             + f"; {report.generated}. Paper rows score non-medical values with a ChatGPT judge."]
    for task, split, rows in report.tables():
        metrics = table_metrics(task, rows)
        lines += ["", f"## {heading(task, split, rows)}", "",
                  "| system | dataset | setting | source | constrained | family | "
                  + " | ".join(m.name for m in metrics) + " | note |",
                  "|---" * (7 + len(metrics)) + "|"]
        for row in rows:
            name = f"[{row.system}]({row.link})" if row.source == "hub" else row.system
            lines.append(f"| {name} | {row.dataset} | {row.setting} | {row.source} | "
                         f"{'yes' if row.constrained else 'no'} | {row.family or '—'} | "
                         + " | ".join(cell(row.value(m.key), m) for m in metrics)
                         + f" | {row.note} |")
    if report.unread:
        lines += ["", "## Hub models without a row", ""]
        lines += [f"- [{u.repo}]({u.link}): {u.reason}" for u in report.unread]
    return "\n".join(lines) + "\n"


def heading(task: str, split: str, rows: list[Row]) -> str:
    """A table's title: the paper's split names for MediTOD; other data says what it is."""
    if all(r.comparable for r in rows):
        return f"{task.upper()}, {SPLIT_LABELS.get(split, split)}"
    return (f"{task.upper()}, {split} split of {rows[0].dataset}: not MediTOD, not comparable "
            "with the paper's rows")


CSV_FIELDS = ("task", "split", "system", "dataset", "setting", "source", "constrained", "family",
              "link", "note")


def csv_text(report: Report) -> str:
    keys = list(dict.fromkeys(m.key for t in TASK_NAMES for m in get_task(t).metrics))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([*CSV_FIELDS, *keys])
    for row in report.rows:
        writer.writerow([row.task, row.split, row.system, row.dataset, row.setting, row.source,
                         "yes" if row.constrained else "no", row.family, row.link, row.note,
                         *("" if row.value(k) is None else repr(row.value(k)) for k in keys)])
    for u in report.unread:
        writer.writerow(["", "", u.repo, "", "", "hub", "", "", u.link, u.reason,
                         *[""] * len(keys)])
    return buffer.getvalue()


_SOURCE_COLOURS = {"paper": (150, 150, 150), "local": (31, 119, 180), "hub": (255, 127, 14)}
_SHADE = (236, 236, 236)


def chart_png(task: str, rows: list[Row]) -> bytes:
    """Horizontal bars: the task's headline metric per system, test then test_ood; the paper's
    rows on a shaded band (Pillow, as `metrics.report`: no matplotlib import)."""
    from PIL import Image, ImageDraw, ImageFont

    metric = get_task(task).headline_metric
    shown = [r for split in EVAL_SPLITS for r in rows if r.split == split and r.value(metric.key)
             is not None]
    labels = [f"{r.system} ({r.setting}{', constrained' if r.constrained else ''}"
              f"{', OOD' if r.split == 'test_ood' else ''})"
              + ("" if r.comparable else f" on {r.dataset}") for r in shown]
    top_value = max([r.value(metric.key) for r in shown] + [1e-9])
    axis_max = 1.0 if top_value <= 1 else math.ceil(top_value / 10) * 10
    font = ImageFont.load_default(size=13)
    measure = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    label_width = max([measure.textlength(t, font=font) for t in labels] + [40]) + 14
    bar, plot, margin, head = 16, 420, 14, 44
    width, height = int(label_width + plot + 90), head + bar * len(shown) + 2 * margin + 28
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    draw.text((width / 2, margin), f"MediTOD {task.upper()}: {metric.name} by system",
              fill="black", font=font, anchor="mt")
    x0, bottom = label_width, head + bar * len(shown)
    for n, row in enumerate(shown):  # bands, then the grid, then bars and labels on top
        if row.source == "paper":
            draw.rectangle([0, head + n * bar, width, head + (n + 1) * bar - 1], fill=_SHADE)
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        x = x0 + tick * plot
        draw.line([(x, head), (x, bottom)], fill=(210, 210, 210))
        draw.text((x, bottom + 4), f"{tick * axis_max:g}", fill="black", font=font, anchor="mt")
    for n, (row, label) in enumerate(zip(shown, labels)):
        y = head + n * bar
        draw.text((x0 - 6, y + bar / 2), label, fill="black", font=font, anchor="rm")
        length = min(max(row.value(metric.key) / axis_max, 0.0), 1.0) * plot
        draw.rectangle([x0, y + 3, x0 + length, y + bar - 3], fill=_SOURCE_COLOURS[row.source])
        draw.text((x0 + length + 4, y + bar / 2), format(row.value(metric.key), metric.fmt),
                  fill="black", font=font, anchor="lm")
    legend = "grey band: the paper's rows · blue: local runs · orange: Hub models"
    draw.text((width / 2, bottom + 22), legend, fill="black", font=font, anchor="mt")
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()


def write_report(report: Report, out: Path, input_folders: Iterable = ()) -> list[Path]:
    """results.md, .csv, .json and one chart per task in `out`; every path checked first (never
    inside the folders the runs were read from, never over a file another command wrote)."""
    targets = {name: output_path(out / name, purpose="results", input_folders=input_folders,
                                 what="results output")
               for name in ("results.md", "results.csv", "results.json",
                            *(f"{task}.png" for task in TASK_NAMES))}
    texts = {"results.md": markdown(report), "results.csv": csv_text(report),
             "results.json": json.dumps(report.as_json(), indent=2) + "\n",
             **{f"{task}.png": chart_png(task, [r for r in report.rows if r.task == task])
                for task in TASK_NAMES}}
    return [atomic_write(targets[name], data, purpose="results") for name, data in texts.items()]


# --- the command -------------------------------------------------------------------------------
@dataclass
class ResultsArguments:
    runs: list[str] = field(default_factory=list, metadata={
        "help": "folders to search for evaluated runs (results.json files), or such files"})
    hub_dataset: str | None = field(default=None, metadata={
        "help": "ORG/NAME: add every Hub model whose card declares this dataset"})
    hub_models: list[str] = field(default_factory=list, metadata={
        "help": "Hub model ids to read besides those listed for --hub_dataset"})
    out: Path = field(default=Path("out/results"), metadata={"help": "output folder"})
    timeout: float = field(default=120.0, metadata={"above": 0,
        "help": "seconds for the whole Hub read, retries included (also the limit of each request)"})


def main(argv: list[str]) -> int:
    (args,) = parse_args((ResultsArguments,), argv, "meditod results", __doc__.split("\n\n")[0])
    report = build_report(args.runs, args.hub_dataset, args.hub_models, args.timeout)
    written = write_report(report, args.out, input_folders=[r for r in args.runs if Path(r).is_dir()])
    for problem in report.skipped:
        print(f"skipped: {problem}", file=sys.stderr)
    print(markdown(report))
    local = sum(r.source == "local" for r in report.rows)
    hub = sum(r.source == "hub" for r in report.rows)
    print(f"{local} local and {hub} Hub rows beside the paper's "
          f"{sum(r.source == 'paper' for r in report.rows)}; {len(report.unread)} Hub models "
          f"without a row; wrote {', '.join(str(p) for p in written)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
