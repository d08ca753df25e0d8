"""What the questionnaire asks: the CMAS vocabulary from `cmas`, the wording from `questions.json`.

`schema()` is sent to the page once; it lists, per speaker, which task labels its utterances and
under which key, the intents or action types and the slots with one question per attribute
(patient) or per check type (doctor), marking list-valued and medical attributes, the section an
attribute is folded into and the attributes never asked; and a human name for every patient slot
key. Nothing here spells a CMAS or task name: they come from `cmas` and `tasks`.
"""

from __future__ import annotations

import json
from functools import cache
from importlib.resources import files

from meditod_hub.data import cmas
from meditod_hub.data.tasks import LABELLING_TASKS


@cache
def questions() -> dict:
    return json.loads(files(__package__).joinpath("questions.json").read_text(encoding="utf-8"))


def check_types(slot: str) -> tuple[str, ...]:
    """What a doctor may ask about an action slot: the check types seen in the data, then the
    slot's other single-valued attributes (the value too, for the status slots)."""
    named = cmas.CHECK_TYPES.get(slot, ())
    covered = {a for t in named for a in cmas.CHECK_TYPE_ATTRIBUTES.get(t, (t,))}
    rest = [a for a in cmas.SLOT_ATTRIBUTES.get(slot, ())
            if a not in covered and not cmas.is_list_attribute(a)
            and (a != "value" or slot in cmas.STATUS_SLOTS)]
    return tuple(named) + tuple(rest)


def check_question(slot: str, check: str) -> str:
    wording = questions()
    if check in wording["check_families"]:
        return wording["check_families"][check]
    return wording["slots"][slot]["attributes"][check]


def check_label(check: str) -> str:
    return questions()["check_labels"].get(check, check.replace("_", " "))


def _section(base: str, attribute: str) -> str | None:
    """The folded section an attribute is asked in (None: always shown)."""
    sections = questions()["sections"].get(base, {})
    return next((name for name, attrs in sections.items() if attribute in attrs), None)


def key_label(key: str) -> str:
    """`positive_symptom` -> `symptom: yes`, `avail_medical_test` -> `medical test: has the results`."""
    parsed = cmas.split_slot_key(key)
    if parsed is None:
        return key
    base = parsed.base.replace("_", " ")
    return f"{base}: {questions()['statuses'][parsed.status].lower()}" if parsed.status else base


def _statuses(base: str) -> list[dict]:
    if base in cmas.POLAR_SLOTS:
        prefixes = cmas.POLARITY_PREFIXES
    elif base == cmas.TEST_SLOT:
        prefixes = cmas.TEST_PREFIXES
    else:
        return []
    labels = questions()["statuses"]
    return [{"prefix": p, "label": labels[p], "key": f"{p}_{base}"} for p in prefixes]


def schema() -> dict:
    """The questionnaire of each labelling task, under its speaker (what the pages read as
    schema.patient / schema.doctor), and every patient slot key's name. A task whose label
    items keep their slots under a key (NLU) is asked for intents and slot attributes; one whose
    items hold their slots beside the head (POL's actions) for action types and check types."""
    wording = questions()
    parts = {speaker: {"label_key": task.target_column, "task": task.name,
                       **(_intent_part if task.slots_key else _action_part)(wording)}
             for speaker, task in LABELLING_TASKS.items()}
    return {**parts, "slot_keys": {key: key_label(key) for key in cmas.PATIENT_SLOT_KEYS}}


def _intent_part(wording: dict) -> dict:
    slots, hidden = wording["slots"], wording["hidden"]
    return {
        "intents": [{"name": i, "help": wording["intents"][i]} for i in cmas.PATIENT_INTENTS],
        "inform": cmas.INFORM_INTENT,
        "slots": [{
            "base": base, "help": slots[base]["help"],
            "medical": base in cmas.MEDICAL_BASE_SLOTS,
            "statuses": _statuses(base), "status_question": slots[base].get("status"),
            "attributes": [{"name": a, "question": slots[base]["attributes"][a],
                            "list": cmas.is_list_attribute(a),
                            "medical": cmas.is_medical_attribute(base, a),
                            "section": _section(base, a),
                            "hidden": a in hidden.get(base, [])}
                           for a in cmas.SLOT_ATTRIBUTES[base]],
        } for base in cmas.BASE_SLOTS],
    }


def _action_part(wording: dict) -> dict:
    slots = wording["slots"]
    return {
        "actions": [{"name": a, "help": wording["actions"][a]} for a in cmas.ACTION_TYPES],
        "inquire": cmas.INQUIRE_ACTION,
        "slots": [{
            "slot": slot, "medical": slot in cmas.MEDICAL_ACTION_SLOTS,
            "help": slots[slot]["help"] if slot in slots else wording["action_values"][slot],
            "value_question": wording["action_values"][slot],
            "checks": [{"type": c, "label": check_label(c), "question": check_question(slot, c)}
                       for c in check_types(slot)],
        } for slot in cmas.ACTION_SLOTS],
    }
