"""Token budgets for the span-grammar families: what may be cut, in which order, and counted.

Flan-T5 / PPTOD: the encoder input alone must fit (labels are a separate sequence, never cut).
BioGPT: input and target share one sequence, so pass the target's length (training) or the room
kept for generation (inference: upstream's `max_resp_length`). Over budget, in this order:
1. the context is cut from the left, keeping the last turn (the doctor's line and the patient's);
2. POL: the oldest dialogue-state entries are dropped, one by one, until the last turn fits;
3. the last turn is cut from the left too.
The prefix, the trigger / closing markers and the target are never cut; an example they alone
overflow raises `BudgetError` naming it. `Fitted` counts what was cut, so callers report it.

Tokenisation follows upstream: the task prefix apart, the body as one string (context lines
joined by spaces, then the trigger), so BioGPT's Moses pre-tokeniser sees sentence ends where
upstream's did (tokenising line by line split `months.` at every line end). The head
(`dst: ... history:`), which upstream's BioGPT inputs did not have, is tokenised apart. Then the
tokenizer's own special tokens wrap the whole (T5 appends `</s>`, BioGPT prepends `</s>`).
"""

from __future__ import annotations

from dataclasses import dataclass

from meditod_hub.errors import MeditodError
from meditod_hub.models.formats.span_models import LAST_TURN, SourceParts

_PROBE = "a"


class BudgetError(MeditodError, ValueError):
    """An example that cannot fit even with all of its context removed."""


@dataclass(frozen=True)
class Fitted:
    input_ids: list[int]
    dropped: int = 0        # context tokens cut from the left
    dropped_state: int = 0  # dialogue-state entries left out (POL)

    @property
    def truncated(self) -> bool:
        return self.dropped > 0 or self.dropped_state > 0


def _ids(tokenizer, text: str) -> list[int]:
    return tokenizer(text, add_special_tokens=False)["input_ids"] if text else []


def _body_text(parts: SourceParts, context: list[str]) -> str:
    return " ".join(p for p in (" ".join(context), parts.tail) if p)


def fit_to_budget(tokenizer, parts: SourceParts, max_length: int, example_id: str,
                  target_length: int = 0) -> Fitted:
    """Input ids of `parts` within `max_length - target_length` tokens, special tokens included."""
    if target_length >= max_length:
        raise BudgetError(f"example {example_id}: the target alone is {target_length} tokens, "
                          f"the budget is {max_length}; raise max_length or drop the example")
    lead, trail = special_ids(tokenizer)
    prefix = _ids(tokenizer, parts.prefix)
    room = max_length - target_length - len(lead) - len(prefix) - len(trail)

    def assemble(p: SourceParts, keep: int | None = None, dropped_state: int = 0) -> Fitted:
        head, body = _ids(tokenizer, p.head), _ids(tokenizer, _body_text(p, p.context))
        cut = max(0, len(body) - keep) if keep is not None else 0
        return Fitted(lead + prefix + head + body[cut:] + trail, cut, dropped_state)

    def sizes(p: SourceParts) -> tuple[int, int, int]:
        """Tokens of the head, of the body, and of the body's protected end (last turn, tail)."""
        body = _body_text(p, p.context)
        protected = _body_text(p, p.context[-LAST_TURN:])
        return (len(_ids(tokenizer, p.head)), len(_ids(tokenizer, body)),
                len(_ids(tokenizer, protected)))

    head, body, protected = sizes(parts)
    if head + body <= room:
        return assemble(parts)
    if head + protected <= room:  # 1. old context only
        return assemble(parts, room - head)
    k = _smallest(parts.state_entries, lambda k: sum(sizes(parts.drop_state(k))[::2]) <= room)
    if k is not None:  # 2. the oldest state entries
        smaller = parts.drop_state(k)
        return assemble(smaller, room - len(_ids(tokenizer, smaller.head)), k)
    smallest = parts.drop_state(parts.state_entries)
    head = len(_ids(tokenizer, smallest.head))
    tail = len(_ids(tokenizer, smallest.tail))
    if head + tail > room:
        raise BudgetError(f"example {example_id}: prefix, markers and target ({max_length - room} "
                          f"tokens) plus the head and tail ({head + tail}) exceed {max_length} "
                          "tokens even without context or state; raise the budget")
    return assemble(smallest, room - head, parts.state_entries)  # 3. the last turn too


def _smallest(n: int, ok) -> int | None:
    """The smallest k in 1..n with ok(k), for a monotone ok; None if there is none."""
    low, high = 1, n
    if n == 0 or not ok(n):
        return None
    while low < high:
        middle = (low + high) // 2
        if ok(middle):
            high = middle
        else:
            low = middle + 1
    return low


def special_ids(tokenizer) -> tuple[list[int], list[int]]:
    """The ids the tokenizer's own template puts before and after a single sequence."""
    plain = tokenizer(_PROBE, add_special_tokens=False)["input_ids"]
    full = tokenizer(_PROBE)["input_ids"]
    for start in range(len(full) - len(plain) + 1):
        if full[start:start + len(plain)] == plain:
            return full[:start], full[start + len(plain):]
    raise ValueError("cannot locate the text inside the tokenizer's special-token template")
