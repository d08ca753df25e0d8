"""Model suggestions: the one adapter between the annotation app and `meditod_hub.predict`.

An NLU model suggests a patient utterance's `nlu` items, a POL model a doctor utterance's
`actions`. Each utterance becomes exactly the row the dataset builds for it (`views.view_rows` on
the dialogue as currently labelled, states refolded), so a suggestion is what `make predict` would
predict for that row. Models are a run folder or a Hub id (with `family`); `Predictor` is the seam
for a served endpoint. Every call into `predict` is in `LocalModel`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Protocol

from ..errors import MeditodError
from ..records import Prediction
from ..views import view_rows

TASK_OF = {"patient": "nlu", "doctor": "pol"}
CACHE_SIZE = 512


@dataclass(frozen=True)
class Suggestion:
    label: list | None   # the parsed prediction; None when the output did not parse
    parse_ok: bool
    reason: str | None   # why there is no usable suggestion (never dialogue text)
    model: str


class Predictor(Protocol):
    """Predicts dataset rows of one task (`nlu` or `pol`): `records.Prediction`s, as
    `predict.predict_rows` gives them."""

    name: str

    def predict(self, rows: list[dict]) -> list[Prediction]: ...


class LocalModel:
    """A run folder or Hub model loaded in process, with the budgets `make predict` would use."""

    def __init__(self, path: str, task: str, family: str | None = None):
        from .. import predict
        from ..families import FAMILY_NAMES, get_family
        from ..runs import run_settings, run_tasks

        info, recipe = run_settings(path)
        if family is None and "family" not in info:
            raise MeditodError(f"{path} has no run_info.json: pass the model family "
                               f"(--{task}_family, one of {', '.join(FAMILY_NAMES)})")
        if "task" in info and task not in run_tasks(info):  # multi-task runs answer all three
            raise MeditodError(f"{path} was trained for {info['task']}, not {task}: give a "
                               f"{task} model")
        self.family = get_family(family or info["family"])
        self.budget = self.family.budget(recipe)
        self.name, self.task = str(path), task
        self.model, self.tokenizer = predict.load_model(
            str(path), self.family, info.get("quantization") is not None)
        self._predict_rows = predict.predict_rows
        self._lock = threading.Lock()  # one generate at a time per model
        self._torch_threads, self._threads = predict.torch_threads, predict.torch_threads()

    def predict(self, rows: list[dict]) -> list[Prediction]:
        with self._lock:
            self._torch_threads(self._threads)  # the server's threads start with their own
            return self._predict_rows(self.model, self.tokenizer, self.family, self.task, rows,
                                      self.budget)


class Assistant:
    """Suggestions for one utterance from the NLU and POL predictors (either may be absent)."""

    def __init__(self, nlu: Predictor | None = None, pol: Predictor | None = None):
        self.predictors = {"nlu": nlu, "pol": pol}
        self._cache: OrderedDict[tuple, Suggestion] = OrderedDict()

    def describe(self) -> dict:
        return {task: p.name for task, p in self.predictors.items() if p is not None}

    def suggest(self, dialogue_id: str, dialogue: dict, uttr_id: int) -> Suggestion | None:
        """The suggestion for utterance `uttr_id` of `dialogue` (labelled as it is now, states
        refolded); None when its task has no model."""
        speaker = dialogue["utterances"][uttr_id]["speaker"]
        task = TASK_OF[speaker]
        predictor = self.predictors[task]
        if predictor is None:
            return None
        row_id = f"{dialogue_id}-{uttr_id}"
        row = next((r for r in view_rows(task, dialogue_id, dialogue) if r["id"] == row_id), None)
        if row is None:
            return Suggestion(None, False, "no model input for this utterance (the opening "
                                           "doctor line has no patient line before it)",
                              predictor.name)
        key = (predictor.name, repr(sorted((k, repr(v)) for k, v in row.items())))
        if key not in self._cache:
            record = predictor.predict([row])[0]
            self._cache[key] = Suggestion(record.label, record.parse_ok, record.reason,
                                          predictor.name)
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return self._cache[key]
