"""A task's CMAS label language (`label_schema`) and the medical values its labels hold.

Apart from the grammars because the vocabulary reads labels through it too: both stand on it, and
neither on the other.
"""

from __future__ import annotations

from collections.abc import Iterable

from meditod_hub.data.tasks import TASKS, Task
from meditod_hub.data.tasks.language import LabelSchema
from meditod_hub.errors import UsageError


def label_schema(task: Task, status_attributes: bool = False) -> LabelSchema:
    """The CMAS language of `task`'s labels, read from cmas now. `status_attributes`: NLU slots
    keyed by base slot with the polarity as a `status` attribute (the in-context answer)."""
    if not task.structured:
        raise UsageError(f"task {task.name!r} has no structured labels to constrain "
                         f"({' or '.join(t.name for t in TASKS.values() if t.structured)})")
    return task.label_schema(status_attributes)


# --- vocabularies -------------------------------------------------------------------------------

def medical_values(task: Task, labels: Iterable) -> Iterable[str]:
    """The medical head values of NLU labels or action lists (a value of a slot whose `value`
    is a canonical concept in `task`'s language)."""
    schema = label_schema(task)
    medical = {slot.key for slot in schema.slots if slot.attributes.get("value") == "medical"}
    for label in labels:
        for item in label or ():
            if not isinstance(item, dict):
                continue
            for key, entries in task.item_slots(item).items():
                if key in medical and isinstance(entries, list):
                    yield from (e["value"] for e in entries
                                if isinstance(e, dict) and isinstance(e.get("value"), str))
