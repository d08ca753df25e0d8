"""The predictions file, the contract between inference and evaluation.

JSON lines, one per example: `{"id": "<dialogue_id>-<uttr_id>", "prediction": ...}` where the
prediction is already parsed (an NLU item list, an action list, or the doctor's text), with
optional `raw` (the model's text) and `parse_ok` (false: the raw text did not parse; the example
is then scored as empty and counted as a parse failure).

Predictions are matched to gold by id, not by position as upstream did: a missing, duplicate or
unknown id is an error that names the ids.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import MeditodError, name_ids

class PredictionsError(MeditodError, ValueError):
    """The predictions file cannot be scored; the message says where and which ids."""


@dataclass(frozen=True)
class Prediction:
    id: str
    prediction: Any
    parse_ok: bool = True
    raw: str | None = None

    @property
    def label(self) -> Any:
        """The parsed prediction, or None when it did not parse."""
        return self.prediction if self.parse_ok else None


def read_predictions(path: str | Path) -> dict[str, Prediction]:
    path = Path(path)
    out: dict[str, Prediction] = {}
    counts: Counter[str] = Counter()
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise PredictionsError(f"{path}, line {number}: invalid JSON ({exc.msg})") from exc
            if not isinstance(record, dict) or not isinstance(record.get("id"), str) \
                    or "prediction" not in record:
                raise PredictionsError(f"{path}, line {number}: expected an object with a string "
                                       "`id` and a `prediction`")
            counts[record["id"]] += 1
            out[record["id"]] = Prediction(record["id"], record["prediction"],
                                           record.get("parse_ok", True) is not False,
                                           record.get("raw"))
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
