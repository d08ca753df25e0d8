"""MediTOD POL F1 and Precision@K as a local `evaluate` module (the core is `meditod_hub.metrics`).

    import evaluate
    pol = evaluate.load("metrics/meditod_pol")   # offline: a local folder
    pol.compute(predictions=..., references=..., dialogue_ids=[...])

Predictions and references are action lists (None: a prediction that did not parse), in turn
order; `dialogue_ids` groups turns for Precision@K (default: all one dialogue).
"""

import datasets
import evaluate

from meditod_hub.about import CITATION
from meditod_hub.metrics import PAPER_KS, make_judge, pol_f1, pol_precision_at_k

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
        results = pol_f1(references, predictions, judge).as_dict()
        dialogue_ids = dialogue_ids or ["dialogue"] * len(references)
        results["precision_at_k"] = pol_precision_at_k(references, predictions, dialogue_ids,
                                                       PAPER_KS, pak_mode)
        results["precision_at_k_mode"] = pak_mode
        return results
