"""Cascaded inputs: POL rows with states folded from predicted NLU, NLG rows with predicted actions.

No network. The dialogue here is invented; the authors' sample is only read from ../shared.
"""

from __future__ import annotations

import copy

import pytest

from meditod_hub.data.release import read_release
from meditod_hub.data.tasks import view_rows
from meditod_hub.data.views import MissingPredictions, cascade_nlg_rows, cascade_pol_rows


def symptom(polarity, value):
    return [{"intent": "inform", "slots": {f"{polarity}_symptom": [{"value": value}]}}]


DIALOGUE = {"utterances": [
    {"uttr_id": 0, "speaker": "doctor", "text": "Hello.",
     "actions": [{"action": "nod_prompt_salutations"}]},
    {"uttr_id": 1, "speaker": "patient", "text": "A cough.", "nlu": symptom("positive", "cough")},
    {"uttr_id": 2, "speaker": "doctor", "text": "Fever?",
     "actions": [{"action": "inquire", "symptom": [{"value": "fever"}]}]},
    {"uttr_id": 3, "speaker": "patient", "text": "No.", "nlu": symptom("negative", "fever")},
    {"uttr_id": 4, "speaker": "doctor", "text": "I see.", "actions": [{"action": "chit-chat"}]},
]}


def test_pol_states_fold_the_predicted_nlu():
    rows = view_rows("pol", "9", DIALOGUE)
    before = copy.deepcopy(rows)
    predicted = {"9-1": symptom("positive", "headache"), "9-3": None}  # 9-3 did not parse
    cascaded = cascade_pol_rows(rows, predicted)
    assert rows == before  # pure: inputs untouched
    assert [r["state"] for r in cascaded] == [{"positive_symptom": [{"value": "headache"}]}] * 2
    assert [{k: v for k, v in r.items() if k != "state"} for r in cascaded] == \
           [{k: v for k, v in r.items() if k != "state"} for r in rows]

    relabelled = cascade_pol_rows(rows, {"9-1": symptom("positive", "headache"),
                                         "9-3": symptom("negative", "headache")})
    assert relabelled[1]["state"] == {"negative_symptom": [{"value": "headache"}]}


def test_gold_nlu_reproduces_the_gold_states(sample_release):
    release = read_release(sample_release)
    for did in release.splits["test"]:
        gold_nlu = {r["id"]: r["nlu"] for r in view_rows("nlu", did, release.dialogues[did])}
        pol = view_rows("pol", did, release.dialogues[did])
        assert cascade_pol_rows(list(reversed(pol)), gold_nlu) == list(reversed(pol))


def test_missing_nlu_predictions_are_named():
    with pytest.raises(MissingPredictions, match="9-3"):
        cascade_pol_rows(view_rows("pol", "9", DIALOGUE), {"9-1": []})


def test_nlg_rows_take_the_predicted_actions():
    rows = view_rows("nlg", "9", DIALOGUE)
    predicted = {"9-2": [{"action": "chit-chat"}], "9-4": [{"action": 7}]}  # 9-4 is malformed
    cascaded = cascade_nlg_rows(rows, predicted)
    assert [(r["actions"], r["action_types"]) for r in cascaded] == \
           [([{"action": "chit-chat"}], ["chit-chat"]), ([], [])]
    assert [r["response"] for r in cascaded] == ["Fever?", "I see."]
    with pytest.raises(MissingPredictions, match="9-4"):
        cascade_nlg_rows(rows, {"9-2": []})
