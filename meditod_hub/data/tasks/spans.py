"""The authors' PPTOD span grammar, shared by the PPTOD, Flan-T5 and BioGPT targets
(docs/format.md, "Model formats"). How it writes a task's label and what the task reads beside
the dialogue is part of what the task means (`Task.span_column`, `Input.span_column`), so it sits
with the tasks; the span families (`meditod_hub.models.formats.span_models`) and constrained
decoding read it.

    <sos_b> @inform@ [positive_symptom] ( value=a # location=b | c ) ( value=d ) <eos_b>
    <sos_a> @inquire@ [symptom] ( value=a # checks-type=location # location-values=b | c ) <eos_a>

Serialising reproduces the authors' `bspn_nlu` / `aspn` strings byte for byte (attribute order =
JSON key order) and parsing gives the original structures back. Decisions where upstream has none:

* Reserved characters. The grammar has no escape and upstream silently mis-parses a value that
  holds a delimiter, so serialisation refuses instead: `SpanValueError` names the item, slot and
  attribute (never the value). Refused: `= # ( ) @ [ ]` anywhere, `|` inside a list element,
  leading/trailing whitespace, empty list elements; names (intent, action, slot, attribute,
  check type) must also be non-empty and without whitespace. A label that serialises parses
  back to itself.
* Empty containers are not carried: an item with `slots: {}` parses to an intent-only item
  (no `slots` key, which is how intent-only items appear in the data) and an entry with
  `checks: []` to one without `checks`. The state fold and the metrics treat both alike.
* Parsing never raises and is tolerant of spacing (`#` without spaces, `(value=a)`) and of
  missing markers. It keeps the longest well-formed prefix: complete items, and the complete
  `( ... )` entries of an item that was cut; anything else makes `ok` False with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from meditod_hub.data.cmas import is_list_attribute
from meditod_hub.data.tasks.task import ParseResult, SpanColumn

NLU_SPAN = ("<sos_b>", "<eos_b>")
ACTION_SPAN = ("<sos_a>", "<eos_a>")
USER_SPAN = ("<sos_u>", "<eos_u>")
RESPONSE_SPAN = ("<sos_r>", "<eos_r>")
CONTEXT_SPAN = ("<sos_context>", "<eos_context>")
# Every marker, for tokenizers that must keep them whole.
MARKERS = NLU_SPAN + ACTION_SPAN + USER_SPAN + RESPONSE_SPAN + CONTEXT_SPAN

PAIR_SEPARATOR = " # "
LIST_SEPARATOR = " | "
CHECK_TYPE_KEY = "checks-type"  # a check opens with checks-type=T ...
VALUES_SUFFIX = "-values"       # ... and its named options follow as T-values=v1 | v2
RESERVED = "=#()@[]"

_FORBIDDEN = {False: re.compile(f"[{re.escape(RESERVED)}]"),
              True: re.compile(f"[{re.escape(RESERVED + '|')}]")}  # keyed by list_element
_SPACE = re.compile(r"\s")
_NAME = r"[^\s@\[\]()]+"
_TOKEN = re.compile(rf"\s*(?:@(?P<head>{_NAME})@|\[(?P<slot>{_NAME})\]|\((?P<entry>[^()]*)\))")


class SpanValueError(ValueError):
    """A label the span grammar cannot carry (the message names where, never the value)."""


def wrap(span: tuple[str, str], text: str) -> str:
    return " ".join((span[0], text, span[1]) if text else span)


def unwrap(span: tuple[str, str], text: str) -> tuple[str, str | None]:
    """The text between the markers (each optional) and why it is not well formed, if it isn't."""
    sos, eos = span
    text = text.strip()
    opened = text.startswith(sos)
    inner = text[len(sos) if opened else 0:]
    body, closed, rest = inner.rpartition(eos)  # the last marker: values may hold marker text
    if not closed:
        body, rest = inner, ""
    if rest.strip():
        return body.strip(), f"text after {eos}"
    if opened and not closed:
        return body.strip(), f"no {eos} (truncated output?)"
    return body.strip(), None


# --- serialisation -------------------------------------------------------------------------

def serialise_nlu(items: list[dict]) -> str:
    """NLU items -> `<sos_b> ... <eos_b>` (the authors' `bspn_nlu`)."""
    return wrap(NLU_SPAN, _nlu_text(items))


def serialise_actions(actions: list[dict]) -> str:
    """Doctor actions -> `<sos_a> ... <eos_a>` (the authors' `aspn`)."""
    return wrap(ACTION_SPAN, ACTIONS_COLUMN.text(actions))


def _nlu_text(items: list[dict]) -> str:
    return _items_text(items, "intent", _nlu_slots, _nlu_entry_text)


