"""The two files that cross stage boundaries, each with one writer and one reader.

Predictions (inference -> evaluation): JSON lines `{"id": "<dialogue_id>-<uttr_id>",
"prediction": ..., "raw": ..., "parse_ok": true|false, "constrained": true|false}`. `prediction`
is already parsed (NLU items, actions, or the doctor's text); `parse_ok` false means the model's
`raw` text did not parse, and the example is scored as empty and counted as a parse failure.
Predictions are
matched to gold by id, not position (upstream aligned positionally): a missing, duplicate or
unknown id is an error naming the ids. `constrained` says whether the output was decoded under the
CMAS grammar (`meditod_hub.models.constrained`; absent in older files: it was not); one file holds one
setting, and its results record it.

Results (evaluation -> cards, publishing, reports): `results.json` `{"task", "split", ...scores}`
and, beside it and named after its stem, a Markdown table (`.md`) and a chart (`.png`), written by
`meditod_hub.evaluation.report.write_results`.

Here, on the models floor (`meditod_hub.layers`): the Predictor and the run folders that produce
and hold these files sit on it, and evaluation above reads them.
`meditod eval-cascade` writes a `results.json` of another shape (the three tasks, gold and
cascaded inputs side by side, the models used): `meditod_hub.evaluation.eval_cascade` owns it.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from meditod_hub.data.tasks import TASKS, Task, get_task
from meditod_hub.errors import MeditodError, name_ids
from meditod_hub.files import atomic_write


class PredictionsError(MeditodError, ValueError):
    """The predictions file cannot be scored; the message says where and which ids."""


class ResultsError(MeditodError, ValueError):
    """A results file that cannot be read; the message names it."""


@dataclass(frozen=True)
class Prediction:
    id: str
    prediction: Any
    parse_ok: bool = True
    raw: str | None = None
    reason: str | None = None  # why it did not parse (kept in memory, not written)
    constrained: bool = False  # decoded under the CMAS grammar

    @property
    def label(self) -> Any:
        """The parsed prediction, or None when it did not parse."""
        return self.prediction if self.parse_ok else None

    def as_json(self) -> dict:
        return {"id": self.id, "prediction": self.prediction, "raw": self.raw,
                "parse_ok": self.parse_ok, "constrained": self.constrained}


def write_predictions(records: Iterable[Prediction], path: str | Path, *, purpose: str) -> Path:
    """The predictions file, recorded as `purpose`'s output (the command writing it)."""
    lines = "".join(json.dumps(r.as_json()) + "\n" for r in records)
    return atomic_write(path, lines, purpose=purpose)


def _lines(path: Path) -> Iterable[tuple[int, str]]:
    if path.is_dir():
        raise PredictionsError(f"{path} is a folder: give the predictions .jsonl file")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PredictionsError(f"{path}: no such predictions file (run `meditod predict` first)"
                               ) from None
    except UnicodeDecodeError as exc:
        raise PredictionsError(f"{path}: not UTF-8 text (byte {exc.start}): write predictions as "
                               "UTF-8 JSON lines") from None
    return enumerate(text.splitlines(), 1)


def read_predictions(path: str | Path, task: Task | None = None) -> dict[str, Prediction]:
    """The predictions of a file by id; with `task`, each parsed one must have its labels'
    shape (`Task.label_problem`)."""
    path = Path(path)
    out: dict[str, Prediction] = {}
    counts: Counter[str] = Counter()
    for number, line in _lines(path):
        if not line.strip():
            continue
        where = f"{path}, line {number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise PredictionsError(f"{where}: invalid JSON ({exc.msg})") from None
        except RecursionError:
            raise PredictionsError(f"{where}: JSON nested too deeply to read") from None
        if not isinstance(record, dict) or not isinstance(record.get("id"), str) \
                or "prediction" not in record:
            raise PredictionsError(f"{where}: expected an object with a string `id` and a "
                                   "`prediction`")
        parse_ok = record.get("parse_ok", True)
        if not isinstance(parse_ok, bool):
            raise PredictionsError(f"{where}: `parse_ok` must be true or false, got "
                                   f"{type(parse_ok).__name__}")
        constrained = record.get("constrained", False)
        if not isinstance(constrained, bool):
            raise PredictionsError(f"{where}: `constrained` must be true or false, got "
                                   f"{type(constrained).__name__}")
        problem = task.label_problem(record["prediction"]) if task and parse_ok else None
        if problem:
            raise PredictionsError(
                f"{where} ({record['id']}): the {task.name} prediction is not "
                f"{task.label_shape} ({problem}): write labels as `meditod predict` does, or set "
                "parse_ok to false")
        raw = record.get("raw")
        counts[record["id"]] += 1
        out[record["id"]] = Prediction(record["id"], record["prediction"], parse_ok,
                                       raw if isinstance(raw, str) else None,
                                       constrained=constrained)
    duplicates = sorted(i for i, n in counts.items() if n > 1)
    if duplicates:
        raise PredictionsError(f"{path}: duplicate ids: {name_ids(duplicates)}")
    return out


