"""A toy fourth task in one file, as a new task module under meditod_hub/data/tasks/ would be:
from the dialogue so far, the dialogue state before a patient's line and the line itself, list
the findings the line affirms, denies or is unsure of, by polarity:

    [{"polarity": "positive", "symptom": [{"value": "wheezing"}]},
     {"polarity": "negative", "symptom": [{"value": "fever"}]}]

Its own view (one row per patient line, the state *before* it), its own label (items headed by
a polarity, their findings beside it, as a doctor action carries its slots), its own CMAS
language (polarities and the polar slots), span column, scorer and wording; the state it reads
is POL's input, built in a cascade from NLU's predicted labels as POL's is. Registered
(`tasks.register(TASK)`, the registry's one line) by tests/test_toy_task.py only."""

from __future__ import annotations

from collections.abc import Sequence

from meditod_hub.data import cmas, views
from meditod_hub.data.metrics import Counts, MalformedLabel, Tuples
from meditod_hub.data.metrics.tuples import unroll_gold, unroll_predictions
from meditod_hub.data.release import PATIENT_LABELS
from meditod_hub.data.tasks.language import SlotSchema
from meditod_hub.data.tasks.pol import STATE
from meditod_hub.data.tasks.spans import NLU_SPAN, item_list_column
from meditod_hub.data.tasks.task import Metric, Task

HEAD = "polarity"
COLUMN = "findings"
_ROW = ("id", "dialogue_id", "turn", "uttr_id", "context", "last_doctor_text", "patient_text")


def findings(nlu_items: list[dict]) -> list[dict]:
    """A patient line's NLU items as findings: one item per polarity (in order of mention),
    each polar slot's values under its base slot."""
    found: dict[str, dict[str, list]] = {}
    for item in nlu_items:
        for key, entries in (item.get("slots") or {}).items():
            slot = cmas.split_slot_key(key)
            if slot is None or slot.status not in cmas.POLARITY_PREFIXES:
                continue
            values = found.setdefault(slot.status, {}).setdefault(slot.base, [])
            values += [{"value": e["value"]} for e in entries
                       if "value" in e and {"value": e["value"]} not in values]
    return [{HEAD: polarity, **slots} for polarity, slots in found.items()]


def view(dialogue_id: str, utterances: list[dict]) -> list[dict]:
    """One row per patient line: its NLU row's dialogue columns, the state before the line (the
    NLU row's state is the one after it) and the line's findings."""
    rows, before = [], {}
    for row in views.to_nlu(dialogue_id, utterances):
        rows.append({**{k: row[k] for k in _ROW}, "state": before,
                     COLUMN: findings(row[PATIENT_LABELS])})
        before = row["state"]
    return rows


def language(status_attributes: bool) -> tuple[tuple[str, ...], tuple[SlotSchema, ...]]:
    """The polarities, and the polar slots with a medical value each."""
    return cmas.POLARITY_PREFIXES, tuple(SlotSchema(base, {"value": "medical"})
                                         for base in cmas.POLAR_SLOTS)


def tuples(label) -> Tuples:
    """(polarity, slot, value) of every finding, all medical; another shape is malformed."""
    if not isinstance(label, list) or not all(isinstance(i, dict) and isinstance(i.get(HEAD), str)
                                              for i in label):
        raise MalformedLabel(f"findings must be a list of objects with a string {HEAD!r}")
    found = set()
    for item in label:
        for slot, entries in item.items():
            if slot == HEAD:
                continue
            if not isinstance(entries, list) or not all(
                    isinstance(e, dict) and isinstance(e.get("value"), str) for e in entries):
                raise MalformedLabel(f"slot {slot!r} must be a list of objects with a `value`")
            found.update((item[HEAD], slot, e["value"]) for e in entries)
    return Tuples(frozenset(found), frozenset())


def label_errors(label) -> list[str]:
    """Why a findings label is unusable: a shape `tuples` cannot read, or a polarity or slot
    outside CMAS."""
    try:
        tuples(label)
    except MalformedLabel as exc:
        return [str(exc)]
    errors = []
    for n, item in enumerate(label, 1):
        if item[HEAD] not in cmas.POLARITY_PREFIXES:
            errors.append(f"item {n}: {HEAD} {item[HEAD]!r} is not a CMAS polarity")
        errors += [f"item {n}: {slot!r} is not a polar slot" for slot in item
                   if slot != HEAD and slot not in cmas.POLAR_SLOTS]
    return errors


def score(gold: list, predictions: Sequence, gold_rows: Sequence[dict], **_options) -> dict:
    """Micro precision, recall and F1 of the (polarity, slot, value) tuples, and exact match."""
    expected = unroll_gold(gold, tuples, [row["id"] for row in gold_rows])
    predicted, failures = unroll_predictions(predictions, tuples)
    counts = Counts()
    for g, p in zip(expected, predicted):
        counts += Counts(len(g.all & p.all), len(p.all - g.all), len(g.all - p.all))
    exact = sum(g.all == p.all for g, p in zip(expected, predicted))
    return {**counts.as_dict(), "exact_match": exact / len(gold) if gold else 0.0,
            "examples": len(gold), "parse_failures": failures}


TASK = Task(
    name=COLUMN, speaker="patient", target_column=COLUMN, item_head=HEAD,
    release_check=label_errors, language=language, tuples=tuples,
    description="from the dialogue so far, the state and the patient's utterance, list the "
                "findings it affirms, denies or is unsure of",
    view=view, features={**{k: views.NLU_FEATURES[k] for k in _ROW}, "state": views.JSON,
                         COLUMN: views.JSON},
    scorer=score, headline="f1",
    metrics=(Metric("precision", "precision", "Precision"), Metric("recall", "recall", "Recall"),
             Metric("f1", "f1", "F1"), Metric("exact_match", "accuracy", "Exact match")),
    chart_metrics=("f1", "exact_match"),
    system_message="Given the current state, history, and last turn of a dialog between a doctor "
                   "and a patient, list the findings the patient affirms, denies or is unsure of.",
    span_column=item_list_column(NLU_SPAN, HEAD),
    authors_prefix="convert dialog state and history to findings:",
    pptod_prefix="translate dialogue to findings:",
    fewshot_header="You will see a dialog state and the last turn of a dialog between a doctor "
                   "and a patient. List the findings of the patient's last line by polarity. ",
    fewshot_rules=("1. Only findings the patient's last line states.",),
    fewshot_intents={"positive": "The patient has it.", "negative": "The patient does not.",
                     "unknown": "The patient does not know."},
    fewshot_slots=tuple((base, f"A {base} the patient speaks of.",
                         (("value", "It in medical terms.", ()),)) for base in cmas.POLAR_SLOTS),
    reads=STATE, upstream="nlu", cascade_builder=views.cascade_pol_rows,
)
