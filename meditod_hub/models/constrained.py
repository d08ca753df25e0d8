"""Constrained decoding: every NLU and POL output parses and stays inside CMAS.

The output language of each family format is small and fully known from `cmas`: intents, slot
keys (with their status prefixes), the attributes of each slot, action types, action slots and
check types. Each structured task's `language` (`meditod_hub.data.tasks.language`) reads them at
call time (a new slot or attribute needs no edit here); `label_schema` hands them over and three
renderers write them in each format's concrete syntax:

| format  | families              | NLU / POL answer                             | NLG                       |
| ------- | --------------------- | -------------------------------------------- | ------------------------- |
| chat    | llama                 | `[answer] <JSON list> [done]`                | `[answer] <text> [done]`  |
| span    | flan-t5, biogpt       | the span grammar without markers             | free                      |
| pptod   | pptod                 | the span grammar inside `<sos_b>`/`<sos_a>`  | `<sos_r> <text> <eos_r>`  |
| fewshot | served in-context LLM | a JSON list (NLU: status as an attribute)    | free                      |

Grammars are EBNF in the GBNF dialect, which xgrammar (here, vLLM, SGLang), llama.cpp's server
and llguidance (`gbnf_to_lark`) all read; `json_schema` gives the fewshot answer as a JSON schema
for servers that take only that (OpenAI, TGI). Non-medical values are free text that cannot break
the structure (no quote, bracket, brace or control character in JSON, no span delimiter in spans:
no MediTOD label holds one, and a bracket inside a value would let the chat format's `[done]`
marker, or closing characters that close nothing, into a string). The head
`value` of a medical slot (the UMLS-canonical concept) is one of a `Vocabulary` when one is given
(`training_vocabulary`: every such value of a training split; `read_vocabulary`: a user file,
one value per line or a JSON list), otherwise free text. Keys may come in any order and attributes repeat (a
fixed order would reject answers whose keys follow the data's order, not cmas'), so the grammar
accepts every answer that parses and validates: a model whose greedy output already does so is
not changed by the constraint. An answer holds at least one item (every patient line has an
intent, every doctor turn an action: no MediTOD label is empty).

Local generation masks the logits at each step with xgrammar (`GrammarProcessor`), chosen by
measurement (`bench/bench_constrained.py`, the gold answers walked token by token, tiny Llama
tokenizer): a mask in 3-15 us (median) against llguidance's 26-94 us, whose p99 reaches 24 ms where
xgrammar's stays near 0.1 ms (one 2 ms outlier); compile 7-135 ms against 24-222 ms; and it reads
the GBNF the servers get, where llguidance needs a Lark translation (`gbnf_to_lark`) that rejected
gold PPTOD answers. outlines' CFG path runs on llguidance. xgrammar is also what vLLM and SGLang
run, so local and served constraints behave alike. Its cost: on Linux it installs triton (~1 GB);
a 128k vocabulary takes seconds to index once per tokenizer (cached for the process).

A grammar bounds what is written, not how long: an undertrained model can open value after value
until `max_new_tokens` cuts it off. In the last `CLOSING_RESERVE` tokens of the budget the
processor therefore steers to the end: a stop token where the grammar allows one, else tokens made
only of closing characters (`"`, `]`, `}`, `)`, the closing marker), else any token the grammar
allows. Outputs that end earlier are never touched by this.
"""

from __future__ import annotations

import hashlib
import json
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from meditod_hub.data.dataset import load_split
from meditod_hub.data.tasks import LABELLED_TASK_NAMES, LABELLED_TASKS, Task, spans
from meditod_hub.data.tasks.language import LabelSchema, SlotSchema
from meditod_hub.data.tasks.spans import CHECK_TYPE_KEY, VALUES_SUFFIX
from meditod_hub.endpoint import AZURE_SUFFIXES, endpoint_host
from meditod_hub.errors import UsageError
from meditod_hub.models.formats import chat
from meditod_hub.models.formats.chat import ANSWER_CLOSE

FORMATS = ("chat", "span", "pptod", "fewshot")
CLOSING_RESERVE = 32  # tokens before the budget's end where the processor steers to the end
VOCABULARY_DEFAULT = "train"  # `--vocabulary`: the training split's values
VOCABULARY_FREE = "none"      # `--vocabulary none`: medical values are free text too

Vocabulary = frozenset  # canonical medical values (lowercase); None where values are free


# --- the language, from cmas (each structured task's `language`) -------------------------------

