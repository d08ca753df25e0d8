"""POL: from the dialogue so far and the dialogue state, predict the doctor's next actions (the
release's `actions` items; an action's slots are its other keys). In a cascade its state is
folded from the NLU labels predicted for the patient lines so far."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from meditod_hub.data import views
from meditod_hub.data.metrics import pol_f1, pol_precision_at_k, pol_tuples
from meditod_hub.data.release import DOCTOR_LABELS, action_label_errors
from meditod_hub.data.tasks.fewshot import DOCTOR_SLOT_DEFINITIONS, POL_INTENTS
from meditod_hub.data.tasks.language import actions_language
from meditod_hub.data.tasks.spans import ACTIONS_COLUMN, STATE_COLUMN
from meditod_hub.data.tasks.task import F1_METRICS, JOINT_ACCURACY, PRECISION_AT_K, Input, Task


def score(gold: list, predictions: Sequence, gold_rows: Sequence[dict], *, judge,
          pak_mode: str, **_options) -> dict:
    results = pol_f1(gold, predictions, judge, ids=[row["id"] for row in gold_rows]).as_dict()
    results["precision_at_k"] = pol_precision_at_k(
        gold, predictions, [row["dialogue_id"] for row in gold_rows], mode=pak_mode)
    results["precision_at_k_mode"] = pak_mode
    return results


def entry_paths(entry: dict) -> Iterable[tuple[tuple[str, ...], str | None]]:
    """An action's entry, as agreement compares it: its value, and each check with its values."""
    head = json.dumps(entry.get("value"))
    yield ("value",), head
    for check in entry.get("checks") or []:
        yield (f"check:{check.get('type')}",), head + json.dumps(check.get("values"))


# The dialogue state POL reads: under `[dialog state]` (chat: with the history), after `dst:` in
# a Flan-T5 / BioGPT body; the one input a token budget may thin.
STATE = Input("state", STATE_COLUMN, span_key="dst:", chat_block="[dialog state]",
              chat_history=True, fewshot_block="[dialog state]", thinned_to_fit=True)


TASK = Task(
    name="pol", speaker="doctor", target_column=DOCTOR_LABELS, item_head="action",
    annotated=True, release_check=action_label_errors, entry_paths=entry_paths, language=actions_language,
    tuples=pol_tuples,
    description="from the dialogue so far and the dialogue state, predict the doctor's next "
                "actions",
    view=views.to_pol, features=views.POL_FEATURES,
    scorer=score, headline="f1", metrics=F1_METRICS + (JOINT_ACCURACY,) + PRECISION_AT_K,
    chart_metrics=("f1", "medical.f1", "joint_accuracy", "precision_at_k.1", "precision_at_k.4",
                   "precision_at_k.inf"),
    system_message="Given the current state, history, and last turn of a dialog between a doctor "
                   "and a patient, suggest the doctor's action as a continuation of the dialog.",
    span_column=ACTIONS_COLUMN,
    authors_prefix="convert dialog state and history to dialog act:",
    pptod_prefix="translate dialogue to dialogue action:",
    fewshot_header="You are a professional medical assistant who is an expert in understanding "
                   "doctor-patient dialogs. "
                   "The user will show you current state of the dialog between a doctor and a "
                   "patient and the last turn in their dialog. Your task is to suggest the "
                   "doctor's action as a continuation of the dialog. Doctor's action consists of "
                   "intents, slots and related attributes (if applicable). ",
    fewshot_rules=(
        "1. Read the given definitions carefully.",
        "2. For a given dialog state and last turn, only some of the intents, slots and "
        "related attributes are applicable.",
        "3. Related attribute 'value' of the the slots symptom, medical_history, family_history, "
        "habit, exposure, medication and medical_test must be a standard medical concept.",
        "4. Make sure that the doctor's action is a continuation of the dialog. Dialog state "
        "is given as an additional context."),
    fewshot_intents=POL_INTENTS, fewshot_slots=DOCTOR_SLOT_DEFINITIONS,
    reads=STATE, upstream="nlu", cascade_builder=views.cascade_pol_rows,
)
