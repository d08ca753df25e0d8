"""The CMAS language of a structured task's labels, read from `cmas` at call time (a new slot or
attribute needs no edit here): the heads an item opens with and the slots it may carry, with
their attributes and check types. Each structured task names its own (`Task.language`);
constrained decoding (`meditod_hub.models.constrained.grammars`) writes its grammars from them."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from meditod_hub.data import cmas


@dataclass(frozen=True)
class SlotSchema:
    """One slot key: its attributes (name -> "medical", "text", "list" or a tuple of choices)
    and, for doctor actions, the check types it takes."""

    key: str
    attributes: dict = field(hash=False)
    checks: tuple[str, ...] = ()


@dataclass(frozen=True)
class LabelSchema:
    """An NLU item list or an action list: items opened by a head (`intent` / `action`) with one
    of `heads`; slots under `slots_key` (NLU) or, where it is None, beside the head (POL). Head
    and slots key are the task's (`Task.item_head`, `Task.slots_key`)."""

    head: str
    heads: tuple[str, ...]
    slots_key: str | None
    slots: tuple[SlotSchema, ...]


# A label's heads and slots; `status_attributes`: NLU slots keyed by base slot with the polarity
# as a `status` attribute (the in-context answer).
Language = Callable[[bool], tuple[tuple[str, ...], tuple[SlotSchema, ...]]]


def nlu_language(status_attributes: bool) -> tuple[tuple[str, ...], tuple[SlotSchema, ...]]:
    """A patient line's intents and its slot keys (or base slots with a status attribute)."""
    return tuple(cmas.PATIENT_INTENTS), tuple(_nlu_slots(status_attributes))


def actions_language(status_attributes: bool) -> tuple[tuple[str, ...], tuple[SlotSchema, ...]]:
    """A doctor's action types and the action slots with their check types."""
    return tuple(cmas.ACTION_TYPES), tuple(
        SlotSchema(slot, {"value": "medical" if slot in cmas.MEDICAL_ACTION_SLOTS else "text"},
                   check_types(slot))
        for slot in cmas.ACTION_SLOTS)


def _attribute_kind(base: str, attribute: str) -> str:
    if cmas.is_list_attribute(attribute):
        return "list"
    return "medical" if attribute == "value" and base in cmas.MEDICAL_BASE_SLOTS else "text"


def _nlu_slots(status_attributes: bool) -> Iterable[SlotSchema]:
    statuses = {**{b: cmas.POLARITY_PREFIXES for b in cmas.POLAR_SLOTS},
                cmas.TEST_SLOT: cmas.TEST_PREFIXES}
    bases = list(cmas.SLOT_ATTRIBUTES)
    if status_attributes:
        for base in bases:
            attributes = {a: _attribute_kind(base, a) for a in cmas.SLOT_ATTRIBUTES[base]}
            if base in statuses:
                attributes["status"] = tuple(statuses[base])
            yield SlotSchema(base, attributes)
        return
    for base in bases:
        attributes = {a: _attribute_kind(base, a) for a in cmas.SLOT_ATTRIBUTES[base]}
        for prefix in statuses.get(base, (None,)):
            yield SlotSchema(f"{prefix}_{base}" if prefix else base, attributes)


def check_types(slot: str) -> tuple[str, ...]:
    """What a doctor may check on an action slot: the check types cmas lists for it, the slot's
    attributes, and the check types that name a family of its attributes."""
    attributes = tuple(a for a in cmas.SLOT_ATTRIBUTES.get(slot, ()) if a != "value")
    families = tuple(t for t, members in cmas.CHECK_TYPE_ATTRIBUTES.items()
                     if set(members) <= set(attributes))
    return tuple(dict.fromkeys(tuple(cmas.CHECK_TYPES.get(slot, ())) + attributes + families))
