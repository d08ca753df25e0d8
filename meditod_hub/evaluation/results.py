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

This module gathers a report's rows: the paper's and the Hub's (`results_table`, `results_hub`)
and those of the run folders and harness files under `--runs`; `results_render` writes it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from meditod_hub.data import paper_results, proof
from meditod_hub.data.base_models import BASE_MODELS
from meditod_hub.data.tasks import CASCADED_TASK_NAMES, TASK_NAMES, get_task
from meditod_hub.errors import MeditodError, UsageError
from meditod_hub.evaluation.harness.read import RESULTS_PREFIX, harness_scores, is_lm_eval
from meditod_hub.evaluation.results_hub import hub_rows
from meditod_hub.evaluation.results_table import Report, Row, paper_rows
from meditod_hub.files import read_json
from meditod_hub.models.records import Results, is_results_name, value_at
from meditod_hub.models.runs import FEWSHOT_INFO, RUN_INFO, family_label


def _scores(task: str, scores: dict) -> dict[str, float]:
    return {m.key: v for m in get_task(task).metrics if (v := value_at(scores, m.key)) is not None}


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
    scored_on = proof.of_record(data)
    return [Row(task, str(data.get("split", "")), str(models.get(task, {}).get("label", "?")),
                "local", "cascaded", _constrained(data, data[task]["cascaded"]), "",
                _scores(task, data[task]["cascaded"]), str(path), f"cascade: {chain}",
                scored_on.short(), scored_on.comparable)
            for task in CASCADED_TASK_NAMES if isinstance(data.get(task), dict)
            and isinstance(data[task].get("cascaded"), dict)]


def _results_row(path: Path, results: Results) -> Row:
    """A `meditod evaluate` results file, placed by what sits around it, with what it was
    scored on, proven again from its data (`proof.of_record`): the results' record, else its
    run's (or its few-shot output's data)."""
    row, info = _bare_row(path, results)
    found = proof.of_record(results.record if results.provenance else info)
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
                   family_label(info), _scores(results.task, results.scores), str(path),
                   f"run {path.parent.parent.parent}"), info
    if beside.is_file() and "shots" in (info := _json(beside)):  # a `meditod fewshot` output
        model = BASE_MODELS.get(str(info.get("paper_row")).removeprefix(paper_results.IN_CONTEXT))
        family = model.family if model else ""
        return Row(results.task, results.split, str(info.get("model", path.parent.name)), "local",
                   "in-context", _constrained(results.scores, info), family,
                   _scores(results.task, results.scores), str(path),
                   f"{info['shots']} retrieved exemplars"), {"dataset": info.get("data")}
    return Row(results.task, results.split, path.parent.name or path.stem, "local", "unknown",
               _constrained(results.scores), "", _scores(results.task, results.scores), str(path),
               "results file outside a run folder"), {}


def _harness_rows(path: Path, data: dict) -> list[Row]:
    """The MediTOD tasks of an lm-evaluation-harness results file, as the kit's rows."""
    rows = []
    for found in harness_scores(data):
        scored_on = proof.of_record(found.record)
        rows.append(Row(found.task, found.split, found.system, "local", found.setting, False, "",
                        _scores(found.task, found.scores), str(path), found.note,
                        scored_on.short(), scored_on.comparable))
    return rows


def local_rows(folders: Iterable[str | Path]) -> tuple[list[Row], list[str]]:
    """Every evaluated run under `folders` (or the results.json files named), and the results
    files found there that could not be read (with why)."""
    rows, skipped, seen = [], [], set()
    for folder in map(Path, folders):
        if not folder.exists():
            raise UsageError(f"--runs {folder}: no such folder")
        found = [folder] if folder.is_file() else sorted(
            p for p in folder.rglob("*.json") if is_results_name(p.name)
            or p.name.startswith(RESULTS_PREFIX))
        if not found:  # said, never a silent empty table
            skipped.append(f"--runs {folder}: no results file under it (`meditod evaluate` "
                           "writes one into a run's eval folder)")
        for path in found:
            if path.resolve() in seen:  # folders given twice, or one inside another
                continue
            seen.add(path.resolve())
            data = _json(path)
            if is_lm_eval(data):  # an lm-evaluation-harness results file (`meditod harness`)
                rows += _harness_rows(path, data)
                continue
            if isinstance(data.get("models"), dict) and isinstance(data.get(CASCADED_TASK_NAMES[0]), dict) \
                    and "cascaded" in data[CASCADED_TASK_NAMES[0]]:
                rows += _cascade_rows(path, data)
                continue
            try:
                rows.append(_results_row(path, Results.read(path)))
            except MeditodError as exc:  # the results file, or its run's run_info.json
                skipped.append(str(exc))
    return rows, skipped


def build_report(runs: Iterable[str | Path] = (), dataset: str | None = None,
                 models: Iterable[str] = (), timeout: float = 120.0) -> Report:
    """The paper's rows, then the local ones under `runs`, then the Hub's (with `dataset` or
    `models`)."""
    local, skipped = local_rows(runs)
    rows, unread = hub_rows(dataset, models, timeout) if dataset or models else ([], [])
    return Report(paper_rows() + local + rows, unread, skipped, dataset)


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
