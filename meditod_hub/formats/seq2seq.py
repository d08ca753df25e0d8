"""Flan-T5, BioGPT and PPTOD inputs and targets (reference 2.2, 3.1, 3.2).

An input is a task prefix (tokenised apart, as upstream does) and a body; `source_parts` keeps
the body's pieces apart so `fit.fit_to_budget` can cut the context, and only the context, from
the left. Targets use the span grammar of `pptod` (markers for PPTOD only).

| family  | task | body                                                                 | target               |
| ------- | ---- | -------------------------------------------------------------------- | -------------------- |
| flan-t5 | nlu  | `<context lines>`                                                    | NLU span             |
| flan-t5 | pol  | `dst: <state span> history: <last 4 context lines>`                  | action span          |
| flan-t5 | nlg  | `actions: <action span> history: <last 4 context lines>`             | doctor text          |
| biogpt  | any  | as flan-t5, then the trigger `answer:`                               | as flan-t5           |
| pptod   | nlu  | `<sos_context> <sos_u> p <eos_u> <sos_r> d <eos_r> .. <eos_context>` | `<sos_b> .. <eos_b>` |
| pptod   | pol  | the same, then `<sos_b> <state span> <eos_b>`                        | `<sos_a> .. <eos_a>` |
| pptod   | nlg  | the same, then `<sos_a> <action span> <eos_a>`                       | `<sos_r> d <eos_r>`  |

Deliberate deviations from the released code, following the paper (POL sees the dialogue state,
NLG the action; gold ones, as everywhere upstream):
1. Flan-T5 POL: upstream feeds `dst: NONE` (the pptod `bspn` field is the literal NONE). Here the
   real state, linearised with the span grammar (`pptod.serialise_state`) rather than JSON: the
   same grammar as the targets, fewer tokens, and T5's vocabulary has no `{`/`}`. An empty state
   is `NONE`.
2. Flan-T5 NLG: upstream's `use_aspn` flag is tested as `use_dspn`, so no action reaches the
   model. Here the branch the flag meant: `actions: <action span> history: <last 4 lines>`, with
   its prefix kept verbatim (upstream words it "... to dialog act:").
3. BioGPT POL / NLG: upstream configs give the history only; here the Flan-T5 bodies (+ trigger),
   so every family sees what the paper says. Revert by editing PREFIXES / `_head`.
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

from dataclasses import dataclass

from . import ParseResult, check_task, context_lines, context_utterances, row_field
from .pptod import (ACTION_SPAN, CONTEXT_SPAN, NLU_SPAN, RESPONSE_SPAN, USER_SPAN, parse_actions,
                    parse_nlu, serialise_actions, serialise_nlu, serialise_state, unwrap, wrap)

FAMILIES = ("flan-t5", "biogpt", "pptod")

PREFIXES: dict[str, dict[str, str]] = {
    "flan-t5": {"nlu": "convert dialog to dialog state:",
                "pol": "convert dialog state and history to dialog act:",
                "nlg": "convert dialog actions and history to dialog act:"},
    "pptod": {"nlu": "translate dialogue to belief state:",
              "pol": "translate dialogue to dialogue action:",
              "nlg": "translate dialogue to system response:"},
}
PREFIXES["biogpt"] = PREFIXES["flan-t5"]

HISTORY_WINDOW = 4          # context lines after `dst:` / `actions:` (upstream's branch)
BIOGPT_TRIGGER = "answer:"  # upstream appends " answer: "; the spaces are not tokens
EMPTY = "NONE"              # an empty state / action list in a flan-t5 / biogpt body
# Upstream's fixes for BioGPT's Moses detokenisation of a span (+ the slash, deviation 6).
BIOGPT_REPAIRS = ((" _ ", "_"), ("@ ", "@"), (" @", "@"), (" = ", "="), (" / ", "/"))


@dataclass(frozen=True)
class SourceParts:
    """A model input in pieces: `context` may lose lines/tokens from its left, nothing else may."""

    prefix: str
    head: str             # before the context
    context: list[str]    # oldest first, joined by single spaces
    tail: str             # after the context

    @property
    def body(self) -> str:
        return " ".join(p for p in (self.head, " ".join(self.context), self.tail) if p)


def source_parts(family: str, task: str, row: dict) -> SourceParts:
    _check(family, task)
    prefix = PREFIXES[family][task]
    if family == "pptod":
        context = [wrap(USER_SPAN if speaker == "patient" else RESPONSE_SPAN, text)
                   for speaker, text in context_utterances(row)]
        tail = " ".join(p for p in (CONTEXT_SPAN[1], _pptod_gold_span(task, row)) if p)
        return SourceParts(prefix, CONTEXT_SPAN[0], context, tail)
    lines = context_lines(row)
    tail = BIOGPT_TRIGGER if family == "biogpt" else ""
    if task == "nlu":
        return SourceParts(prefix, "", lines, tail)
    return SourceParts(prefix, _head(task, row), lines[-HISTORY_WINDOW:], tail)


def _pptod_gold_span(task: str, row: dict) -> str:
    if task == "pol":
        return wrap(NLU_SPAN, serialise_state(row_field(row, "state")))
    if task == "nlg":
        return serialise_actions(row_field(row, "actions"))
    return ""


def _head(task: str, row: dict) -> str:
    if task == "pol":
        return f"dst: {serialise_state(row_field(row, 'state')) or EMPTY} history:"
    actions = unwrap(ACTION_SPAN, serialise_actions(row_field(row, "actions")))[0]
    return f"actions: {actions or EMPTY} history:"


def source_text(family: str, task: str, row: dict) -> tuple[str, str]:
    """(task prefix, body)."""
    parts = source_parts(family, task, row)
    return parts.prefix, parts.body


def target_text(family: str, task: str, row: dict) -> str:
    _check(family, task)
    if task == "nlg":
        text = row_field(row, "response")
        return wrap(RESPONSE_SPAN, text) if family == "pptod" else text
    span, markers = ((serialise_nlu(row_field(row, "nlu")), NLU_SPAN) if task == "nlu"
                     else (serialise_actions(row_field(row, "actions")), ACTION_SPAN))
    return span if family == "pptod" else unwrap(markers, span)[0]


def parse_target(task: str, text: str, family: str | None = None) -> ParseResult:
    """A generated target -> labels (NLU/POL) or the response (NLG); markers are optional.

    `family="biogpt"` first undoes Moses detokenisation spacing in spans (lossy by nature: a value
    that really holds ` / ` or ` _ ` comes back without those spaces). Never raises on model
    output (only on an unknown task or family, which is a caller bug).
    """
    check_task(task)
    if family is not None:
        _check(family, task)
    if not isinstance(text, str):
        return ParseResult([] if task != "nlg" else "", False,
                           f"expected a string, got {type(text).__name__}")
    if task == "nlg":
        body, reason = unwrap(RESPONSE_SPAN, text)
        return ParseResult(body, reason is None, reason)
    if family == "biogpt":
        for old, new in BIOGPT_REPAIRS:
            text = text.replace(old, new)
    return (parse_nlu if task == "nlu" else parse_actions)(text)


def _check(family: str, task: str) -> None:
    if family not in FAMILIES:
        raise ValueError(f"unknown model family {family!r}; expected one of {FAMILIES}")
    check_task(task)