def align(gold_ids: Sequence[str], predictions: dict[str, Prediction],
          source: str | Path = "predictions") -> list[Prediction]:
    """The predictions in gold order; every gold id must have exactly one, and no other."""
    known = set(gold_ids)
    missing = [i for i in gold_ids if i not in predictions]
    unknown = sorted(i for i in predictions if i not in known)
    problems = []
    if missing:
        problems.append(f"{len(missing)} gold id(s) without a prediction: {name_ids(missing)}")
    if unknown:
        problems.append(f"{len(unknown)} id(s) not in the gold split: {name_ids(unknown)}")
    if problems:
        raise PredictionsError(f"{source}: " + "; ".join(problems))
    return [predictions[i] for i in gold_ids]


def decoding_constrained(predictions: Sequence[Prediction],
                         source: str | Path = "predictions") -> bool:
    """The one decoding setting of a predictions file (results report it beside the scores)."""
    settings = {p.constrained for p in predictions}
    if len(settings) > 1:
        constrained = sorted(p.id for p in predictions if p.constrained)
        raise PredictionsError(f"{source}: mixes constrained ({name_ids(constrained)}) and "
                               "unconstrained predictions: predict the split in one setting")
    return settings == {True}


def value_at(scores: dict, key: str) -> float | None:
    """The number at a dotted key path (`medical.f1`, `precision_at_k.4`); None if absent."""
    value: Any = scores
    for part in key.split("."):
        if not isinstance(value, dict) or value.get(part) is None:
            return None
        value = value[part]
    return float(value) if isinstance(value, (int, float)) else None


def _non_finite(value: Any, key: str = "") -> tuple[str, float] | None:
    """The first (dotted key, value) of `value` that is NaN or infinite, if any."""
    if isinstance(value, float) and not math.isfinite(value):
        return key, value
    items = value.items() if isinstance(value, dict) else enumerate(value) \
        if isinstance(value, list) else ()
    for name, inner in items:
        if (found := _non_finite(inner, f"{key}.{name}" if key else str(name))) is not None:
            return found
    return None


PREDICTIONS = "predictions.jsonl"  # a run's predictions in eval/<split>/; a setting adds a suffix


def predictions_name(constrained: bool = False) -> str:
    return "predictions-constrained.jsonl" if constrained else PREDICTIONS


def results_name(predictions: str | Path) -> str:
    """The results file of a predictions file, named after it so that no setting overwrites
    another: predictions.jsonl -> results.json, predictions-constrained.jsonl ->
    results-constrained.json, other.jsonl -> other-results.json."""
    stem = Path(predictions).name.removesuffix(".jsonl").removesuffix(".json")
    return f"results{stem.removeprefix('predictions')}.json" if stem.startswith("predictions") \
        else f"{stem}-results.json"


def is_results_name(name: str) -> bool:
    """Whether a file name is one `results_name` gives."""
    return name == "results.json" or (name.endswith(".json") and (
        name.startswith("results-") or name.endswith("-results.json")))


def file_in(out: str | Path, name: str, suffix: str) -> Path:
    """`--out` of predict and evaluate, as Make's OUT: a folder (the file inside is `name`);
    a path ending in `suffix` (or any .json/.jsonl name) names the file itself, which the output
    guard then checks."""
    out = Path(out)
    return out if out.suffix in (suffix, ".json", ".jsonl") and not out.is_dir() else out / name


def side_files(path: str | Path) -> tuple[Path, Path]:
    """The Markdown table and chart that go beside a results JSON, named after its stem."""
    path = Path(path)
    return path.with_suffix(".md"), path.with_suffix(".png")


@dataclass
class Results:
    task: str
    split: str
    scores: dict
    provenance: dict | None = None  # what the data scored on is (`data.provenance`), if known
    dataset: str | None = None           # the folder (or Hub id) scored on, and its fingerprint:
    data_fingerprint: str | None = None  # `proof.of_record` proves the provenance again from them
    scored_task: Task = field(init=False, repr=False, compare=False)  # `task`, resolved once here

    def __post_init__(self):
        self.scored_task = get_task(self.task)

    def as_json(self) -> dict:
        return {"task": self.task, "split": self.split, **self.record, **self.scores}

    @property
    def record(self) -> dict:
        """What it records of the data it scored (`proof.record`'s keys, those it has)."""
        return {key: value for key, value in (("dataset", self.dataset),
                ("data_fingerprint", self.data_fingerprint), ("provenance", self.provenance))
                if value}

    def value(self, key: str) -> float | None:
        return value_at(self.scores, key)

    @property
    def headline(self) -> float | None:
        return self.value(self.scored_task.headline)

    @classmethod
    def read(cls, path: str | Path) -> Results:
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            raise ResultsError(f"{path}: cannot read results ({type(exc).__name__}); rerun "
                               "`meditod evaluate`") from None
        if not isinstance(data, dict) or data.get("task") not in TASKS:
            raise ResultsError(f"{path}: not a MediTOD results file (no task)")
        results = cls(data.pop("task"), str(data.pop("split", "")), data,
                      data.pop("provenance", None), *(
                          value if isinstance(value := data.pop(key, None), str) else None
                          for key in ("dataset", "data_fingerprint")))
        if (bad := _non_finite(data)) is not None:  # Python's json writes and reads NaN
            raise ResultsError(f"{path}: {bad[0]!r} is {bad[1]}, not a score: rerun "
                               "`meditod evaluate` to write this file again")
        if results.headline is None:
            raise ResultsError(f"{path}: no {results.scored_task.headline!r}: not "
                               f"{results.task} results")
        return results