def label_schema(task: Task, status_attributes: bool = False) -> LabelSchema:
    """The CMAS language of `task`'s labels, read from cmas now. `status_attributes`: NLU slots
    keyed by base slot with the polarity as a `status` attribute (the in-context answer)."""
    if not task.structured:
        raise UsageError(f"task {task.name!r} has no structured labels to constrain "
                         f"({' or '.join(LABELLED_TASK_NAMES)})")
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


def training_vocabulary(data: str) -> Vocabulary:
    """Every canonical medical value of the built dataset's training split (NLU and POL labels)."""
    values = set()
    for task in LABELLED_TASKS:
        values.update(medical_values(task, (row[task.target_column]
                                            for row in load_split(data, task.name, "train"))))
    return frozenset(v.lower() for v in values if v.strip())


# A vocabulary file: what it may hold, and what it is refused with.
VOCABULARY_EXPECTED = ('expected one canonical medical value per line (`#` comments), a JSON '
                       'list of strings, or {"values": [...]} as `meditod annotate` saves '
                       'vocabulary.json')
VALUE_MAX_CHARS = 100         # a canonical name is a short phrase: a longer line is prose
MARKUP = frozenset('`|<>[]{}=*"\t')  # Markdown, HTML, code, tables: in no medical name


def read_vocabulary(path: str | Path) -> Vocabulary:
    """A vocabulary file, checked line by line (or item by item, JSON), so that a README or a
    broken JSON file is refused with its first bad line rather than read as medical values."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read the vocabulary ({type(exc).__name__}): "
                         f"{VOCABULARY_EXPECTED}") from None
    if text.lstrip()[:1] in ("[", "{"):
        entries = [(f"item {n}", v) for n, v in enumerate(_json_vocabulary(path, text), 1)]
    else:
        entries = [(f"line {n}", line) for n, line in enumerate(text.splitlines(), 1)
                   if line.strip() and not line.lstrip().startswith("#")]
    for where, value in entries:
        if len(value.strip()) > VALUE_MAX_CHARS or MARKUP & set(value):
            raise UsageError(f"{path}, {where}: not a canonical medical value (a long line, or "
                             f"markup); {VOCABULARY_EXPECTED}")
    values = frozenset(v.strip().lower() for _, v in entries if v.strip())
    if not values:
        raise UsageError(f"{path}: the vocabulary is empty: {VOCABULARY_EXPECTED}")
    return values


def _json_vocabulary(path: Path, text: str) -> list[str]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}: invalid JSON at line {exc.lineno} ({exc.msg}); "
                         f"{VOCABULARY_EXPECTED}") from None
    except RecursionError:
        raise UsageError(f"{path}: JSON nested too deeply; {VOCABULARY_EXPECTED}") from None
    values = data.get("values") if isinstance(data, dict) else data
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise UsageError(f"{path}: JSON, but not a list of strings; {VOCABULARY_EXPECTED}")
    return values


def resolve_vocabulary(choice: str | None, data: str | None) -> Vocabulary | None:
    """`--vocabulary`: `train` (the training split of `data`), `none` (free) or a file."""
    if choice in (None, VOCABULARY_FREE):
        return None
    if choice == VOCABULARY_DEFAULT:
        if data is None:
            raise UsageError("--vocabulary train needs --data (a built dataset with a train split)")
        return training_vocabulary(data)
    return read_vocabulary(choice)


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


# --- the constraint of one family and task --------------------------------------------------

# Characters that close a structure, per format (NLG has none: its text ends at its marker).
CLOSING_CHARACTERS = {"chat": '"]}', "span": ")", "pptod": ")", "fewshot": '"]}'}


@dataclass(frozen=True)
class Constraint:
    """What constrained decoding enforces on one format's answers to one task."""

    fmt: str
    task: Task
    grammar: str | None               # None: free text (nothing to enforce)
    vocabulary_size: int | None = None  # None: medical values are free
    closing_markers: tuple[str, ...] = ()

    def logits_processor(self, tokenizer, vocab_size: int, stops: list[int],
                         max_new_tokens: int):
        """A fresh processor for one `generate` call (it keeps one matcher per row), or None
        where the answer is free text."""
        if self.grammar is None:
            return None
        closing = CLOSING_CHARACTERS[self.fmt] if self.task.structured else ""
        compiled, closers = _compiled(tokenizer, vocab_size, tuple(stops), self.grammar, closing,
                                      self.closing_markers)
        return GrammarProcessor(compiled, closers, stops, max_new_tokens)


