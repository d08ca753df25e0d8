"""Flan-T5, BioGPT and PPTOD inputs and targets (docs/format.md, "Model formats").

An input is a task prefix (tokenised apart, as upstream does) and a body; `source_parts` keeps
the body's pieces apart so `fit.fit_to_budget` can cut it to the token budget (old context
first, then the oldest state entries, never the prefix or the target). Targets use the span
grammar (`meditod_hub.data.tasks.spans`; markers for PPTOD only) as each task names it for its
label and its input (`Task.span_column`, `Task.reads`: its key, `dst:` / `actions:`). What
differs between the three families is data, a `SpanStyle`; the family registry
(`meditod_hub.models.families`) says which family uses which.

| family  | task | body                                                      | target          |
| ------- | ---- | --------------------------------------------------------- | --------------- |
| flan-t5 | nlu  | `<context lines>`                                         | NLU span        |
| flan-t5 | pol  | `dst: <state span> history: <last 4 context lines>`       | action span     |
| flan-t5 | nlg  | `actions: <action span> history: <last 4 context lines>`  | doctor text     |
| biogpt  | any  | as flan-t5, then the trigger `answer:`                    | as flan-t5      |
| pptod   | nlu  | `<sos_context> <sos_u> p <eos_u> <sos_r> d <eos_r> ..`    | `<sos_b> ..`    |
|         |      | `.. <eos_context>`                                        | `.. <eos_b>`    |
| pptod   | pol  | the same, then `<sos_b> <state span> <eos_b>`             | `<sos_a> ..`    |
| pptod   | nlg  | the same, then `<sos_a> <action span> <eos_a>`            | `<sos_r> d ..`  |

Deliberate deviations from the released code, following the paper (POL sees the dialogue state,
NLG the action; gold ones, as everywhere upstream):
1. Flan-T5 POL: upstream feeds `dst: NONE` (the pptod `bspn` field is the literal NONE). Here the
   real state, linearised with the span grammar (`spans.serialise_state`) rather than JSON: the
   same grammar as the targets, fewer tokens, and T5's vocabulary has no `{`/`}`. An empty state
   is `NONE`.
2. Flan-T5 NLG: upstream's `use_aspn` flag is tested as `use_dspn`, so no action reaches the
   model. Here the branch the flag meant: `actions: <action span> history: <last 4 lines>`, with
   its prefix kept verbatim (upstream words it "... to dialog act:").
3. BioGPT POL / NLG: upstream configs give the history only; here the Flan-T5 bodies (+ trigger),
   so every family sees what the paper says. Revert by editing the tasks' prefixes / `source_parts`.
4. PPTOD: the fork is not released. Upstream PPTOD's prefixes and context markers, the whole
   context (`fit` cuts it), and the gold state / action as a span after the context, where
   upstream PPTOD puts its DB span.
5. Context texts are the row's own; upstream strips markers with a character-set `str.strip`.
6. BioGPT outputs: upstream repairs Moses detokenisation spacing (` _ `, `@ `, ` @`, ` = `); we
   also repair ` / ` (detokenised `a/b`), which upstream missed, so slashed values never matched.
7. BioGPT inputs open with the tokenizer's own `</s>` (its template, via `fit`), not upstream's
   hand-prepended id 0 (`<s>`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from meditod_hub.data.tasks import ParseResult, SpanColumn, Task
from meditod_hub.data.tasks.spans import CONTEXT_SPAN, RESPONSE_SPAN, USER_SPAN, wrap
from meditod_hub.models.formats import context_lines, context_utterances, row_field

HISTORY_WINDOW = 4          # context lines after `dst:` / `actions:` (upstream's branch)
LAST_TURN = 2               # the doctor's line and the patient's: cut only after the state
BIOGPT_TRIGGER = "answer:"  # upstream appends " answer: "; the spaces are not tokens
EMPTY = "NONE"              # an empty state / action list in a flan-t5 / biogpt body
# Upstream's fixes for BioGPT's Moses detokenisation of a span (+ the slash, deviation 6).
BIOGPT_REPAIRS = ((" _ ", "_"), ("@ ", "@"), (" @", "@"), (" = ", "="), (" / ", "/"))


@dataclass(frozen=True)
class SpanStyle:
    """How one span-grammar family writes its inputs and reads its outputs."""

    pptod_prefixes: bool = False                # the task's PPTOD prefix, not the authors'
    markers: bool = False                       # PPTOD: every piece inside its span markers
    trigger: str = ""                           # appended after the body (BioGPT)
    repairs: tuple[tuple[str, str], ...] = ()   # applied to a generated span before parsing


T5_STYLE = SpanStyle()
BIOGPT_STYLE = SpanStyle(trigger=BIOGPT_TRIGGER, repairs=BIOGPT_REPAIRS)
PPTOD_STYLE = SpanStyle(pptod_prefixes=True, markers=True)


@dataclass(frozen=True)
class SourceParts:
    """A model input in pieces. `fit` may cut `context` from its left and drop the oldest of the
    `state_entries` state entries (via `drop_state`); nothing else is ever cut."""

    prefix: str
    head: str             # before the context
    context: list[str]    # oldest first, joined by single spaces
    tail: str             # after the context
    state_entries: int = 0
    rebuild: Callable[[int], SourceParts] | None = field(default=None, compare=False, repr=False)

    @property
    def body(self) -> str:
        return " ".join(p for p in (self.head, " ".join(self.context), self.tail) if p)

    def drop_state(self, k: int) -> SourceParts:
        """The same input with the k oldest state entries left out."""
        return self if k == 0 or self.rebuild is None else self.rebuild(k)


def state_order(state: dict) -> list[tuple[str, int]]:
    """(slot key, index) of every state entry, oldest first: a slot's entries keep first-mention
    order, so index i of every slot is taken to come before index i + 1 of any slot."""
    longest = max((len(v) for v in state.values()), default=0)
    return [(slot, i) for i in range(longest) for slot in state if i < len(state[slot])]


def without_oldest(state: dict, k: int) -> dict:
    gone = set(state_order(state)[:k])
    kept = {slot: [e for i, e in enumerate(entries) if (slot, i) not in gone]
            for slot, entries in state.items()}
    return {slot: entries for slot, entries in kept.items() if entries}


def source_parts(style: SpanStyle, task: Task, row: dict) -> SourceParts:
    prefix = task.pptod_prefix if style.pptod_prefixes else task.authors_prefix
    given = task.reads
    if style.markers:
        context = [wrap(USER_SPAN if speaker == "patient" else RESPONSE_SPAN, text)
                   for speaker, text in context_utterances(row)]
        gold = _span(given.span_column, row_field(row, given.column)) if given else ""
        tail = " ".join(p for p in (CONTEXT_SPAN[1], gold, style.trigger) if p)
        parts = SourceParts(prefix, CONTEXT_SPAN[0], context, tail)
    elif given is None:
        parts = SourceParts(prefix, "", context_lines(row), style.trigger)
    else:
        text = given.span_column.text(row_field(row, given.column)) or EMPTY
        head = f"{given.span_key} {text} history:"
        parts = SourceParts(prefix, head, context_lines(row)[-HISTORY_WINDOW:], style.trigger)
    if given is None or not given.thinned_to_fit:  # the state: `fit` may thin it, oldest first
        return parts
    state = row_field(row, given.column)
    return SourceParts(parts.prefix, parts.head, parts.context, parts.tail,
                       len(state_order(state)),
                       lambda k: source_parts(style, task,
                                              {**row, given.column: without_oldest(state, k)}))


def target_text(style: SpanStyle, task: Task, row: dict) -> str:
    label = row_field(row, task.target_column)
    return (_span if style.markers else _text)(task.span_column, label)


def _span(column: SpanColumn, value) -> str:
    return wrap(column.markers, column.text(value))


def _text(column: SpanColumn, value) -> str:
    return column.text(value)


def parse_target(style: SpanStyle, task: Task, text: str) -> ParseResult:
    """A generated target -> labels (NLU/POL) or the response (NLG); markers are optional.

    The style's repairs first undo detokenisation spacing in spans (lossy by nature: a value that
    really holds ` / ` or ` _ ` comes back without those spaces). Never raises on model output.
    """
    if not isinstance(text, str):
        return ParseResult(task.empty_label, False, f"expected a string, got {type(text).__name__}")
    if task.structured:
        for old, new in style.repairs:
            text = text.replace(old, new)
    return task.span_column.parse(text)
