"""The dialogue-state fold: patient NLU labels -> cumulative patient state (docs/format.md,
"The dialogue-state rule").

Rule, verified byte-identical on all 178 patient turns of the authors' sample:
one entry per (base slot, head value); the last mention wins (status moves, attributes are
shallowly overwritten, lists replaced not unioned), an entry keeps its first-mention position
when its polarity moves, and slot keys render in the fixed CMAS order. Doctor actions and
intent-only items never change the state.
"""

from __future__ import annotations

from collections.abc import Iterable

from meditod_hub.data.cmas import BASE_SLOTS, NO_VALUE, PATIENT_SLOT_KEYS, split_slot_key


class DialogueState:
    """Mutable fold of NLU items; `render()` gives the release's `dialog_state` object."""

    def __init__(self) -> None:
        # base slot -> {head value (or NO_VALUE): [status, attrs]} in first-mention order
        self._slots: dict[str, dict[str | None, list]] = {base: {} for base in BASE_SLOTS}

    def update(self, nlu_items: Iterable[dict]) -> DialogueState:
        for item in nlu_items:
            for slot_key, entries in (item.get("slots") or {}).items():
                parsed = split_slot_key(slot_key)
                if parsed is None:  # unknown keys are reported by validation, not folded
                    continue
                known = self._slots[parsed.base]
                for entry in entries:
                    head = entry.get("value", NO_VALUE)
                    if head in known:
                        known[head][0] = parsed.status
                        known[head][1].update(_copy_entry(entry))
                    else:
                        known[head] = [parsed.status, _copy_entry(entry)]
        return self

    def render(self) -> dict[str, list[dict]]:
        out: dict[str, list[dict]] = {}
        for slot_key in PATIENT_SLOT_KEYS:
            parsed = split_slot_key(slot_key)
            entries = [_copy_entry(attrs) for status, attrs in self._slots[parsed.base].values()
                       if status == parsed.status]
            if entries:
                out[slot_key] = entries
        return out


def _copy_entry(entry: dict) -> dict:
    # entries hold strings and lists of strings: a one-level copy is a deep copy, ~10x cheaper
    return {k: list(v) if isinstance(v, list) else v for k, v in entry.items()}


def fold_states(nlu_per_turn: Iterable[list[dict]]) -> list[dict]:
    """The state after each patient turn, given the NLU items of each turn in order."""
    state = DialogueState()
    return [state.update(items).render() for items in nlu_per_turn]
