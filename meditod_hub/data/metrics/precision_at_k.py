"""POL Precision@K (docs/format.md, "Metrics"): is a predicted action one the doctor takes within K turns?

Per dialogue, turn i scores 1 if its predicted tuple set matches the gold of some turn
j in [i, min(i + K, n) - 1], else 0; P@K is the mean over *all* turns (none skipped).
"inf" means any remaining turn of the dialogue. Modes:

* `exact` (the authors' code, default mode `all`): set equality of all tuples;
* `exact_medical` (the authors' `canon_only`): set equality of the medical tuples (both sides);
* `medical_present` (the paper's prose: "the medical attributes predicted are present in the
  gold actions within the next K turns"): every predicted medical tuple occurs in the union
  of the window's gold medical tuples; a prediction with no medical tuple scores 0.

No judge is used (as upstream). Each turn's smallest qualifying distance j - i is found once,
so all K come from one pass.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Sequence

from meditod_hub.data.metrics.tuples import Tuples, pol_tuples, unroll_gold, unroll_predictions

MODES = ("exact", "exact_medical", "medical_present")
PAPER_KS = (1, 4, 8, None)  # None = infinity


def _key(k: int | None) -> str:
    return "inf" if k is None else str(k)


def _exact_distances(gold: list[frozenset], pred: list[frozenset]) -> list[int | None]:
    positions: dict[frozenset, list[int]] = defaultdict(list)
    for j, tuples in enumerate(gold):
        positions[tuples].append(j)
    out = []
    for i, tuples in enumerate(pred):
        js = positions.get(tuples, [])
        at = bisect.bisect_left(js, i)
        out.append(js[at] - i if at < len(js) else None)
    return out


def _present_distances(gold: list[frozenset], pred: list[frozenset]) -> list[int | None]:
    out = []
    for i, tuples in enumerate(pred):
        seen: set = set()
        distance = None
        for j in range(i, len(gold) if tuples else i):
            seen |= gold[j]
            if tuples <= seen:
                distance = j - i
                break
        out.append(distance)
    return out


def precision_at_k_tuples(gold: Sequence[Tuples], predicted: Sequence[Tuples],
                          dialogue_ids: Sequence[str], ks: Sequence[int | None] = PAPER_KS,
                          mode: str = "exact") -> dict[str, float]:
    """P@K per K (keys "1", "4", ..., "inf") from unrolled tuples, turns in dialogue order."""
    if mode not in MODES:
        raise ValueError(f"unknown Precision@K mode {mode!r}; choose one of {', '.join(MODES)}")
    view = (lambda t: t.all) if mode == "exact" else (lambda t: t.medical)
    find = _present_distances if mode == "medical_present" else _exact_distances
    by_dialogue: dict[str, list[int]] = defaultdict(list)
    for index, did in enumerate(dialogue_ids):
        by_dialogue[did].append(index)
    distances: list[int | None] = []
    for indices in by_dialogue.values():
        distances += find([view(gold[i]) for i in indices], [view(predicted[i]) for i in indices])
    n = len(distances)
    return {_key(k): (sum(d is not None and (k is None or d < k) for d in distances) / n if n else 0.0)
            for k in ks}


def pol_precision_at_k(gold_labels: Sequence[list], predictions: Sequence[list | None],
                       dialogue_ids: Sequence[str], ks: Sequence[int | None] = PAPER_KS,
                       mode: str = "exact") -> dict[str, float]:
    """P@K from action labels; a prediction that does not parse is an empty set."""
    gold = unroll_gold(gold_labels, pol_tuples, None)
    pred, _ = unroll_predictions(predictions, pol_tuples)
    return precision_at_k_tuples(gold, pred, dialogue_ids, ks, mode)
