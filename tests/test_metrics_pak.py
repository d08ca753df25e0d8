"""POL Precision@K: window edges, dialogue boundaries, modes, and the reference's verified demo.

No network. Labels here are invented; the authors' sample is only read from ../shared.
"""

from __future__ import annotations

import pytest

from meditod_hub.data.metrics import pol_precision_at_k
from meditod_hub.data.release import read_release
from meditod_hub.data.tasks import view_rows


def ask(*values, check=None):
    entries = [{"value": v, **({"checks": [check]} if check else {})} for v in values]
    return [{"action": "inquire", "symptom": entries}]


def test_window_edges_and_dialogue_boundaries():
    gold_a = [ask(f"finding {i}") for i in range(10)]
    pred_a = [gold_a[3],   # distance 3: inside K=4
              gold_a[9],   # distance 8: outside K=8, inside inf
              gold_a[9],   # distance 7: inside K=8
              gold_a[0],   # only an earlier turn: never
              gold_a[8],   # distance 4: outside K=4
              gold_a[5],   # distance 0
              [],          # empty: never
              gold_a[7],   # distance 0
              gold_a[9],   # distance 1
              None]        # did not parse: never
    gold = [ask("elsewhere")] + gold_a
    pred = [gold_a[9]] + pred_a  # dialogue b's turn must not see dialogue a's later turns
    dialogue_ids = ["b"] + ["a"] * 10
    assert pol_precision_at_k(gold, pred, dialogue_ids) == pytest.approx(
        {"1": 2 / 11, "4": 4 / 11, "8": 6 / 11, "inf": 7 / 11})


def test_custom_ks_and_unknown_mode():
    gold = [ask("a"), ask("b")]
    assert pol_precision_at_k(gold, [gold[1], gold[1]], ["d", "d"], ks=(1, 2)) == {"1": 0.5, "2": 1.0}
    with pytest.raises(ValueError, match="mode"):
        pol_precision_at_k(gold, gold, ["d", "d"], mode="loose")


def test_modes_differ_on_non_medical_and_partial_predictions():
    dry = {"type": "characteristics", "values": ["dry"]}
    wet = {"type": "characteristics", "values": ["wet"]}
    gold = [ask("cough", check=dry), ask("fever")]
    pred = [ask("cough", check=wet), ask("fever")]
    ids = ["d", "d"]
    assert pol_precision_at_k(gold, pred, ids, ks=(1,))["1"] == 0.5  # `dry` vs `wet` counts
    assert pol_precision_at_k(gold, pred, ids, ks=(1,), mode="exact_medical")["1"] == 1.0

    both = ask("cough", "fever")  # one turn asking what the doctor asks over two turns
    assert pol_precision_at_k(gold, [both, both], ids, ks=(1, 2)) == {"1": 0.0, "2": 0.0}
    present = pol_precision_at_k(gold, [both, both], ids, ks=(1, 2), mode="medical_present")
    assert present == {"1": 0.0, "2": 0.5}  # turn 0 sees both within 2 turns; turn 1 not cough


def test_reference_demo_next_turn_gold(sample_release):
    """Reference 4.2 (verified): next turn's gold as prediction -> P@1 0.056, P@4 1.0."""
    release = read_release(sample_release)
    rows = [row for split in ("train", "validation", "test") for d in release.splits[split]
            for row in view_rows("pol", d, release.dialogues[d])]
    gold = [r["actions"] for r in rows]
    ids = [r["dialogue_id"] for r in rows]
    # the last turn of a dialogue has no next turn: it predicts its own gold
    shifted = [rows[i + 1]["actions"] if i + 1 < len(rows) and ids[i + 1] == ids[i] else gold[i]
               for i in range(len(rows))]
    assert pol_precision_at_k(gold, gold, ids) == {"1": 1.0, "4": 1.0, "8": 1.0, "inf": 1.0}
    demo = pol_precision_at_k(gold, shifted, ids)
    assert round(demo["1"], 3) == 0.056
    assert demo["4"] == 1.0
