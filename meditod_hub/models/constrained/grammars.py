"""A format's answer to a task as a grammar: EBNF text (`grammar`) or a JSON schema (`json_schema`).

Grammars are EBNF in the GBNF dialect, which xgrammar (here, vLLM, SGLang), llama.cpp's server
and llguidance (`gbnf_to_lark`) all read; `json_schema` gives the fewshot answer as a JSON schema
for servers that take only that (OpenAI, TGI). Non-medical values are free text that cannot break
the structure (no quote, bracket, brace or control character in JSON, no span delimiter in spans:
no MediTOD label holds one, and a bracket inside a value would let the chat format's `[done]`
marker, or closing characters that close nothing, into a string); medical head values are free
too, or one of a `Vocabulary`. Keys may come in any order and attributes repeat (a fixed order
would reject answers whose keys follow the data's order, not cmas'), so the grammar accepts every
answer that parses and validates: a model whose greedy output already does so is not changed by
the constraint. An answer holds at least one item (every patient line has an intent, every
doctor turn an action: no MediTOD label is empty).

Pure text from the task's language: the local processor and the served request both send it,
each its own way.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from meditod_hub.data.tasks import Task
from meditod_hub.data.tasks.language import LabelSchema, SlotSchema
from meditod_hub.data.tasks.spans import CHECK_TYPE_KEY, VALUES_SUFFIX
from meditod_hub.errors import UsageError
from meditod_hub.models.constrained.language import label_schema
from meditod_hub.models.constrained.vocabulary import Vocabulary
from meditod_hub.models.formats import chat

FORMATS = ("chat", "span", "pptod", "fewshot")


# --- EBNF (GBNF dialect) ------------------------------------------------------------------------

def _literal(text: str) -> str:
    """A GBNF string literal."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _name(*parts: str) -> str:
    """A rule name (GBNF: letters, digits and dashes)."""
    return "-".join(p.replace("_", "-").replace(".", "-") for p in parts).lower()


def _alternatives(options: Iterable[str]) -> str:
    return " | ".join(options)


def _sequence(element: str, separator: str, opener: str, closer: str) -> str:
    """opener, zero or more elements with separators, closer."""
    return f"{opener} ( {element} ( {separator} {element} )* )? {closer}"


class _Rules:
    """Rules in order of first definition (root first)."""

    def __init__(self):
        self.rules: dict[str, str] = {}

    def add(self, name: str, body: str) -> str:
        self.rules.setdefault(name, body)
        return name

    def text(self) -> str:
        return "".join(f"{name} ::= {body}\n" for name, body in self.rules.items())


# JSON: strings without quote, backslash, bracket, brace or control character, or with JSON's
# escapes (module docstring: why no bracket or brace).
_JSON_COMMON = {
    "ws": '" "?',
    "json-char": '[^"\\\\\\[\\]{}\\x00-\\x1f] | "\\\\" ["\\\\/bfnrt] | "\\\\u" [0-9a-fA-F]{4}',
    "json-text": '"\\"" json-char* "\\""',
    "json-list": '"[" ws ( json-text ( "," ws json-text )* )? ws "]"',
}


def _json_value(rules: _Rules, kind, vocabulary: Vocabulary | None) -> str:
    if kind == "list":
        return "json-list"
    if isinstance(kind, tuple):
        return "( " + _alternatives(_literal(json.dumps(c)) for c in kind) + " )"
    if kind == "medical" and vocabulary is not None:
        return rules.add("json-medical", _alternatives(_literal(json.dumps(v))
                                                        for v in sorted(vocabulary)))
    return "json-text"


def _json_key(key: str) -> str:
    return _literal(json.dumps(key) + ":")


def _json_label(rules: _Rules, schema: LabelSchema, vocabulary: Vocabulary | None) -> str:
    """Rules of a JSON label list (json.dumps spacing, or none); returns the list rule."""
    for name, body in _JSON_COMMON.items():
        rules.add(name, body)
    slot_rules = []
    for slot in schema.slots:
        pairs = [f"{_json_key(a)} ws {_json_value(rules, kind, vocabulary)}"
                 for a, kind in slot.attributes.items()]
        if slot.checks:
            check_type = "( " + _alternatives(_literal(json.dumps(t)) for t in slot.checks) + " )"
            check = rules.add(_name("json-check", slot.key),
                              f'"{{" ws {_json_key("type")} ws {check_type} '
                              f'( "," ws {_json_key("values")} ws json-list )? ws "}}"')
            pairs.append(f"{_json_key('checks')} ws "
                         + _sequence(check, '"," ws', '"[" ws', 'ws "]"'))
        pair = rules.add(_name("json-pair", slot.key), _alternatives(pairs))
        entry = rules.add(_name("json-entry", slot.key), _sequence(pair, '"," ws', '"{" ws', 'ws "}"'))
        slot_rules.append(f"{_json_key(slot.key)} ws " + _sequence(entry, '"," ws', '"[" ws', 'ws "]"'))
    slot_rule = rules.add("json-slot", _alternatives(slot_rules))
    head = "( " + _alternatives(_literal(json.dumps(h)) for h in schema.heads) + " )"
    if schema.slots_key is not None:
        slots = _sequence(slot_rule, '"," ws', '"{" ws', 'ws "}"')
        item = (f'"{{" ws {_json_key(schema.head)} ws {head} '
                f'( "," ws {_json_key(schema.slots_key)} ws {slots} )? ws "}}"')
    else:
        item = f'"{{" ws {_json_key(schema.head)} ws {head} ( "," ws json-slot )* ws "}}"'
    rules.add("json-item", item)
    return rules.add("json-label", '"[" ws json-item ( "," ws json-item )* ws "]"')


