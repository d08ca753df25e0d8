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

from .. import cmas

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


def _objects(value, what: str) -> list[dict]:
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise MalformedLabel(f"{what} must be a list of objects")
    return value


def _scalar(value, what: str):
    if not isinstance(value, _SCALARS):
        raise MalformedLabel(f"{what} must be a string, got {type(value).__name__}")
    return value


def _name(value, what: str) -> str:
    if not isinstance(value, str):
        raise MalformedLabel(f"{what} must be a string, got {type(value).__name__}")
    return value


def _values(value, what: str) -> list:
    """An attribute's values: a list attribute unrolls to one tuple per element."""
    items = value if isinstance(value, list) else [value]
    return [_scalar(v, what) for v in items]


class _Collector:
    def __init__(self) -> None:
        self.medical: set[tuple] = set()
        self.non_medical: set[tuple] = set()
        self.unknown = 0

    def add(self, tup: tuple, medical: bool) -> None:
        (self.medical if medical else self.non_medical).add(tup)

    def result(self) -> Tuples:
        return Tuples(frozenset(self.medical), frozenset(self.non_medical), self.unknown)


def nlu_tuples(items) -> Tuples:
    """The tuple sets of one patient utterance's NLU items."""
    out = _Collector()
    for item in _objects(items, "an NLU label"):
        intent = _name(item.get("intent"), "an NLU `intent`")
        slots = item.get("slots")
        if not slots:
            out.add((intent,), True)
            continue
        if not isinstance(slots, dict):
            raise MalformedLabel("NLU `slots` must be an object")
        for key, entries in slots.items():
            entries = _objects(entries, f"slot {key!r}")
            parsed = cmas.split_slot_key(key)
            if parsed is None:
                out.unknown += 1
                continue
            for entry in entries:
                _nlu_entry(out, intent, key, parsed.base, entry)
    return out.result()


def _nlu_entry(out: _Collector, intent: str, key: str, base: str, entry: dict) -> None:
    head = _scalar(entry["value"], f"slot {key!r} `value`") if "value" in entry else NO_HEAD
    if base in cmas.MEDICAL_BASE_SLOTS:
        if "value" in entry:
            out.add((intent, key, head), True)
        prefix = (intent, key, head)
        attributes = [a for a in entry if a != "value"]
    else:
        prefix, attributes = (intent, key), list(entry)
    for attr in attributes:
        medical = base == cmas.BASIC_INFORMATION_SLOT or cmas.is_medical_attribute(base, attr)
        for v in _values(entry[attr], f"attribute {attr!r} of slot {key!r}"):
            out.add(prefix + (attr, v), medical)


def pol_tuples(actions) -> Tuples:
    """The tuple sets of one doctor utterance's actions."""
    out = _Collector()
    for act in _objects(actions, "a POL label"):
        kind = _name(act.get("action"), "an action's `action`")
        slots = {k: v for k, v in act.items() if k != "action"}
        if not slots:
            out.add((kind,), True)
            continue
        for slot, entries in slots.items():
            entries = _objects(entries, f"action slot {slot!r}")
            if slot not in cmas.ACTION_SLOTS:
                out.unknown += 1
                continue
            for entry in entries:
                _pol_entry(out, kind, slot, entry)
    return out.result()


def _pol_entry(out: _Collector, kind: str, slot: str, entry: dict) -> None:
    medical_slot = slot in cmas.MEDICAL_ACTION_SLOTS
    head = _scalar(entry["value"], f"action slot {slot!r} `value`") if "value" in entry else NO_HEAD
    if "value" in entry:
        out.add((kind, slot, head), medical_slot)
    if slot == cmas.BASIC_INFORMATION_SLOT:
        return
    prefix = (kind, slot, head) if medical_slot else (kind, slot)
    medical_values = cmas.MEDICAL_CHECK_VALUE_TYPES.get(slot, frozenset())
    for check in _objects(entry.get("checks", []), f"action slot {slot!r} `checks`"):
        check_type = _name(check.get("type"), f"a check `type` on action slot {slot!r}")
        out.add(prefix + (check_type,), True)
        for v in _values(check.get("values", []), f"check {check_type!r} `values`"):
            out.add(prefix + (check_type, v), check_type in medical_values)


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
