"""MediTOD POL F1 and Precision@K as a local `evaluate` module (the score is `meditod_hub.data.tasks`'
POL `score`).

    import evaluate
    pol = evaluate.load("metrics/meditod_pol")   # offline: a local folder
    pol.compute(predictions=..., references=..., dialogue_ids=[...])

Predictions and references are action lists (None: a prediction that did not parse), in turn
order; `dialogue_ids` groups turns for Precision@K (default: all one dialogue).
"""

import datasets
import evaluate

from meditod_hub.data.about import CITATION
from meditod_hub.data.metrics import make_judge
from meditod_hub.data.tasks import get_task

_DESCRIPTION = ("MediTOD POL precision, recall and F1 (medical, non-medical, overall), joint "
                "accuracy and Precision@K, by the authors' tuple unrolling.")
_INPUTS = """predictions: list of action lists (or None); references: list of action lists;
dialogue_ids: list of dialogue ids, one per turn; pak_mode: "exact" (default), "exact_medical"
or "medical_present"; judge / judge_options: as meditod_nlu."""


class MeditodPol(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION, citation=CITATION, inputs_description=_INPUTS,
            features=datasets.Features({"predictions": datasets.Json(), "references": datasets.Json()}))

    def _compute(self, predictions, references, dialogue_ids=None, pak_mode="exact",
                 judge="exact", judge_options=None):
        if isinstance(judge, str):
            judge = make_judge(judge, **(judge_options or {}))
        task = get_task("pol")
        dialogue_ids = dialogue_ids or ["dialogue"] * len(references)
        rows = [{"id": str(i), "dialogue_id": did, task.target_column: ref}
                for i, (ref, did) in enumerate(zip(references, dialogue_ids))]
        return task.score(rows, predictions, judge=judge, pak_mode=pak_mode)
