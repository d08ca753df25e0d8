"""The held-out NLG accuracy (`meditod eval-nlg`): its action sets are sound, held out and built
into the dataset's own NLG rows, its scores fail where a reply misses a value, adds one or states
what it should ask, and the command scores a run end to end. No network; the command test uses
the session's tiny-llama NLG run."""

from __future__ import annotations

import json
import re

import pytest
from helpers import meditod, offline_env

from meditod_hub.data import cmas
from meditod_hub.data.release import action_label_errors
from meditod_hub.data.synthetic import generate_dialogues
from meditod_hub.data.tasks import get_task
from meditod_hub.errors import UsageError
from meditod_hub.evaluation.moments import DOMAINS, SETS, moment_rows
from meditod_hub.evaluation.nlg_accuracy import (
    is_question,
    named_values,
    nlg_items,
    score,
    slot_errors,
    values_to_say,
    vocabulary_phrases,
)
from meditod_hub.evaluation.state_accuracy import fold
from meditod_hub.models.formats import chat

NLG = get_task("nlg")
ITEMS = {name: nlg_items(name) for name in SETS}
ALL = [item for items in ITEMS.values() for item in items]
LEAST = {"dev": 30, "test": 60}


def _words(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9']+", text.lower()))


def _asks(item: dict) -> bool:
    return any(a["action"] == cmas.INQUIRE_ACTION for a in item["actions"])


# --- the items --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", SETS)
def test_there_are_enough_action_sets_of_every_kind(name):
    items = ITEMS[name]
    assert len(items) >= LEAST[name]
    assert {item["domain"] for item in items} == set(DOMAINS)
    asking = [item for item in items if _asks(item)]
    assert len(items) / 2 < len(asking) < len(items)  # mostly questions, some diagnoses
    checks = [item for item in asking if any("checks" in e for a in item["actions"]
                                             for s, es in a.items() if s != "action" for e in es)]
    offered = [item for item in checks if any("values" in c for a in item["actions"]
                                              for s, es in a.items() if s != "action"
                                              for e in es for c in e.get("checks", ()))]
    several = [item for item in items if len(values_to_say(item["actions"])) > 1]
    assert checks and offered and several


def test_the_sets_share_no_item():
    assert len({item["id"] for item in ALL}) == len(ALL)
    dev = {(_words(i["patient"]), json.dumps(i["actions"])) for i in ITEMS["dev"]}
    assert not dev & {(_words(i["patient"]), json.dumps(i["actions"])) for i in ITEMS["test"]}
    assert not {_words(i["patient"]) for i in ITEMS["dev"]} & {_words(i["patient"]) for i in ITEMS["test"]}


def test_an_unknown_set_is_refused_naming_the_sets():
    with pytest.raises(UsageError, match="dev, test"):
        nlg_items("validation")


def test_no_patient_line_is_said_in_the_corpus_the_kit_trains_on():
    said = {_words(u["text"]) for size in (30, 233)
            for dialogue in generate_dialogues(seed=0, dialogues=size, style="realistic").values()
            for u in dialogue["utterances"] if u["speaker"] == "patient"}
    assert not said & {_words(item["patient"]) for item in ALL}


@pytest.mark.parametrize("item", ALL, ids=[item["id"] for item in ALL])
def test_each_item_is_valid_and_its_reference_says_it(item):
    """Its actions parse with the chat format's parser and pass the label checks, its state
    folds, every value to say has surface forms, and the reply a clinician wrote says every value,
    adds none, and asks where the actions inquire."""
    actions = item["actions"]
    assert actions and not action_label_errors(actions)
    parsed = chat.parse_answer(get_task("pol"), f"[answer] {json.dumps(actions)} [done]")
    assert parsed.ok and parsed.value == actions
    assert fold([{"intent": "inform", "slots": item["state"]}]) == item["state"]
    wanted = values_to_say(actions)
    assert set(item["surfaces"]) == set(wanted)
    assert all(item["surfaces"][v] and all(isinstance(s, str) and s == s.lower()
                                            for s in item["surfaces"][v]) for v in wanted)
    assert slot_errors(item, item["reference"]) == ([], [])
    assert is_question(item["reference"]) == _asks(item)


@pytest.mark.parametrize("name", SETS)
def test_rows_are_the_dataset_views_own(name):
    items = ITEMS[name]
    rows = moment_rows(NLG, items, "nlg")
    for item, row in zip(items, rows, strict=True):
        assert [(c["speaker"], c["text"]) for c in row["context"]] == \
            [*map(tuple, item["history"]), ("doctor", item["doctor"]), ("patient", item["patient"])]
        assert row["actions"] == item["actions"]
        assert row["action_types"] == [a["action"] for a in item["actions"]]
        assert row["last_patient_text"] == item["patient"] and row["response"] == ""
        prompt = chat.user_message(NLG, row)
        assert prompt.startswith("[action]\n" + json.dumps(item["actions"]))


# --- the scores -------------------------------------------------------------------------------
def test_the_references_score_one():
    for items in ITEMS.values():
        results = score(items, [item["reference"] for item in items], [True] * len(items))
        assert results["slot_error_rate"] == 0.0 and results["all_said_rate"] == 1.0
        assert results["question_rate"] == 1.0 and results["parse_failures"] == 0
        assert results["values"] >= len(items) / 2


ITEM = {"actions": [{"action": "inquire", "symptom": [{"value": "chest pain", "checks": [
            {"type": "characteristics", "values": ["sharp", "dull"]}]}]}],
        "surfaces": {"chest pain": ["chest pain", "pain in your chest"], "sharp": ["sharp"],
                     "dull": ["dull"]}}


@pytest.mark.parametrize("reply,missing,added", [
    ("Is the chest pain sharp or dull?", [], []),
    ("Is the pain in your chest sharp, or more of a dull ache?", [], []),  # "pain" is chest pain's
    ("Is the chest pain sharp?", ["dull"], []),                            # a value left out
    ("Is the chest pain sharp or dull, and any fever?", [], ["fever"]),    # one added
    ("Any cough or shortness of breath?", ["chest pain", "sharp", "dull"], ["coughing", "dyspnea"]),
    ("Do you get hay fever?", ["chest pain", "sharp", "dull"], ["seasonal allergic rhinitis"]),
])
def test_a_missing_or_added_value_is_a_slot_error(reply, missing, added):
    assert slot_errors(ITEM, reply) == (missing, added)


def test_the_slot_error_rate_counts_both_and_a_statement_is_no_question():
    items = [ITEM, ITEM]
    results = score(items, ["Is the chest pain sharp?", "Tell me whether the chest pain is sharp "
                                                       "or dull, and about any fever."], [True, False])
    assert results["values"] == 6 and results["missing"] == 1 and results["added"] == 1
    assert results["slot_error_rate"] == 2 / 6 and results["all_said"] == 0
    assert results["question_rate"] == 0.5 and results["parse_failures"] == 1
    diagnosis = {"actions": [{"action": "diagnosis", "disease": [{"value": "acute bronchitis"}]}],
                 "surfaces": {"acute bronchitis": ["bronchitis"]}}
    results = score([diagnosis], ["This looks like bronchitis."], [True])
    assert results["slot_error_rate"] == 0.0 and results["inquire_items"] == 0


def test_placeholder_values_name_nothing_to_say():
    travel = [{"action": "inquire", "travel": [{"value": "other"}]},
              {"action": "inquire", "medication": [{"value": "other"}, {"value": "Salbutamol"}]}]
    assert values_to_say(travel) == ["salbutamol"]


@pytest.mark.parametrize("reply,asks", [
    ("Have you had a cough?", True), ("Okay. And any fever since then?", True),
    ("Any fever?", False),                          # too short to read as the doctor's question
    ("Tell me about the cough.", False), ("[answer] Any fever at all? [done]", False),
    ('{"action": "inquire"}?', False), ("Have you had a cough? Tell me.", False),
])
def test_is_question_reads_a_doctors_question(reply, asks):
    assert is_question(reply) is asks


def test_the_vocabulary_holds_the_corpus_concepts_by_their_lay_names():
    phrases = vocabulary_phrases()
    assert phrases["shortness of breath"] == "dyspnea" and phrases["cough"] == "coughing"
    assert "other" not in phrases.values()
    assert named_values("A cough suppressant for the chest pain?", phrases) == \
        {"cough suppressant", "chest pain"}


@pytest.mark.slow
def test_eval_nlg_scores_a_run_and_writes_each_reply(tiny_runs, tmp_path):
    out = tmp_path / "nlg"
    done = meditod(offline_env(tmp_path), "eval-nlg", "--nlg", str(tiny_runs / "nlg"),
                   "--set", "dev", "--out", str(out), "--batch_size", "64")
    assert done.returncode == 0, done.stderr
    assert "slot error rate" in done.stdout and "not MediTOD" in done.stdout
    assert "held-out dev doctor action sets" in done.stdout
    results = json.loads((out / "nlg_accuracy.json").read_text())
    items = ITEMS["dev"]
    assert results["items"] == len(items) and results["set"] == "dev"
    assert results["slot_error_rate"] >= 0.0 and 0.0 <= results["question_rate"] <= 1.0
    outcomes = [json.loads(x) for x in (out / "nlg_items.jsonl").read_text().splitlines()]
    assert [o["id"] for o in outcomes] == [item["id"] for item in items]
    assert sum(len(o["missing"]) for o in outcomes) == results["missing"]
    assert sum(bool(o["question"]) for o in outcomes) == results["questions"]
