"""Token budgets for the seq2seq families: cut the context, only the context, from the left.

Flan-T5 / PPTOD: the encoder input alone must fit (`max_length` 512 upstream; labels are a
separate sequence, never cut). BioGPT: input and target share one sequence, so pass the
target's length (training) or the room kept for generation (inference: upstream's
`max_resp_length` 128). The prefix, the pieces around the context and the target are never
cut; an example they alone overflow raises `BudgetError` naming it. Callers count
`Fitted.truncated` to report how many examples lost context.

Pieces are tokenised apart without special tokens (upstream tokenises the prefix apart too),
then wrapped in the tokenizer's own special tokens (T5 appends `</s>`, BioGPT prepends `</s>`).
For T5's sentencepiece and BioGPT's Moses+BPE, which start every word afresh after a space,
this equals tokenising the joined text; build training *and* inference inputs here so any other
tokenizer sees the same ids in both.
"""

from __future__ import annotations

from dataclasses import dataclass

from .seq2seq import SourceParts

_PROBE = "a"


class BudgetError(ValueError):
    """An example that cannot fit even with all of its context removed."""


@dataclass(frozen=True)
class Fitted:
    input_ids: list[int]
    dropped: int  # context tokens cut from the left

    @property
    def truncated(self) -> bool:
        return self.dropped > 0


def fit_to_budget(tokenizer, parts: SourceParts, max_length: int, example_id: str,
                  target_length: int = 0) -> Fitted:
    """Input ids of `parts` within `max_length - target_length` tokens, special tokens included."""
    if target_length >= max_length:
        raise BudgetError(f"example {example_id}: the target alone is {target_length} tokens, "
                          f"the budget is {max_length}; raise max_length or drop the example")
    lead, trail = special_ids(tokenizer)
    prefix, head, tail, *lines = tokenizer([parts.prefix, parts.head, parts.tail, *parts.context],
                                           add_special_tokens=False)["input_ids"]
    context = [token for line in lines for token in line]
    fixed = len(lead) + len(prefix) + len(head) + len(tail) + len(trail)
    room = max_length - target_length - fixed
    if room <= 0:
        raise BudgetError(f"example {example_id}: prefix, state/action and markers ({fixed} tokens) "
                          f"plus the target ({target_length}) leave no room for context within "
                          f"{max_length} tokens")
    dropped = max(0, len(context) - room)
    return Fitted(lead + prefix + head + context[dropped:] + tail + trail, dropped)


def special_ids(tokenizer) -> tuple[list[int], list[int]]:
    """The ids the tokenizer's own template puts before and after a single sequence."""
    plain = tokenizer(_PROBE, add_special_tokens=False)["input_ids"]
    full = tokenizer(_PROBE)["input_ids"]
    for start in range(len(full) - len(plain) + 1):
        if full[start:start + len(plain)] == plain:
            return full[:start], full[start + len(plain):]
    raise ValueError("cannot locate the text inside the tokenizer's special-token template")
