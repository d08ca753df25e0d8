"""NLU: from the dialogue so far and the patient's utterance, predict its CMAS labels (intents,
slots and attributes). Its labels are the release's `nlu` items; their slots sit under `slots`."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from meditod_hub.data import views
from meditod_hub.data.metrics import nlu_f1, nlu_tuples
from meditod_hub.data.release import PATIENT_LABELS, nlu_label_errors
from meditod_hub.data.tasks.fewshot import (
    NLU_INTENTS,
    SLOT_DEFINITIONS,
    from_status_attributes,
    to_status_attributes,
)
from meditod_hub.data.tasks.language import nlu_language
from meditod_hub.data.tasks.spans import NLU_COLUMN
from meditod_hub.data.tasks.task import F1_METRICS, JOINT_ACCURACY, Task


def score(gold: list, predictions: Sequence, gold_rows: Sequence[dict], *, judge,
          **_options) -> dict:
    return nlu_f1(gold, predictions, judge, ids=[row["id"] for row in gold_rows]).as_dict()


def entry_paths(entry: dict) -> Iterable[tuple[tuple[str, ...], str | None]]:
    """An NLU entry, as agreement compares it: each attribute is a path, its value read with the
    entry's head value."""
    head = json.dumps(entry.get("value"))
    if not entry:
        yield (), None
    for attr, value in entry.items():
        yield (attr,), head + json.dumps(value)


TASK = Task(
    name="nlu", speaker="patient", target_column=PATIENT_LABELS, item_head="intent", slots_key="slots",
    annotated=True, release_check=nlu_label_errors, entry_paths=entry_paths, language=nlu_language,
    tuples=nlu_tuples,
    description="from the dialogue so far and the patient's utterance, predict its intents, "
                "slots and attributes (CMAS labels)",
    view=views.to_nlu, features=views.NLU_FEATURES,
    scorer=score, headline="f1", metrics=F1_METRICS + (JOINT_ACCURACY,),
    chart_metrics=("f1", "medical.f1", "joint_accuracy"),
    system_message="Given the dialog history and the last turn, identify the patient's intent, "
                   "slots, and related attributes.",
    span_column=NLU_COLUMN,
    authors_prefix="convert dialog to dialog state:",
    pptod_prefix="translate dialogue to belief state:",
    fewshot_header="You are a professional medical scribe who is an expert in understanding "
                   "doctor-patient dialogs. "
                   "The user will show you a dialog history between a doctor and a patient and "
                   "the last turn in their dialog. Your task is to identify the patient's intent, "
                   "slots, and related attributes (if applicable) from the given the dialog "
                   "history and the last turn. ",
    fewshot_rules=(
        "1. Read the given definitions carefully.",
        "2. For a given dialog history and last turn, only some of the intents, slots and "
        "related attributes are applicable.",
        "3. Related attribute 'value' of the the slots symptom, medical_history, family_history, "
        "habit, exposure, medication and medical_test must be a standard medical concept.",
        "4. Expected output should contain intent, slot and related values from the last "
        "turn. Dialog history is given as an additional context."),
    fewshot_intents=NLU_INTENTS, fewshot_slots=SLOT_DEFINITIONS,
    to_answer=to_status_attributes, from_answer=from_status_attributes,
)
