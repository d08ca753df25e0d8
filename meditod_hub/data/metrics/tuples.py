"""Unroll NLU and POL labels into the authors' medical / non-medical tuple sets (docs/format.md, "Metrics").

NLU, per item with intent I: no slots -> `(I,)`; a medical slot entry -> head `(I, key, value)`
and `(I, key, value, attr, v)` per attribute value (lists unrolled; an entry without `value`
gets no head and the placeholder head `dummy`); status slots (residence, occupation, travel)
and basic information -> `(I, key, attr, v)` for every attribute, `value` included.
POL, per action item with type A: no slot -> `(A,)`; a medical slot entry -> head
`(A, slot, value)`, `(A, slot, value, type)` per check and `(A, slot, value, type, v)` per named
check value; status slots -> non-medical head `(A, slot, value)`, checks `(A, slot, type)` and
`(A, slot, type, v)`; basic information -> non-medical head only (its checks are ignored).
Which tuples are medical comes from `cmas`. A slot key outside CMAS yields no tuple, as upstream
(it scores as missing), and is counted so a report can say so.

A label whose *structure* is wrong (not a list of objects, a value that is an object, ...)
raises `MalformedLabel`: scoring counts such a prediction as a parse failure, never a crash.
Upstream POL gives no rule for an action entry without `value`; it is treated as in NLU. An
empty `slots` object counts as no slots.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from meditod_hub.data import cmas

NO_HEAD = "dummy"  # upstream's head for attributes of an entry that has no `value`
_SCALARS = (str, int, float, bool, type(None))


class MalformedLabel(ValueError):
    """A label that cannot be unrolled into tuples."""


@dataclass(frozen=True)
class Tuples:
    medical: frozenset[tuple]
    non_medical: frozenset[tuple]
    unknown_slot_keys: int = 0

    @property
    def all(self) -> frozenset[tuple]:
        return self.medical | self.non_medical


EMPTY = Tuples(frozenset(), frozenset())


# Error messages are built only when a label is malformed: formatting one per entry was most of
# the scoring time.
def _objects(value, what: str, *args) -> list[dict]:
    if not isinstance(value, list):
        raise MalformedLabel(f"{what.format(*args)} must be a list of objects")
    for item in value:
        if not isinstance(item, dict):
            raise MalformedLabel(f"{what.format(*args)} must be a list of objects")
    return value


def _scalar(value, what: str, *args):
    if not isinstance(value, _SCALARS):
        raise MalformedLabel(f"{what.format(*args)} must be a string, got {type(value).__name__}")
    return value


def _name(value, what: str, *args) -> str:
    if not isinstance(value, str):
        raise MalformedLabel(f"{what.format(*args)} must be a string, got {type(value).__name__}")
    return value


def _values(value, what: str, *args) -> list:
    """An attribute's values: a list attribute unrolls to one tuple per element."""
    items = value if isinstance(value, list) else (value,)
    for v in items:
        if not isinstance(v, _SCALARS):
            _scalar(v, what, *args)
    return items


class _NluSlot(NamedTuple):
    """What unrolling needs to know of one CMAS patient slot key, looked up once per key."""
    headed: bool  # medical base slot: entries have a `value` head
    all_medical: bool  # basic information: every tuple is medical
    medical_attributes: frozenset[str]


_NLU_SLOTS = {
    key: _NluSlot(parsed.base in cmas.MEDICAL_BASE_SLOTS, parsed.base == cmas.BASIC_INFORMATION_SLOT,
                  frozenset(cmas.MEDICAL_ATTRIBUTES.get(parsed.base, ())))
    for key, parsed in ((key, cmas.split_slot_key(key)) for key in cmas.PATIENT_SLOT_KEYS)}