# Spans: values without the grammar's delimiters (spans.RESERVED, `|`, `<` of the markers).
_SPAN_COMMON = {
    "sp": '" "?',
    "span-char": '[^=#()@\\[\\]|<\\x00-\\x1f ]',
    "span-text": '( span-char+ ( " " span-char+ )* )?',
    "span-list": 'span-text ( sp "|" sp span-text )*',
}


def _span_value(rules: _Rules, kind, vocabulary: Vocabulary | None) -> str:
    if kind == "list":
        return "span-list"
    if isinstance(kind, tuple):
        return "( " + _alternatives(_literal(c) for c in kind) + " )"
    if kind == "medical" and vocabulary is not None:
        values = sorted(v for v in vocabulary if span_safe(v))
        return rules.add("span-medical", _alternatives(_literal(v) for v in values) or '""')
    return "span-text"


def span_safe(value: str) -> bool:
    """Whether the span grammar can carry `value` (the vocabulary values it cannot are left out)."""
    return value == value.strip() and not any(c in value for c in "=#()@[]|<\n")


def _span_label(rules: _Rules, schema: LabelSchema, vocabulary: Vocabulary | None) -> str:
    for name, body in _SPAN_COMMON.items():
        rules.add(name, body)
    slot_rules = []
    for slot in schema.slots:
        pairs = [f"{_literal(a + '=')} {_span_value(rules, kind, vocabulary)}"
                 for a, kind in slot.attributes.items()]
        pairs += [f"{_literal(f'{CHECK_TYPE_KEY}={t}')} ( sp \"#\" sp "
                  f"{_literal(t + VALUES_SUFFIX + '=')} span-list )?" for t in slot.checks]
        pair = rules.add(_name("span-pair", slot.key), _alternatives(pairs))
        entry = rules.add(_name("span-entry", slot.key),
                          _sequence(pair, 'sp "#" sp', '"(" sp', 'sp ")"'))
        slot_rules.append(f'{_literal(f"[{slot.key}]")} ( " " {entry} )*')
    rules.add("span-slot", _alternatives(slot_rules))
    heads = _alternatives(_literal(f"@{h}@") for h in schema.heads)
    rules.add("span-item", f'( {heads} ) ( " " span-slot )*')
    return rules.add("span-label", 'span-item ( " " span-item )*')


def grammar(fmt: str, task: Task, vocabulary: Vocabulary | None = None) -> str | None:
    """The EBNF of `fmt`'s answer to `task`; None where the answer is free text (NLG of the
    span families and of in-context models)."""
    if fmt not in FORMATS:
        raise UsageError(f"unknown output format {fmt!r}: one of {', '.join(FORMATS)}")
    rules = _Rules()
    rules.add("root", "")
    if not task.structured:
        if fmt == "chat":
            rules.rules["root"] = f'{_literal(chat.ANSWER_OPEN + " ")} [^\\[]* {_literal(chat.ANSWER_CLOSE)}'
        elif fmt == "pptod":
            sos, eos = task.span_column.markers
            rules.rules["root"] = f'{_literal(sos)} [^<]* {_literal(eos)}'
        else:
            return None
        return rules.text()
    schema = label_schema(task, status_attributes=fmt == "fewshot")
    if fmt in ("chat", "fewshot"):
        label = _json_label(rules, schema, vocabulary)
        opener, closer = _literal(chat.ANSWER_OPEN + " "), _literal(" " + chat.ANSWER_CLOSE)
        rules.rules["root"] = label if fmt == "fewshot" else f"{opener} {label} {closer}"
    else:
        label = _span_label(rules, schema, vocabulary)
        if fmt == "pptod":
            sos, eos = task.span_column.markers
            label = f'{_literal(sos)} " " {label} sp {_literal(eos)}'
        rules.rules["root"] = label
    return rules.text()


def json_schema(task: Task, vocabulary: Vocabulary | None = None) -> dict | None:
    """The in-context answer (`fewshot` format) as a JSON schema; None for NLG (free text)."""
    if not task.structured:
        return None
    schema = label_schema(task, status_attributes=True)

    def value(kind) -> dict:
        if kind == "list":
            return {"type": "array", "items": {"type": "string"}}
        if isinstance(kind, tuple):
            return {"enum": list(kind)}
        if kind == "medical" and vocabulary is not None:
            return {"enum": sorted(vocabulary)}
        return {"type": "string"}

    def entry(slot: SlotSchema) -> dict:
        properties = {a: value(kind) for a, kind in slot.attributes.items()}
        if slot.checks:
            properties["checks"] = {"type": "array", "items": {
                "type": "object", "required": ["type"], "additionalProperties": False,
                "properties": {"type": {"enum": list(slot.checks)},
                               "values": {"type": "array", "items": {"type": "string"}}}}}
        return {"type": "array", "items": {"type": "object", "properties": properties,
                                           "additionalProperties": False}}

    slots = {slot.key: entry(slot) for slot in schema.slots}
    item: dict = {"type": "object", "required": [schema.head], "additionalProperties": False,
                  "properties": {schema.head: {"enum": list(schema.heads)}}}
    if schema.slots_key is not None:
        item["properties"][schema.slots_key] = {"type": "object", "properties": slots,
                                                "additionalProperties": False}
    else:
        item["properties"].update(slots)
    return {"type": "array", "items": item, "minItems": 1}
