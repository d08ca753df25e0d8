"""Local generation under a grammar: `Constraint`, compiled by xgrammar into a logits processor.

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

Apart from the grammars and the served request because only this needs torch, xgrammar and the
model's tokenizer.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

from meditod_hub.data.tasks import TASKS, Task
from meditod_hub.models.constrained.grammars import grammar
from meditod_hub.models.constrained.vocabulary import Vocabulary
from meditod_hub.models.formats.chat import ANSWER_CLOSE

CLOSING_RESERVE = 32  # tokens before the budget's end where the processor steers to the end


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
    if fmt == "pptod":  # every task's closing span marker
        markers = tuple(dict.fromkeys(t.span_column.markers[1] for t in TASKS.values()))
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
