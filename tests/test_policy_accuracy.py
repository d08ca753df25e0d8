"""The held-out policy accuracy (`meditod eval-policy`): its moments are sound, held out and built
into the dataset's own POL rows, its scores fail where a next action is wrong, and the command
scores a run end to end. No network; the command test uses the session's tiny-llama POL run."""

from __future__ import annotations

import json
import re

import pytest
from helpers import meditod, offline_env

from meditod_hub.data import cmas
from meditod_hub.data.release import action_label_errors
from meditod_hub.data.synthetic import DOMAIN_VALUES, IN_DOMAIN, OUT_OF_DOMAIN, VALUES, generate_dialogues
from meditod_hub.data.tasks import get_task
from meditod_hub.data.tasks.language import check_types
from meditod_hub.errors import UsageError
from meditod_hub.evaluation.moments import DOMAINS, SETS, STAGES, moment_rows
from meditod_hub.evaluation.policy_accuracy import (
    action_units,
    asks,
    is_acceptable,
    policy_moments,
    repeated_units,
    score,
    substantive_units,
)
from meditod_hub.evaluation.state_accuracy import fold, heldout_lines
from meditod_hub.models.formats import chat, context_lines

POL = get_task("pol")
MOMENTS = {name: policy_moments(name) for name in SETS}
ALL = [m for moments in MOMENTS.values() for m in moments]
LEAST = {"dev": 30, "test": 60}