def constraint(fmt: str, task: Task, vocabulary: Vocabulary | None = None) -> Constraint:
    text = grammar(fmt, task, vocabulary)
    markers = ()
    if fmt == "pptod":
        markers = (spans.NLU_SPAN[1], spans.ACTION_SPAN[1], spans.RESPONSE_SPAN[1])
    elif fmt == "chat":
        markers = (ANSWER_CLOSE,)
    return Constraint(fmt, task, text, None if vocabulary is None else len(vocabulary), markers)


# --- local generation: xgrammar ---------------------------------------------------------------

_TOKENIZER_INFO: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _compiled(tokenizer, vocab_size: int, stops: tuple[int, ...], text: str, closing: str,
              markers: tuple[str, ...]):
    """The compiled grammar and the closing-token mask, cached per tokenizer."""
    # deferred: torch and xgrammar are slow to import
    import torch
    import xgrammar as xgr

    cache = _TOKENIZER_INFO.setdefault(tokenizer, {})
    key = (vocab_size, stops)
    if key not in cache:
        info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab_size,
                                                  stop_token_ids=list(stops))
        cache[key] = {"info": info, "compiler": xgr.GrammarCompiler(info), "grammars": {},
                      "closers": {}}
    entry = cache[key]
    if text not in entry["grammars"]:
        entry["grammars"][text] = entry["compiler"].compile_grammar(text)
    if (closing, markers) not in entry["closers"]:
        entry["closers"][(closing, markers)] = _closing_masks(entry["info"], vocab_size, closing,
                                                              markers, torch)
    return entry["grammars"][text], entry["closers"][(closing, markers)]


def _closing_masks(info, vocab_size: int, closing: str, markers: tuple[str, ...], torch):
    """Tokens made only of closing characters, and tokens that begin a closing marker (by their
    bytes: a 128k vocabulary takes a fraction of a second)."""
    closing_bytes = set(closing.encode())
    marker_bytes = [m.encode() for m in markers]
    special = set(info.special_token_ids)
    characters, marker_starts = [], []
    for token_id, raw in enumerate(info.decoded_vocab[:vocab_size]):
        piece = raw.strip()
        if not piece or token_id in special:
            continue
        if set(piece) <= closing_bytes:
            characters.append(token_id)
        if any(m.startswith(piece) for m in marker_bytes):
            marker_starts.append(token_id)
    masks = torch.zeros(2, vocab_size, dtype=torch.bool)
    masks[0, characters] = True
    masks[1, marker_starts] = True
    return masks[0], masks[1]


class GrammarProcessor:
    """A transformers logits processor: the grammar's mask at every step, one matcher per row;
    in the budget's last `CLOSING_RESERVE` tokens, steered to the end (module docstring)."""

    def __init__(self, compiled, closers: tuple, stops: list[int], max_new_tokens: int,
                 reserve: int = CLOSING_RESERVE):
        self.compiled = compiled
        self.closers = closers
        self.stops = list(stops)
        self.max_new_tokens = max_new_tokens
        self.reserve = reserve
        self.matchers = None
        self.start = 0

    def __call__(self, input_ids, scores):
        # deferred: torch and xgrammar are slow to import
        import torch
        import xgrammar as xgr

        if self.matchers is None:
            self.matchers = [xgr.GrammarMatcher(self.compiled) for _ in range(input_ids.shape[0])]
            self.live = [True] * len(self.matchers)
            self.bitmask = xgr.allocate_token_bitmask(len(self.matchers), scores.shape[-1])
            self.start = input_ids.shape[1]
        else:
            for i, matcher in enumerate(self.matchers):
                if self.live[i] and not matcher.is_terminated():
                    # a rejected token (only where every token was masked) frees the row
                    self.live[i] = matcher.accept_token(int(input_ids[i, -1]))
        xgr.reset_token_bitmask(self.bitmask)
        for i, matcher in enumerate(self.matchers):
            if self.live[i] and not matcher.is_terminated():
                matcher.fill_next_token_bitmask(self.bitmask, i)
        xgr.apply_token_bitmask_inplace(scores, self.bitmask.to(scores.device))
        if input_ids.shape[1] - self.start >= self.max_new_tokens - self.reserve:
            self._close(scores, torch)
        return scores

    def _close(self, scores, torch) -> None:
        """Per row: a stop token if allowed, else closing characters, else a closing marker's
        start, else whatever the grammar allows."""
        characters, marker_starts = (mask.to(scores.device) for mask in self.closers)
        stops = torch.zeros_like(characters)
        stops[[s for s in self.stops if s < len(stops)]] = True
        for i, matcher in enumerate(self.matchers):
            if not self.live[i] or matcher.is_terminated():
                continue
            allowed = scores[i] > float("-inf")
            for preferred in (allowed & stops, allowed & characters, allowed & marker_starts):
                if preferred.any():
                    scores[i].masked_fill_(~preferred, float("-inf"))
                    break