def serialise_state(state: dict) -> str:
    """A dialogue state (slot key -> entries) as slot spans, no item head and no markers."""
    return " ".join(_slots_text(state, "state", _nlu_entry_text))


def _checked(text, where: str, attr: str | None = None, *, name: bool = False,
             list_element: bool = False) -> str:
    """`text` if the grammar can carry it; the error names `where` (and `attr`), never the text."""
    problem = _problem(text, name, list_element)
    if problem:
        raise SpanValueError(f"{where}{'' if attr is None else f', attribute {attr!r}'}: {problem}")
    return text


def _problem(text, name: bool, list_element: bool) -> str | None:
    if not isinstance(text, str):
        return f"expected a string, got {type(text).__name__}"
    if _FORBIDDEN[list_element].search(text):
        found = " ".join(sorted(set(_FORBIDDEN[list_element].findall(text))))
        return f"contains {found}, a delimiter of the PPTOD span grammar, which has no escape"
    if text != text.strip():
        return "leading or trailing whitespace would not survive parsing"
    if (name or list_element) and not text:
        return f"empty {'name' if name else 'list element'}"
    if name and _SPACE.search(text):
        return "a name cannot contain whitespace"
    return None


def _items_text(items, head_key: str, slots_of: Callable, entry_text: Callable) -> str:
    if not isinstance(items, list):
        raise SpanValueError(f"expected a list of items, got {type(items).__name__}")
    parts = []
    for index, item in enumerate(items):
        if not isinstance(item, dict) or head_key not in item:
            raise SpanValueError(f"item {index}: expected an object with {head_key!r}")
        head = _checked(item[head_key], f"item {index} {head_key}", name=True)
        where = f"item {index} ({head})"
        parts.append(f"@{head}@")
        parts += _slots_text(slots_of(item, where), where, entry_text)
    return " ".join(parts)


def _slots_text(slots, where: str, entry_text: Callable) -> list[str]:
    if not isinstance(slots, dict):
        raise SpanValueError(f"{where}: slots must be an object, got {type(slots).__name__}")
    parts = []
    for slot, entries in slots.items():
        slot_where = f"{where}, slot {slot!r}"
        parts.append(f"[{_checked(slot, slot_where, name=True)}]")
        if not isinstance(entries, list):
            raise SpanValueError(f"{slot_where}: expected a list of entries")
        for n, entry in enumerate(entries):
            if not isinstance(entry, dict):
                raise SpanValueError(f"{slot_where}, entry {n}: expected an object")
            parts.append(f"( {PAIR_SEPARATOR.join(entry_text(entry, f'{slot_where}, entry {n}'))} )")
    return parts


def _nlu_slots(item: dict, where: str) -> dict:
    extra = set(item) - {"intent", "slots"}
    if extra:
        raise SpanValueError(f"{where}: keys {sorted(extra)} cannot be carried (only intent, slots)")
    return item.get("slots") or {}


def _slots_beside(head_key: str) -> Callable[[dict, str], dict]:
    """An item's slots where they sit beside its head (every other key: a doctor action's)."""
    return lambda item, where: {slot: entries for slot, entries in item.items() if slot != head_key}


def _nlu_entry_text(entry: dict, where: str) -> list[str]:
    pairs = []
    for attr, value in entry.items():
        _checked(attr, where, attr, name=True)
        listed = is_list_attribute(attr)
        if listed != isinstance(value, list):
            raise SpanValueError(f"{where}, attribute {attr!r}: must be "
                                 f"{'a list' if listed else 'a string'}, got {type(value).__name__}")
        text = (LIST_SEPARATOR.join([_checked(v, where, attr, list_element=True) for v in value])
                if listed else _checked(value, where, attr))
        pairs.append(f"{attr}={text}")
    return pairs


def _action_entry_text(entry: dict, where: str) -> list[str]:
    pairs = []
    for key, value in entry.items():
        _checked(key, where, key, name=True)
        if key != "checks":
            pairs.append(f"{key}={_checked(value, where, key)}")
            continue
        at = f"{where}, attribute {key!r}"
        if not isinstance(value, list):
            raise SpanValueError(f"{at}: must be a list of checks")
        for n, check in enumerate(value):
            cw = f"{at}, check {n}"
            if not isinstance(check, dict) or "type" not in check or set(check) - {"type", "values"}:
                raise SpanValueError(f"{cw}: expected {{'type': ..., 'values'?: [...]}}")
            check_type = _checked(check["type"], cw, name=True)
            pairs.append(f"{CHECK_TYPE_KEY}={check_type}")
            if "values" in check:
                if not isinstance(check["values"], list):
                    raise SpanValueError(f"{cw}: `values` must be a list")
                joined = LIST_SEPARATOR.join(_checked(v, cw, list_element=True)
                                             for v in check["values"])
                pairs.append(f"{check_type}{VALUES_SUFFIX}={joined}")
    return pairs


