"""Cascaded inputs: rebuild POL and NLG rows from upstream *predictions* instead of gold.

The authors fed every model gold inputs (reference 2.2); the paper describes a pipeline. These
pure functions give the pipeline reading: POL rows whose `state` is the fold
(`meditod_hub.state`) of the *predicted* NLU labels of every patient utterance before the doctor
line, and NLG rows whose `actions` are the predicted ones. Predictions map example ids
(`<dialogue_id>-<uttr_id>`) to parsed labels, None for one that did not parse; a prediction
that did not parse or cannot be unrolled contributes nothing (no state change, no action).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..state import DialogueState
from .predictions import PredictionsError, name_ids
from .tuples import MalformedLabel, nlu_tuples, pol_tuples


def _usable(label, unroll) -> bool:
    """Whether a predicted label has a scorable structure (None does not)."""
    try:
        unroll(label)
    except MalformedLabel:
        return False
    return True


def _require(ids: list[str], predictions: Mapping, what: str) -> None:
    missing = [i for i in ids if i not in predictions]
    if missing:
        raise PredictionsError(f"no predicted {what} for {len(missing)} id(s): {name_ids(missing)}")


def cascade_pol_rows(pol_rows: Sequence[dict],
                     nlu_predictions: Mapping[str, list | None]) -> list[dict]:
    """POL (or NLG) rows whose `state` is folded from predicted NLU labels."""
    patient_ids = [[f"{row['dialogue_id']}-{c['uttr_id']}" for c in row["context"]
                    if c["speaker"] == "patient"] for row in pol_rows]
    _require(sorted({i for ids in patient_ids for i in ids}), nlu_predictions, "NLU")
    states: dict[str, DialogueState] = {}
    folded: dict[str, set[str]] = {}
    out: list[dict | None] = [None] * len(pol_rows)
    for index in sorted(range(len(pol_rows)), key=lambda i: (pol_rows[i]["dialogue_id"],
                                                            pol_rows[i]["uttr_id"])):
        row = pol_rows[index]
        state = states.setdefault(row["dialogue_id"], DialogueState())
        done = folded.setdefault(row["dialogue_id"], set())
        for pid in patient_ids[index]:
            if pid not in done:
                label = nlu_predictions[pid]
                state.update(label if _usable(label, nlu_tuples) else [])
                done.add(pid)
        out[index] = {**row, "state": state.render()}
    return out


def cascade_nlg_rows(nlg_rows: Sequence[dict],
                     pol_predictions: Mapping[str, list | None]) -> list[dict]:
    """NLG rows whose `actions` (and `action_types`) are the predicted actions."""
    _require([row["id"] for row in nlg_rows], pol_predictions, "actions")
    out = []
    for row in nlg_rows:
        actions = pol_predictions[row["id"]]
        if not _usable(actions, pol_tuples):
            actions = []
        out.append({**row, "actions": actions, "action_types": [a["action"] for a in actions]})
    return out