# --- served models: the server's structured-output request ----------------------------------

SERVER_KINDS = ("vllm", "sglang", "tgi", "llama.cpp", "openai")
OPENAI_WRAPPER = "answer"  # OpenAI's json_schema needs an object at the root


def server_kind_for(base_url: str, given: str | None) -> str:
    """`--server_kind`, or OpenAI's own hosts recognised; any other server must be named (vLLM,
    SGLang, TGI and llama.cpp all answer at the same OpenAI routes)."""
    if given:
        return given
    host = endpoint_host(base_url).split(":")[0]
    if host == "api.openai.com" or host.endswith(AZURE_SUFFIXES):
        return "openai"
    raise UsageError(f"--constrained at {endpoint_host(base_url)} needs --server_kind (one of "
                     f"{', '.join(SERVER_KINDS)}): each server takes the grammar in its own field")


@dataclass(frozen=True)
class ServedConstraint:
    """The grammar of `fmt`'s answer to `task`, as the request fields `server_kind` enforces:

    * vLLM: `structured_outputs.grammar` (the GBNF); SGLang: `ebnf`; llama.cpp: `grammar`;
    * TGI and OpenAI take a JSON schema only, so only the in-context (`fewshot`) answer, which is
      plain JSON: TGI as `response_format` `json_object`, OpenAI as `json_schema` wrapped in an
      object (`OPENAI_WRAPPER`: OpenAI needs an object at the root), unwrapped by `answer`.
    Anything else is a usage error, raised when the constraint is made (before any request).
    """

    server_kind: str
    fmt: str
    task: Task
    vocabulary: Vocabulary | None = None
    fields: dict | None = field(default=None, init=False, compare=False, hash=False)

    def __post_init__(self):
        object.__setattr__(self, "fields", self._fields())

    def _fields(self) -> dict | None:
        if self.server_kind not in SERVER_KINDS:
            raise UsageError(f"unknown --server_kind {self.server_kind!r}: one of "
                             f"{', '.join(SERVER_KINDS)}")
        text = grammar(self.fmt, self.task, self.vocabulary)
        if text is None:
            return None
        if self.server_kind == "vllm":
            return {"structured_outputs": {"grammar": text}}
        if self.server_kind == "sglang":
            return {"ebnf": text}
        if self.server_kind == "llama.cpp":
            return {"grammar": text}
        schema = json_schema(self.task, self.vocabulary) if self.fmt == "fewshot" else None
        if schema is None:
            raise UsageError(f"a {self.server_kind} server takes a JSON schema, not a grammar, and "
                             f"the {self.fmt} format's {self.task.name} answer is not plain JSON: serve "
                             "the model with vLLM, SGLang or llama.cpp for --constrained, or drop "
                             "--constrained")
        if self.server_kind == "tgi":
            return {"response_format": {"type": "json_object", "value": schema}}
        return {"response_format": {"type": "json_schema", "json_schema": {
            "name": f"meditod_{self.task.name}", "schema": {
                "type": "object", "properties": {OPENAI_WRAPPER: schema},
                "required": [OPENAI_WRAPPER], "additionalProperties": False}}}}

    def extra_body(self) -> str | None:
        """The fields as JSON text (part of the answer cache's key)."""
        return None if self.fields is None else json.dumps(self.fields, sort_keys=True)

    def answer(self, text: str) -> str:
        """The answer in the format's own syntax (OpenAI's unwrapped); text that is not the
        wrapper object is passed on as it is, and fails to parse (counted)."""
        if self.server_kind != "openai" or self.fields is None:
            return text
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            return text
        return json.dumps(value[OPENAI_WRAPPER]) \
            if isinstance(value, dict) and OPENAI_WRAPPER in value else text

    def describe(self) -> dict:
        """For run_info.json: the setting and a hash of what was sent (not the grammar itself)."""
        body = self.extra_body()
        return {"constrained": True, "format": self.fmt, "server_kind": self.server_kind,
                "vocabulary_values": None if self.vocabulary is None else len(self.vocabulary),
                "request_fields_sha256": hashlib.sha256(body.encode()).hexdigest() if body else None}
