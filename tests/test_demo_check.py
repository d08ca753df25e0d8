"""`make demo`'s check (scripts/demo_check.py) cannot pass on a wrong state, a reply that is not
a question, or a state accuracy below its floor. No model: the check's parts on given values."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

import demo_check  # noqa: E402  (scripts/demo_check.py: make demo's check)

EXPECTED = demo_check.EXPECTED_STATE


def test_the_expected_state_holds():
    assert demo_check.state_failures(EXPECTED) == []


def test_a_doctor_who_asks_again_what_the_patient_said_fails_the_check():
    """The issue's transcript: chest pain denied, then asked about again."""
    state = {**EXPECTED, "negative_symptom": [{"value": "chest pain"}]}
    asked = [{"action": "inquire", "symptom": [{"value": "chest pain"}]}]
    failures = demo_check.repeat_failures("no chest pain", asked, state)
    assert len(failures) == 1 and "asks again about" in failures[0] \
        and "chest pain" in failures[0]
    assert demo_check.repeat_failures("no chest pain", [{"action": "inquire", "symptom": [
        {"value": "fever"}]}], {"positive_symptom": [{"value": "coughing"}]}) == []


def test_an_invented_finding_fails_the_check():
    """The state the issue saw the old check pass: everything said, plus an alcohol habit the
    patient never mentioned."""
    invented = {**EXPECTED, "positive_habit": [{"value": "alcohol consumption"}]}
    failures = demo_check.state_failures(invented)
    assert failures == ['the state holds positive_habit: {"value": "alcohol consumption"}, '
                        "which the patient never said"]


@pytest.mark.parametrize("state", [
    {**EXPECTED, "negative_symptom": [{"value": "fever"}, {"value": "rhinorrhea"}]},  # extra denial
    {**EXPECTED, "positive_symptom": [{"value": "coughing", "severity": "7"}]},      # invented detail
    {**EXPECTED, "negative_habit": [{"value": "alcohol consumption"}]},               # wrong habit
    {key: entries for key, entries in EXPECTED.items() if key != "negative_symptom"},  # lost denial
    {"positive_symptom": EXPECTED["positive_symptom"], "positive_habit":
     [{"value": "tobacco smoking"}], "negative_symptom": [{"value": "fever"}]},        # flipped
], ids=["extra-denial", "invented-detail", "wrong-habit", "lost-denial", "flipped-denial"])
def test_any_wrong_state_fails_the_check(state):
    assert demo_check.state_failures(state)


@pytest.mark.parametrize("reply", ["Okay, and any fever?", "Do you smoke?",
                                   "I see. How long have you had the cough?",
                                   "And does anything make the cough better or worse?"])
def test_a_doctors_question_is_a_question(reply):
    assert demo_check.is_question(reply)


@pytest.mark.parametrize("reply", ["cough fever the the", "Okay.", "okay any fever?",
                                   '[answer] [{"action": "inquire"}]', "Do you?",
                                   "Have you had a Have you had?? ever?"])
def test_what_is_not_a_question_fails(reply):
    assert not demo_check.is_question(reply)


def test_a_score_below_the_floor_fails_and_one_at_it_holds():
    floor = demo_check.STATE_FLOOR
    assert demo_check.score_failures({"exact_state_accuracy": floor}) == []
    (failure,) = demo_check.score_failures({"exact_state_accuracy": floor - 0.01})
    assert "below the floor" in failure
