"""NLG: from the dialogue so far and the doctor's actions, write the doctor's utterance (the
`response` text). In a cascade its actions are the ones POL predicted."""

from __future__ import annotations

from collections.abc import Sequence

from meditod_hub.data import views
from meditod_hub.data.metrics import nlg_scores
from meditod_hub.data.tasks.spans import ACTIONS_COLUMN, RESPONSE_COLUMN
from meditod_hub.data.tasks.task import NLG_METRICS, Input, Task


def score(gold: list, predictions: Sequence, gold_rows: Sequence[dict], *,
          bertscore_model: str | None, bertscore_layer: int | None, seed: int,
          **_options) -> dict:
    texts = [p if isinstance(p, str) else "" for p in predictions]
    return {**nlg_scores(texts, gold, bertscore_model, bertscore_layer, seed),
            "examples": len(gold),
            "parse_failures": sum(not isinstance(p, str) for p in predictions)}


# The doctor's actions NLG reads: under `[action]` with the last turn only, no history (upstream's
# chat prompt), `[actions]` in the few-shot prompt, after `actions:` in a Flan-T5 / BioGPT body.
ACTIONS = Input("actions", ACTIONS_COLUMN, span_key="actions:", chat_block="[action]",
                chat_history=False, fewshot_block="[actions]")


TASK = Task(
    name="nlg", speaker="doctor", target_column="response", item_head=None,
    description="from the dialogue so far and the doctor's actions, write the doctor's utterance",
    view=views.to_nlg, features=views.NLG_FEATURES,
    scorer=score, headline="bleu4", metrics=NLG_METRICS,
    chart_metrics=("bleu2", "bleu4", "rouge1", "rougeL", "bertscore.f1"),
    system_message="Given the action, dialog history and last turn of a dialog between a doctor "
                   "and a patient, suggest the doctor's response as a continuation of the dialog.",
    span_column=RESPONSE_COLUMN,
    authors_prefix="convert dialog actions and history to dialog act:",
    pptod_prefix="translate dialogue to system response:",
    fewshot_header="You are a professional medical assistant who is an expert in understanding "
                   "doctor-patient dialogs. "
                   "The user will show you the last turn of the dialog between a doctor and a "
                   "patient and the doctor's action. Your task is to suggest the doctor's "
                   "response as a continuation of the dialog.",
    fewshot_rules=(
        "1. Your suggested response must reflect the doctor's actions and form a natural "
        "continuation of the dialog.",
        "2. Your suggested response must be fluent, grammatically correct and empathetic.",
        "3. Your suggested response must satisfy any queries made by the user."),
    reads=ACTIONS, upstream="pol", cascade_builder=views.cascade_nlg_rows,
)
