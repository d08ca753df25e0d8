"""What the questionnaire asks: the CMAS vocabulary from `cmas`, the wording from `questions.json`.

`schema()` is sent to the page once; it lists, per speaker, the intents or action types and the
slots with one question per attribute (patient) or per check type (doctor), marking list-valued
and medical attributes, and which task labels the speaker's utterances under which key. Nothing
here spells a CMAS or task name: they come from `cmas` and `tasks`.
"""

from __future__ import annotations

import json
from functools import cache
from importlib.resources import files

from .. import cmas
from ..tasks import LABELLING_TASKS


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
    wording = questions()
    slots = wording["slots"]
    return {
        "patient": {
            "intents": [{"name": i, "help": wording["intents"][i]} for i in cmas.PATIENT_INTENTS],
            "inform": cmas.INFORM_INTENT,
            "slots": [{
                "base": base, "help": slots[base]["help"],
                "medical": base in cmas.MEDICAL_BASE_SLOTS,
                "statuses": _statuses(base), "status_question": slots[base].get("status"),
                "attributes": [{"name": a, "question": slots[base]["attributes"][a],
                                "list": cmas.is_list_attribute(a),
                                "medical": cmas.is_medical_attribute(base, a)}
                               for a in cmas.SLOT_ATTRIBUTES[base]],
            } for base in cmas.BASE_SLOTS],
        },
        "doctor": {
            "actions": [{"name": a, "help": wording["actions"][a]} for a in cmas.ACTION_TYPES],
            "inquire": cmas.INQUIRE_ACTION,
            "slots": [{
                "slot": slot, "medical": slot in cmas.MEDICAL_ACTION_SLOTS,
                "help": slots[slot]["help"] if slot in slots else wording["action_values"][slot],
                "value_question": wording["action_values"][slot],
                "checks": [{"type": c, "question": check_question(slot, c)}
                           for c in check_types(slot)],
            } for slot in cmas.ACTION_SLOTS],
        },
        "slot_keys": list(cmas.PATIENT_SLOT_KEYS),
        # per speaker: the task that labels its utterances and the utterance key of the label
        "labels": {speaker: {"task": task.name, "key": task.target_column}
                   for speaker, task in LABELLING_TASKS.items()},
    }
