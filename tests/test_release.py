"""Release validation: every malformed case names the file, dialogue and utterance. No network."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from helpers import invented_dialogue as _dialogue
from helpers import write_release

from meditod_hub.data.release import ReleaseError, read_release


def problems_of(folder: Path, **kwargs) -> list[str]:
    with pytest.raises(ReleaseError) as info:
        read_release(folder, **kwargs)
    return [str(p) for p in info.value.problems]


def mutated(change) -> dict:
    dialogs = {"1": _dialogue(), "2": _dialogue(), "3": _dialogue()}
    change(dialogs["2"]["utterances"])
    return dialogs


def test_valid_release_loads_without_problems(tmp_path):
    release = read_release(write_release(tmp_path / "r"))
    assert release.problems == []
    assert release.splits == {"train": ["1"], "validation": ["2"], "test": ["3"]}
    assert not release.has_ood


def test_missing_file_is_named(tmp_path):
    folder = write_release(tmp_path / "r")
    (folder / "valid_ids.json").unlink()
    problems = problems_of(folder)
    assert any(p.startswith("error") and "valid_ids.json: file not found" in p for p in problems)


def test_unreadable_file_is_named(tmp_path):
    folder = write_release(tmp_path / "r")
    (folder / "dialogs.json").write_bytes(b"\xff\xfe\x00garbage")
    assert any("dialogs.json: not UTF-8" in p for p in problems_of(folder))


def test_invalid_json_names_line_and_column(tmp_path):
    folder = write_release(tmp_path / "r")
    (folder / "test_ids.json").write_text('["3",\n]')
    problems = problems_of(folder)
    assert any("test_ids.json: invalid JSON at line 2, column 1" in p for p in problems), problems


def test_id_not_in_dialogs(tmp_path):
    folder = write_release(tmp_path / "r", splits={"train": ["1", "9"], "valid": ["2"], "test": ["3"]})
    [problem] = problems_of(folder)
    assert "train_ids.json, dialogue 9: id listed in split 'train' is not in dialogs.json" in problem


def test_id_in_two_splits(tmp_path):
    folder = write_release(tmp_path / "r", splits={"train": ["1", "2"], "valid": ["2"], "test": ["3"]})
    assert any("dialogue 2: id is in two splits ('train' and 'validation')" in p
               for p in problems_of(folder))


def test_dialogue_in_no_split_is_a_warning(tmp_path):
    dialogs = {"1": _dialogue(), "2": _dialogue(), "3": _dialogue(), "4": _dialogue()}
    folder = write_release(tmp_path / "r", dialogs=dialogs)
    release = read_release(folder)
    [warning] = release.problems
    assert "dialogue 4: dialogue is in no split" in str(warning) and not warning.error
    assert problems_of(folder, strict=True) == [str(warning)]


@pytest.mark.parametrize("change, message", [
    (lambda u: u[1].update(speaker="nurse"), "utterance 1: unknown speaker 'nurse'"),
    (lambda u: u[0].update(nlu=[]), "utterance 0: `nlu` on a doctor utterance"),
    (lambda u: u[0].update(dialog_state={}), "utterance 0: `dialog_state` on a doctor utterance"),
    (lambda u: u[1].update(actions=[]), "utterance 1: `actions` on a patient utterance"),
    (lambda u: u[1].pop("nlu"), "utterance 1: patient utterance without an `nlu` list"),
    (lambda u: u[2].update(uttr_id=7), "utterance 2: `uttr_id` must be the whole number 2"),
    (lambda u: u[3].update(text=None), "utterance 3: `text` missing or not a string"),
])
def test_unloadable_utterances_are_errors(tmp_path, change, message):
    folder = write_release(tmp_path / "r", dialogs=mutated(change))
    problems = problems_of(folder)
    assert any(f"dialogs.json, dialogue 2, {message}" in p and p.startswith("error")
               for p in problems), problems


@pytest.mark.parametrize("change, message", [
    (lambda u: u[1]["nlu"][0].update(intent="complain"), "utterance 1: unknown intent 'complain'"),
    (lambda u: u[1]["nlu"][0]["slots"].update(symptom=[{"value": "x"}]),
     "utterance 1: unknown slot key 'symptom'"),
    (lambda u: u[1]["nlu"][0]["slots"]["positive_symptom"][0].update(location="chest"),
     "utterance 1: attribute 'location' on slot 'positive_symptom' must be a list of strings, got str"),
    (lambda u: u[1]["nlu"][0]["slots"]["positive_symptom"][0].update(onset=["a week ago"]),
     "utterance 1: attribute 'onset' on slot 'positive_symptom' must be a string, got list"),
    (lambda u: u[3].update(nlu=[]), "utterance 3: empty `nlu`"),
    (lambda u: u[2].update(actions=[]), "utterance 2: empty `actions`"),
    (lambda u: u[2]["actions"][0].update(action="examine"), "utterance 2: unknown action type 'examine'"),
])
def test_label_problems_are_warnings_and_strict_refuses(tmp_path, change, message):
    folder = write_release(tmp_path / "r", dialogs=mutated(change))
    release = read_release(folder)  # loads: nothing is dropped, every problem is reported
    assert len(release.dialogues) == 3
    assert any(f"dialogue 2, {message}" in str(p) for p in release.problems), release.problems
    assert any(message in p for p in problems_of(folder, strict=True))


def test_state_mismatch_is_reported_and_release_state_kept(tmp_path):
    def change(u):
        u[3]["dialog_state"] = {"negative_symptom": [{"value": "fever"}]}
    folder = write_release(tmp_path / "r", dialogs=mutated(change))
    release = read_release(folder)
    [warning] = release.problems
    assert "dialogue 2, utterance 3: `dialog_state` differs" in str(warning)


def test_all_problems_are_reported_not_only_the_first(tmp_path):
    def change(u):
        u[1]["speaker"] = "nurse"
        u[2]["nlu"] = []
        u[4]["actions"] = "inquire"
    folder = write_release(tmp_path / "r", dialogs=mutated(change),
                           splits={"train": ["1", "8"], "valid": ["2"], "test": ["3"]})
    problems = problems_of(folder)
    assert any("utterance 1: unknown speaker" in p for p in problems)
    assert any("utterance 2: `nlu` on a doctor utterance" in p for p in problems)
    assert any("utterance 4: doctor utterance without an `actions` list" in p for p in problems)
    assert any("dialogue 8: id listed in split" in p for p in problems)


def test_messages_never_quote_dialogue_text(tmp_path):
    def change(u):
        u[1]["speaker"] = "nurse"
        u[3]["dialog_state"] = {}
    folder = write_release(tmp_path / "r", dialogs=mutated(change))
    for problem in problems_of(folder):
        assert "wheezing" not in problem and "No fever" not in problem


def test_irregular_turn_taking_policy(tmp_path):
    """Two patient lines in a row and a patient-final dialogue load, warn, and map by speaker."""
    from meditod_hub.data.tasks import view_rows

    dialogue = _dialogue()
    extra = copy.deepcopy(dialogue["utterances"][3])
    extra["uttr_id"] = 4
    dialogue["utterances"].insert(4, extra)
    dialogue["utterances"][5]["uttr_id"] = 5
    tail = copy.deepcopy(extra)
    tail["uttr_id"] = 6
    dialogue["utterances"].append(tail)
    folder = write_release(tmp_path / "r", dialogs={"1": _dialogue(), "2": dialogue, "3": _dialogue()})
    release = read_release(folder)
    messages = [str(p) for p in release.problems]
    assert any("dialogue 2, utterance 4: two patient utterances in a row" in m for m in messages)
    assert any("dialogue 2, utterance 6: dialogue ends with a patient utterance" in m for m in messages)
    nlu = view_rows("nlu", "2", release.dialogues["2"])
    pol = view_rows("pol", "2", release.dialogues["2"])
    assert [r["id"] for r in nlu] == ["2-1", "2-3", "2-4", "2-6"]
    assert [r["id"] for r in pol] == ["2-2", "2-5"]
    assert pol[1]["last_patient_text"] == extra["text"]
    assert nlu[2]["last_doctor_text"] == dialogue["utterances"][2]["text"]


def test_ood_from_id_file(tmp_path):
    dialogs = {str(i): _dialogue() for i in range(1, 5)}
    folder = write_release(tmp_path / "r", dialogs=dialogs,
                           splits={"train": ["1"], "valid": ["2"], "test": ["3"], "ood": ["4"]})
    release = read_release(folder)
    assert release.splits["test_ood"] == ["4"] and release.problems == []


def test_ood_from_second_release_folder(tmp_path):
    main = write_release(tmp_path / "main")
    ood = tmp_path / "ood"
    ood.mkdir()
    (ood / "dialogs.json").write_text(json.dumps({"50": _dialogue(), "51": _dialogue()}))
    release = read_release(main, ood_source=ood)
    assert release.splits["test_ood"] == ["50", "51"]
    (ood / "dialogs.json").write_text(json.dumps({"3": _dialogue()}))
    assert any("ood/dialogs.json, dialogue 3: dialogue id also used" in p
               for p in problems_of(main, ood_source=ood))
