"""Scripted conversations (`meditod eval-conversations`): the scripts are sound, a turn is marked
right only when its state, its action and its question all are, the transcript says which turn
went wrong and how, and the command runs the tiny assistant end to end. No network; scripted
assistants (answers chosen by the test) pin the scoring, the command test uses the session's
tiny-llama runs."""

from __future__ import annotations

import json
import re

import pytest
from helpers import meditod, offline_env, scripted_assistant

from meditod_hub.data import cmas
from meditod_hub.data.release import action_label_errors
from meditod_hub.data.synthetic import generate_dialogues
from meditod_hub.errors import UsageError
from meditod_hub.evaluation.conversations import (
    conversation_scripts,
    gold_states,
    run_scripts,
    score,
    selected_scripts,
    transcript,
)
from meditod_hub.evaluation.policy_accuracy import is_acceptable, repeated_units

SCRIPTS = conversation_scripts()
BY_LINE = {turn["patient"]: turn for script in SCRIPTS for turn in script["turns"]}


def _words(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9']+", text.lower()))


def test_five_scripts_of_six_to_eight_turns_cover_the_complaints():
    assert len(SCRIPTS) >= 5 and len({s["id"] for s in SCRIPTS}) == len(SCRIPTS)
    assert all(6 <= len(s["turns"]) <= 8 for s in SCRIPTS)
    assert {"cough", "fever", "breathless", "chest-pain"} <= {s["id"] for s in SCRIPTS}
    assert {s["domain"] for s in SCRIPTS} == {"respiratory", "musculoskeletal"}
    assert len(BY_LINE) == sum(len(s["turns"]) for s in SCRIPTS)  # every line said once


def test_no_patient_line_is_said_in_the_corpus_the_kit_trains_on():
    said = {_words(u["text"]) for size in (30, 233)
            for dialogue in generate_dialogues(seed=0, dialogues=size, style="realistic").values()
            for u in dialogue["utterances"] if u["speaker"] == "patient"}
    assert not said & {_words(line) for line in BY_LINE}


@pytest.mark.parametrize("script", SCRIPTS, ids=[s["id"] for s in SCRIPTS])
def test_each_script_folds_and_its_acceptable_actions_are_valid(script):
    states = gold_states(script)
    assert all(states) and states[-1] != states[0]
    assert script["turns"][0]["doctor"] == script["opening"]
    for turn, state in zip(script["turns"], states):
        for key, entries in turn["state_change"].items():
            assert key in cmas.PATIENT_SLOT_KEYS
            for entry in entries:
                base = cmas.split_slot_key(key).base
                assert set(entry) <= set(cmas.SLOT_ATTRIBUTES[base]), (key, entry)
        assert turn["acceptable"] and is_acceptable(turn["actions"], turn["acceptable"])
        for alternative in turn["acceptable"]:
            assert not action_label_errors(alternative)
            assert not repeated_units(alternative, state)


def _oracle(pol=lambda turn, n: turn["actions"], nlu=None):
    """A scripted assistant: NLU says each line's gold change (`nlu` may change it), POL
    `pol(turn, n)` (default: the actions the script goes on from), NLG a question."""
    def answer(task, row):
        if task == "nlu":
            change = BY_LINE[row["patient_text"]]["state_change"]
            change = nlu(row["patient_text"], change) if nlu else change
            return [{"intent": "inform", "slots": change}], True
        if task == "pol":
            script = next(s for s in SCRIPTS if f"script-{s['id']}" == row["dialogue_id"])
            n = sum(c["speaker"] == "patient" for c in row["context"]) - 1
            return pol(script["turns"][n], n), True
        return "Could you tell me a bit more about that?", True
    return scripted_assistant(answer)[0]


def test_an_assistant_that_says_the_gold_is_right_on_every_turn():
    outcomes = run_scripts(_oracle(), SCRIPTS)
    results = score(outcomes)
    assert results["turns"] == sum(len(s["turns"]) for s in SCRIPTS)
    assert results["right_rate"] == results["state_exact_rate"] == results["acceptable_rate"] == 1.0
    assert results["repeat_rate"] == 0.0 and results["scripts_right"] == len(SCRIPTS)
    assert results["nlu_unusable"] == results["pol_unusable"] == 0
    text = transcript(outcomes, "header line")
    assert text.startswith("header line\n") and "WRONG" not in text
    assert text.count("RIGHT") == results["turns"]
    for script in SCRIPTS:
        assert f"== {script['id']} ({script['domain']}): {script['title']}" in text
        assert all(turn["patient"] in text for turn in script["turns"])


def test_a_wrong_state_an_unacceptable_action_and_a_repeat_are_each_marked():
    cough = [s for s in SCRIPTS if s["id"] == "cough"]
    first = cough[0]["turns"][0]["patient"]

    def nlu(line, change):  # turn 1 invents a finding
        return {**change, "positive_habit": [{"value": "vaping"}]} if line == first else change

    def pol(turn, n):
        if n == 1:  # asks the chief complaint again: a repeat, and no acceptable action
            return [{"action": "inquire", "symptom": [{"value": "coughing"}]}]
        if n == 2:  # chit-chat only
            return [{"action": "chit-chat"}]
        return turn["actions"]

    outcomes = run_scripts(_oracle(pol, nlu), cough)
    turns = outcomes[0]["turns"]
    assert not turns[0]["state_exact"] and not turns[0]["right"]  # the invented finding stays
    assert all(not t["state_exact"] for t in turns)
    assert turns[1]["repeats"] and not turns[1]["acceptable"]
    assert not turns[2]["acceptable"] and not turns[2]["repeats"]
    text = transcript(outcomes)
    assert "WRONG" in text and "holds positive_habit" in text and "never said" in text
    assert "repeat  yes: inquire symptom coughing" in text
    assert "action  wrong: chit-chat" in text


def test_the_same_question_twice_is_a_repeat_though_the_patient_never_answered_it():
    cough = [s for s in SCRIPTS if s["id"] == "cough"]
    asked = [{"action": "inquire", "exposure": [{"value": "mold"}]}]
    outcomes = run_scripts(_oracle(lambda turn, n: asked if n in (2, 3) else turn["actions"]), cough)
    turns = outcomes[0]["turns"]
    assert is_acceptable(asked, cough[0]["turns"][2]["acceptable"])
    assert not turns[2]["repeats"] and turns[3]["repeats"] == [["inquire", "exposure", "mold", None]]


def test_scripts_are_chosen_by_id_and_an_unknown_one_is_refused():
    assert [s["id"] for s in selected_scripts("ankle")] == ["ankle"]
    assert selected_scripts() == SCRIPTS
    with pytest.raises(UsageError, match="no script 'sneeze': choose one of cough"):
        selected_scripts("sneeze")


def test_turns_keeps_the_first_turns_of_each_script_and_leaves_the_scripts_whole():
    cut = selected_scripts(turns=2)
    assert [s["turns"] for s in cut] == [s["turns"][:2] for s in SCRIPTS]
    assert [s["id"] for s in cut] == [s["id"] for s in SCRIPTS]
    assert all(len(s["turns"]) >= 6 for s in conversation_scripts())  # the file's scripts unchanged
    assert selected_scripts("ankle", 1)[0]["turns"] == SCRIPTS[-1]["turns"][:1]


@pytest.mark.slow
def test_eval_conversations_runs_the_assistant_and_writes_results_and_transcript(tiny_runs,
                                                                                 tmp_path):
    out = tmp_path / "conversations"
    done = meditod(offline_env(tmp_path), "eval-conversations", "--nlu", str(tiny_runs / "nlu"),
                   "--pol", str(tiny_runs / "pol"), "--nlg", str(tiny_runs / "nlg"),
                   "--out", str(out), "--batch_size", "64")
    assert done.returncode == 0, done.stderr
    assert "turns right" in done.stdout and "not MediTOD" in done.stdout
    results = json.loads((out / "conversation_results.json").read_text())
    assert results["scripts"] == len(SCRIPTS)
    assert results["turns"] == sum(len(s["turns"]) for s in SCRIPTS)
    assert [c["id"] for c in results["conversations"]] == [s["id"] for s in SCRIPTS]
    text = (out / "conversation_transcript.txt").read_text()
    assert "not MediTOD" in text.splitlines()[0]
    marks = re.findall(r"^  turn \d+: (RIGHT|WRONG)$", text, re.MULTILINE)
    assert len(marks) == results["turns"] and marks.count("RIGHT") == results["turns_right"]
    one = meditod(offline_env(tmp_path), "eval-conversations", "--nlu", str(tiny_runs / "nlu"),
                  "--pol", str(tiny_runs / "pol"), "--nlg", str(tiny_runs / "nlg"),
                  "--out", str(tmp_path / "one"), "--script", "nope")
    assert one.returncode == 2 and "no script 'nope'" in one.stderr
    assert not (tmp_path / "one").exists()