def _words(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9']+", text.lower()))


def medical_vocabulary(domain: str) -> set[str]:
    """The canonical medical values the kit's corpus says in `domain` (what a model trained on
    it can say under the grammar)."""
    tables = [VALUES, DOMAIN_VALUES[IN_DOMAIN if domain == "respiratory" else OUT_OF_DOMAIN]]
    return {v for table in tables for slot in cmas.MEDICAL_ACTION_SLOTS for v in table.get(slot, ())}


# --- the moments ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", SETS)
def test_there_are_enough_moments_at_every_stage_of_both_domains(name):
    moments = MOMENTS[name]
    assert len(moments) >= LEAST[name]
    assert {m["stage"] for m in moments} == set(STAGES)
    assert {m["domain"] for m in moments} == set(DOMAINS)
    musculoskeletal = sum(m["domain"] == "musculoskeletal" for m in moments)
    assert 0 < musculoskeletal < len(moments) / 2  # respiratory, and a few musculoskeletal


def test_the_sets_share_no_moment():
    """Ids are unique across both sets, and no test moment repeats a dev patient line."""
    assert len({m["id"] for m in ALL}) == len(ALL)
    dev = {_words(m["patient"]) for m in MOMENTS["dev"]}
    assert not dev & {_words(m["patient"]) for m in MOMENTS["test"]}


def test_an_unknown_set_is_refused_naming_the_sets():
    with pytest.raises(UsageError, match="dev, test"):
        policy_moments("train")


def test_no_patient_line_is_said_in_the_corpus_the_kit_trains_on_nor_in_eval_state():
    said = {_words(u["text"]) for size in (30, 233)
            for dialogue in generate_dialogues(seed=0, dialogues=size, style="realistic").values()
            for u in dialogue["utterances"] if u["speaker"] == "patient"}
    said |= {_words(line["patient"]) for name in SETS for line in heldout_lines(name)}
    lines = {_words(text) for m in ALL
             for text in [m["patient"], *(t for s, t in m["history"] if s == "patient")]}
    assert not said & lines


@pytest.mark.parametrize("moment", ALL, ids=[m["id"] for m in ALL])
def test_each_moment_is_valid_against_the_schema(moment):
    """The state folds to itself; every alternative (and the next actions) parses with the chat
    format's POL parser to itself, passes the release's label checks, names action types, slots and
    check types of CMAS, and medical values the corpus of its domain says; no alternative asks
    what the state holds."""
    state = moment["state"]
    assert state and fold([{"intent": "inform", "slots": state}]) == state
    for key, entries in state.items():
        assert key in cmas.PATIENT_SLOT_KEYS
        for entry in entries:
            for name, value in entry.items():
                assert name in cmas.SLOT_ATTRIBUTES[cmas.split_slot_key(key).base], (key, name)
                assert isinstance(value, list) == (name in cmas.LIST_ATTRIBUTES), (key, name)
    vocabulary = medical_vocabulary(moment["domain"])
    assert moment["acceptable"]
    for actions in [*moment["acceptable"], moment["actions"]]:
        assert not action_label_errors(actions)
        parsed = chat.parse_answer(POL, f"[answer] {json.dumps(actions)} [done]")
        assert parsed.ok and parsed.value == actions
        for act in actions:
            assert act["action"] in cmas.ACTION_TYPES
            for slot, entries in act.items():
                if slot == "action":
                    continue
                assert slot in cmas.ACTION_SLOTS
                for entry in entries:
                    if slot in cmas.MEDICAL_ACTION_SLOTS:
                        assert entry["value"] in vocabulary, entry["value"]
                    for check in entry.get("checks", ()):
                        assert check["type"] in check_types(slot), (slot, check)
        assert not repeated_units(actions, state)
    assert is_acceptable(moment["actions"], moment["acceptable"])


def test_diagnoses_are_acceptable_only_near_the_end():
    for m in ALL:
        diagnoses = [a for a in m["acceptable"] if any(act["action"] == "diagnosis" for act in a)]
        assert bool(diagnoses) == (m["stage"] == "near_end"), m["id"]
        assert asks(m) == (m["stage"] != "near_end")


@pytest.mark.parametrize("name", SETS)
def test_rows_are_the_dataset_views_own(name):
    """Each moment is the POL row of the doctor line after it: its lines as the context, the
    patient's as the last, the moment's state as the row's."""
    moments = MOMENTS[name]
    rows = moment_rows(POL, moments, "policy")
    for m, row in zip(moments, rows, strict=True):
        assert [(c["speaker"], c["text"]) for c in row["context"]] == \
            [*map(tuple, m["history"]), ("doctor", m["doctor"]), ("patient", m["patient"])]
        assert row["last_patient_text"] == m["patient"] and row["state"] == m["state"]
        assert row["actions"] == m["actions"] and row["id"].startswith(f"policy-{m['id']}-")
        prompt = chat.user_message(POL, row)  # what the chat family is asked, as in training
        assert prompt.startswith("[dialog state]\n" + json.dumps(m["state"]))
        lines = context_lines(row)  # the models never see the opening line
        assert lines[-1] == f"patient: {m['patient']}"
        assert lines[-2:-1] == ([f"doctor: {m['doctor']}"] if m["history"] else [])
        assert "[last turn]\n" + "\n".join(lines[-2:]) + "\n\n[output]" in prompt
        assert ("[dialog history]" in prompt) == (len(lines) > 2)


# --- the scores -------------------------------------------------------------------------------
def test_gold_actions_score_one():
    for moments in MOMENTS.values():
        for pick in (lambda m: m["actions"], lambda m: m["acceptable"][0],
                     lambda m: m["acceptable"][-1]):
            results = score(moments, [pick(m) for m in moments], [True] * len(moments))
            assert results["acceptable_rate"] == 1.0 and results["repeat_rate"] == 0.0
            assert results["parse_failures"] == results["unusable"] == 0
            assert all(f["acceptable_rate"] == 1.0 for f in results["by_stage"].values())
        first = score(moments, [m["acceptable"][0] for m in moments], [True] * len(moments))
        asking = [m for m in moments if asks(m)]
        assert first["inquire_rate"] == 1.0 and first["asking_moments"] == len(asking)


MOMENT = {"id": "x", "stage": "mid_history", "domain": "respiratory",
          "state": {"positive_symptom": [{"value": "coughing", "onset": "two weeks",
                                          "positive_characteristics": ["dry"]}],
                    "negative_symptom": [{"value": "fever"}]},
          "acceptable": [[{"action": "inquire", "symptom": [{"value": "dyspnea"},
                                                            {"value": "wheezing"}]}],
                         [{"action": "inquire", "symptom": [
                             {"value": "coughing", "checks": [{"type": "progression"},
                                                              {"type": "ana_factors"}]}]}]]}


def _ask(slot, value, *checks):
    entry = {"value": value, **({"checks": [{"type": c} for c in checks]} if checks else {})}
    return {"action": "inquire", slot: [entry]}


@pytest.mark.parametrize("actions,right", [
    ([_ask("symptom", "dyspnea")], True),                       # part of an alternative
    ([_ask("symptom", "wheezing"), _ask("symptom", "dyspnea")], True),
    ([_ask("symptom", "coughing", "progression")], True),
    ([{"action": "nod_prompt_salutations"}, _ask("symptom", "dyspnea")], True),  # "Okay. Any ..."
    ([{"action": "chit-chat"}], False),                          # a nod alone is no next action
    ([_ask("symptom", "dyspnea"), _ask("symptom", "coughing", "progression")], False),  # two alternatives
    ([_ask("symptom", "joint redness")], False),                 # an invented action
    ([_ask("symptom", "dyspnea", "color")], False),              # a check no alternative has
    ([_ask("symptom", "coughing", "onset")], False),             # asked and answered
    ([{"action": "diagnosis", "disease": [{"value": "acute bronchitis"}]}], False),
    ([], False),
])
def test_a_prediction_is_acceptable_only_inside_one_alternative(actions, right):
    assert is_acceptable(actions, MOMENT["acceptable"]) is right


def test_a_question_about_what_the_state_holds_is_a_repeat():
    state = MOMENT["state"]
    assert repeated_units([_ask("symptom", "fever")], state)             # denied: known
    assert repeated_units([_ask("symptom", "coughing")], state)          # known
    assert repeated_units([_ask("symptom", "coughing", "onset")], state)
    assert repeated_units([_ask("symptom", "coughing", "characteristics")], state)  # its family
    assert not repeated_units([_ask("symptom", "coughing", "ana_factors")], state)
    assert not repeated_units([_ask("symptom", "fever", "onset")], {})
    assert not repeated_units([{"action": "diagnosis", "disease": [{"value": "fever"}]}], state)
    travel = {"travel": [{"status": "traveled"}]}
    assert repeated_units([_ask("travel", "other")], travel)
    results = score([MOMENT], [[_ask("symptom", "fever")]], [True])
    assert results["repeat_rate"] == 1.0 and results["acceptable_rate"] == 0.0
    assert results["inquire_rate"] == 1.0


def test_chit_chat_is_no_inquiry_and_an_unusable_output_is_no_action():
    results = score([MOMENT, MOMENT], [[{"action": "chit-chat"}], None], [True, False])
    assert results["inquire_rate"] == 0.0 and results["acceptable_rate"] == 0.0
    assert results["parse_failures"] == 1 and results["repeats"] == 0
    assert score([MOMENT], [None], [True])["unusable"] == 1
    assert score([MOMENT], [[{"action": "inquire"}]], [True])["inquire_rate"] == 0.0  # asks nothing


def test_units_read_every_entry_and_check():
    actions = [{"action": "inquire", "symptom": [{"value": "Fever"}, {"value": "coughing", "checks": [
        {"type": "onset", "values": ["today"]}, {"type": "frequency"}]}]}, {"action": "chit-chat"}]
    assert action_units(actions) == {("inquire", "symptom", "fever", None),
                                     ("inquire", "symptom", "coughing", "onset"),
                                     ("inquire", "symptom", "coughing", "frequency"),
                                     ("chit-chat", None, None, None)}
    assert ("chit-chat", None, None, None) not in substantive_units(actions)
    assert substantive_units([{"action": "chit-chat"}]) == {("chit-chat", None, None, None)}


@pytest.mark.slow
def test_eval_policy_scores_a_run_and_writes_each_moment(tiny_runs, tmp_path):
    """The tiny model never saw these moments: every figure is what it is, none is a crash, and
    every moment's outcome is written beside the results."""
    out = tmp_path / "policy"
    done = meditod(offline_env(tmp_path), "eval-policy", "--pol", str(tiny_runs / "pol"),
                   "--set", "dev", "--out", str(out), "--batch_size", "64")
    assert done.returncode == 0, done.stderr
    assert "acceptable action" in done.stdout and "not MediTOD" in done.stdout
    assert "held-out dev interview moments" in done.stdout and "by stage" in done.stdout
    results = json.loads((out / "policy_accuracy.json").read_text())
    moments = MOMENTS["dev"]
    assert results["moments"] == len(moments) and results["constrained"] is True
    assert results["set"] == "dev" and 0.0 <= results["acceptable_rate"] <= 1.0
    outcomes = [json.loads(x) for x in (out / "policy_moments.jsonl").read_text().splitlines()]
    assert [o["id"] for o in outcomes] == [m["id"] for m in moments]
    assert sum(o["acceptable"] for o in outcomes) == results["acceptable"]
    assert sum(bool(o["repeats"]) for o in outcomes) == results["repeats"]
    again = meditod(offline_env(tmp_path), "eval-policy", "--pol", str(tiny_runs / "pol"),
                    "--out", str(tmp_path), "--no_constrained", "--vocabulary", "none")
    assert again.returncode == 2 and again.stderr.count("\n") == 1
    assert "--vocabulary applies under the grammar" in again.stderr
