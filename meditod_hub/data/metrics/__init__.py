"""MediTOD metrics: NLU/POL F1 with a pluggable non-medical judge, POL Precision@K, NLG scores.

Plain functions over labels; `meditod_hub.data.tasks.Task.score` is the one caller that `meditod
evaluate`, training-time validation and the local `evaluate` modules (`metrics/meditod_{nlu,pol}`)
go through.
"""

from meditod_hub.data.metrics.f1 import Counts, F1Scores, nlu_f1, pol_f1
from meditod_hub.data.metrics.judges import (
    JUDGES,
    EmbeddingJudge,
    ExactJudge,
    JudgeError,
    LLMJudge,
    make_judge,
)
from meditod_hub.data.metrics.nlg import bertscore, bleu, nlg_scores, normalise, rouge, sacrebleu_score
from meditod_hub.data.metrics.precision_at_k import MODES as PAK_MODES
from meditod_hub.data.metrics.precision_at_k import PAPER_KS, pol_precision_at_k, precision_at_k_tuples
from meditod_hub.data.metrics.tuples import MalformedLabel, Tuples, nlu_tuples, pol_tuples

__all__ = [
    "Counts", "EmbeddingJudge", "ExactJudge", "F1Scores", "JUDGES", "JudgeError", "LLMJudge",
    "MalformedLabel", "PAK_MODES", "PAPER_KS", "Tuples", "bertscore", "bleu", "make_judge",
    "nlg_scores", "nlu_f1", "nlu_tuples", "normalise", "pol_f1", "pol_precision_at_k",
    "pol_tuples", "precision_at_k_tuples", "rouge", "sacrebleu_score",
]