# --- parsing -------------------------------------------------------------------------------

def parse_nlu(text: str) -> ParseResult:
    """`bspn_nlu` (markers optional) -> NLU items; intent-only items get no `slots` key."""
    return _parse(text, NLU_SPAN, "intent", True, _nlu_entry)


def parse_actions(text: str) -> ParseResult:
    """`aspn` (markers optional) -> actions, with `checks-type`/`T-values` rebuilt into `checks`."""
    return ACTIONS_COLUMN.parse(text)


def parse_response(text: str) -> ParseResult:
    """`<sos_r> ... <eos_r>` (markers optional) -> the doctor's text."""
    body, reason = unwrap(RESPONSE_SPAN, text)
    return ParseResult(body, reason is None, reason)


def _parse(text, span, head_key: str, nested: bool, entry_from: Callable) -> ParseResult:
    if not isinstance(text, str):
        return ParseResult([], False, f"expected a string, got {type(text).__name__}")
    body, reason = unwrap(span, text)
    items: list[dict] = []
    entries: list | None = None
    pos = 0
    while (match := _TOKEN.match(body, pos)) is not None:
        head, slot, content = match.group("head", "slot", "entry")
        if head is not None:
            items.append({head_key: head})
            entries = None
        elif not items:
            return ParseResult(items, False, "a slot or entry before the first @name@")
        elif slot is not None:
            if not nested and slot == head_key:
                return ParseResult(items, False, f"[{head_key}] cannot be a slot")
            owner = items[-1].setdefault("slots", {}) if nested else items[-1]
            entries = owner.setdefault(slot, [])
        elif entries is None:
            return ParseResult(items, False, f"an entry before the first [slot] of item {len(items) - 1}")
        elif (entry := entry_from(content)) is None:
            return ParseResult(items, False, f"malformed ( ... ) entry in item {len(items) - 1}")
        else:
            entries.append(entry)
        pos = match.end()
    if body[pos:].strip():
        return ParseResult(items, False, f"unparsable text at character {pos} of the span "
                                         "(truncated or malformed)")
    return ParseResult(items, reason is None, reason)


def _pairs(content: str) -> list[tuple[str, str]] | None:
    if not content.strip():
        return []
    pairs = []
    for part in content.split("#"):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            return None
        pairs.append((key.strip(), value.strip()))
    return pairs


def _split_list(value: str) -> list[str]:
    return [v.strip() for v in value.split("|")] if value else []


def _nlu_entry(content: str) -> dict | None:
    pairs = _pairs(content)
    if pairs is None:
        return None
    return {key: _split_list(value) if is_list_attribute(key) else value for key, value in pairs}


def _action_entry(content: str) -> dict | None:
    pairs = _pairs(content)
    if pairs is None:
        return None
    entry: dict = {}
    for key, value in pairs:
        if key == CHECK_TYPE_KEY:
            entry.setdefault("checks", []).append({"type": value})
        elif key.endswith(VALUES_SUFFIX):
            last = (entry.get("checks") or [{}])[-1]
            if last.get("type") != key[:-len(VALUES_SUFFIX)] or "values" in last:
                return None  # values without their checks-type (upstream: KeyError)
            last["values"] = _split_list(value)
        else:
            entry[key] = value
    return entry


# --- the grammar's writing of each dataset column ------------------------------------------------

def item_list_column(markers: tuple[str, str], head_key: str) -> SpanColumn:
    """How the grammar writes a list of items that open with `head_key` and carry their slots
    beside it, an entry's keys as `key=value` pairs (a doctor action list; a task whose label has
    that shape names its own head and markers)."""
    def text(items: list[dict]) -> str:
        return _items_text(items, head_key, _slots_beside(head_key), _action_entry_text)

    def parse(text: str) -> ParseResult:
        return _parse(text, markers, head_key, False, _action_entry)

    return SpanColumn(markers, text, parse)


# How the grammar writes each column a task predicts or reads beside the dialogue; each task
# names its own (`Task.span_column`, `Input.span_column`). The state is written as slot spans
# inside the belief markers, where PPTOD's belief state sits.
NLU_COLUMN = SpanColumn(NLU_SPAN, _nlu_text, parse_nlu)
ACTIONS_COLUMN = item_list_column(ACTION_SPAN, "action")
RESPONSE_COLUMN = SpanColumn(RESPONSE_SPAN, str, parse_response)
STATE_COLUMN = SpanColumn(NLU_SPAN, serialise_state)