def nlu_tuples(items) -> Tuples:
    """The tuple sets of one patient utterance's NLU items."""
    medical: set[tuple] = set()
    non_medical: set[tuple] = set()
    unknown = 0
    if type(items) is not list:
        _objects(items, "an NLU label")
    for item in items:
        if type(item) is not dict:
            _objects(items, "an NLU label")
        intent = item.get("intent")
        if type(intent) is not str:
            _name(intent, "an NLU `intent`")
        slots = item.get("slots")
        if not slots:
            medical.add((intent,))
            continue
        if type(slots) is not dict:
            raise MalformedLabel("NLU `slots` must be an object")
        for key, entries in slots.items():
            if type(entries) is not list:
                _objects(entries, "slot {!r}", key)
            slot = _NLU_SLOTS.get(key)
            if slot is None:
                _objects(entries, "slot {!r}", key)
                unknown += 1
                continue
            headed, all_medical, medical_attributes = slot
            for entry in entries:
                if type(entry) is not dict:
                    _objects(entries, "slot {!r}", key)
                has_head = "value" in entry
                head = entry["value"] if has_head else NO_HEAD
                if type(head) is not str:
                    _scalar(head, "slot {!r} `value`", key)
                if headed:
                    if has_head:
                        medical.add((intent, key, head))
                    prefix = (intent, key, head)
                else:
                    prefix = (intent, key)
                for attr, value in entry.items():
                    if headed and attr == "value":
                        continue
                    target = medical if all_medical or attr in medical_attributes else non_medical
                    if type(value) is str:  # the common case, checked without a call
                        target.add((*prefix, attr, value))
                        continue
                    for v in _values(value, "attribute {!r} of slot {!r}", attr, key):
                        target.add((*prefix, attr, v))
    return Tuples(frozenset(medical), frozenset(non_medical), unknown)


def pol_tuples(actions) -> Tuples:
    """The tuple sets of one doctor utterance's actions."""
    medical: set[tuple] = set()
    non_medical: set[tuple] = set()
    unknown = 0
    for act in _objects(actions, "a POL label"):
        kind = _name(act.get("action"), "an action's `action`")
        slots = {k: v for k, v in act.items() if k != "action"}
        if not slots:
            medical.add((kind,))
            continue
        for slot, entries in slots.items():
            _objects(entries, "action slot {!r}", slot)
            if slot not in cmas.ACTION_SLOTS:
                unknown += 1
                continue
            for entry in entries:
                _pol_entry(medical, non_medical, kind, slot, entry)
    return Tuples(frozenset(medical), frozenset(non_medical), unknown)


def _pol_entry(medical: set, non_medical: set, kind: str, slot: str, entry: dict) -> None:
    medical_slot = slot in cmas.MEDICAL_ACTION_SLOTS
    has_head = "value" in entry
    head = _scalar(entry["value"], "action slot {!r} `value`", slot) if has_head else NO_HEAD
    if has_head:
        (medical if medical_slot else non_medical).add((kind, slot, head))
    if slot == cmas.BASIC_INFORMATION_SLOT:
        return
    prefix = (kind, slot, head) if medical_slot else (kind, slot)
    medical_values = cmas.MEDICAL_CHECK_VALUE_TYPES.get(slot, frozenset())
    for check in _objects(entry.get("checks", []), "action slot {!r} `checks`", slot):
        check_type = _name(check.get("type"), "a check `type` on action slot {!r}", slot)
        medical.add((*prefix, check_type))
        target = medical if check_type in medical_values else non_medical
        for v in _values(check.get("values", []), "check {!r} `values`", check_type):
            target.add((*prefix, check_type, v))


def unroll_gold(labels: Sequence, unroll: Callable, ids: Sequence[str] | None) -> list[Tuples]:
    """Unroll gold labels; a malformed one is an error naming its id (or index)."""
    out = []
    for i, label in enumerate(labels):
        try:
            out.append(unroll(label))
        except MalformedLabel as exc:
            raise MalformedLabel(f"gold label of {ids[i] if ids else f'#{i}'}: {exc}") from exc
    return out


def unroll_predictions(labels: Sequence, unroll: Callable) -> tuple[list[Tuples], int]:
    """Unroll predictions; None (did not parse) or a malformed one is empty and counted."""
    out, failures = [], 0
    for label in labels:
        try:
            if label is None:
                raise MalformedLabel("the prediction did not parse")
            out.append(unroll(label))
        except MalformedLabel:
            out.append(EMPTY)
            failures += 1
    return out, failures
