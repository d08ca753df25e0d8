"""Model suggestions: the one adapter between the annotation app and `meditod_hub.models.predictor`.

An NLU model suggests a patient utterance's `nlu` items, a POL model a doctor utterance's
`actions` (`tasks.LABELLING_TASKS`). Each utterance becomes exactly the row the dataset builds for
it (`tasks.view_rows` on the dialogue as currently labelled, states refolded), so a suggestion is
what `meditod predict` predicts for that row with the same `predictor.Predictor`: a run folder,
a Hub id at a revision or a served endpoint (`load_predictor`, `serve.py`).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from meditod_hub.data.tasks import LABELLING_TASKS, view_rows
from meditod_hub.models.predictor import Predictor

CACHE_SIZE = 512


@dataclass(frozen=True)
class Suggestion:
    label: list | None   # the parsed prediction; None when the output did not parse
    parse_ok: bool
    reason: str | None   # why there is no usable suggestion (never dialogue text)
    model: str


class LabelSuggester:
    """Suggestions for one utterance from the NLU and POL predictors (either may be absent)."""

    def __init__(self, nlu: Predictor | None = None, pol: Predictor | None = None):
        self.predictors = {LABELLING_TASKS["patient"].name: nlu, LABELLING_TASKS["doctor"].name: pol}
        self._cache: OrderedDict[tuple, Suggestion] = OrderedDict()

    def describe(self) -> dict:
        return {task: p.name for task, p in self.predictors.items() if p is not None}

    def suggest(self, dialogue_id: str, dialogue: dict, uttr_id: int) -> Suggestion | None:
        """The suggestion for utterance `uttr_id` of `dialogue` (labelled as it is now, states
        refolded); None when its task has no model."""
        task = LABELLING_TASKS[dialogue["utterances"][uttr_id]["speaker"]].name
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
