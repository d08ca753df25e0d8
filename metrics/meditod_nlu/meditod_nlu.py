"""MediTOD NLU F1 as a local `evaluate` module (the score is `meditod_hub.data.tasks`' NLU `score`).

    import evaluate
    nlu = evaluate.load("metrics/meditod_nlu")   # offline: a local folder
    nlu.compute(predictions=[[{"intent": "chit-chat"}]], references=[[{"intent": "chit-chat"}]])
    nlu.compute(..., judge="embedding", judge_options={"threshold": 0.8})

Predictions and references are NLU item lists (None: a prediction that did not parse).
"""

import datasets
import evaluate

from meditod_hub.data.about import CITATION
from meditod_hub.data.metrics import make_judge
from meditod_hub.data.tasks import get_task

_DESCRIPTION = ("MediTOD NLU precision, recall and F1 (medical, non-medical, overall) and joint "
                "accuracy, by the authors' tuple unrolling; non-medical values go through a judge.")
_INPUTS = """predictions: list of NLU item lists (or None); references: list of NLU item lists;
judge: "exact" (default), "llm", "embedding" or a judge object; judge_options: dict for make_judge."""


class MeditodNlu(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION, citation=CITATION, inputs_description=_INPUTS,
            features=datasets.Features({"predictions": datasets.Json(), "references": datasets.Json()}))

    def _compute(self, predictions, references, judge="exact", judge_options=None):
        if isinstance(judge, str):
            judge = make_judge(judge, **(judge_options or {}))
        task = get_task("nlu")
        rows = [{"id": str(i), task.target_column: ref} for i, ref in enumerate(references)]
        return task.score(rows, predictions, judge=judge)
