"""The embedded synthetic sample (data/sample): it builds clean, it exercises every CMAS shape the
loaders and metrics must handle, and none of it is MediTOD text. Offline, CPU, a few seconds."""

from __future__ import annotations

import json
import re

import pytest

from meditod_hub.data import cmas
from meditod_hub.data.release import read_release


@pytest.fixture(scope="module")
def sample(embedded_release):
    return read_release(embedded_release, strict=True)  # strict: any warning fails


def _patient_items(release):
    for did, dialogue in release.dialogues.items():
        for utt in dialogue["utterances"]:
            for item in utt.get("nlu", []):
                yield did, utt["uttr_id"], item


def _nlu_entries(release):
    for did, uid, item in _patient_items(release):
        for key, entries in item.get("slots", {}).items():
            for entry in entries:
                yield did, uid, key, entry


def _actions(release):
    for dialogue in release.dialogues.values():
        for utt in dialogue["utterances"]:
            yield from utt.get("actions", [])


def _strings(obj):
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield key
            yield from _strings(value)
    elif isinstance(obj, list):
        for value in obj:
            yield from _strings(value)
    elif isinstance(obj, str):
        yield obj


def test_builds_with_no_warning_and_has_every_split(sample, embedded_build):
    assert sample.problems == []
    assert {split: len(ids) for split, ids in sample.splits.items()} == {
        "train": 4, "validation": 2, "test": 2, "test_ood": 2}
    infos = json.loads((embedded_build / "dataset_infos.json").read_text(encoding="utf-8"))
    assert all("test_ood" in info["splits"] for info in infos.values())


def test_dialogues_are_short_and_alternate_doctor_first_and_last(sample):
    for did, dialogue in sample.dialogues.items():
        speakers = [u["speaker"] for u in dialogue["utterances"]]
        assert 10 <= len(speakers) <= 16, did
        assert speakers == ["doctor", "patient"] * (len(speakers) // 2) + ["doctor"], did


def test_every_patient_slot_key_every_prefix_and_base_slot_is_used(sample):
    keys = {key for _, _, key, _ in _nlu_entries(sample)}
    assert keys == set(cmas.PATIENT_SLOT_KEYS)


def test_list_attributes_are_used_as_lists(sample):
    used = {attr for _, _, _, entry in _nlu_entries(sample) for attr in entry
            if cmas.is_list_attribute(attr)}
    assert {"location", "positive_characteristics", "negative_characteristics",
            "aggravating_factor", "alleviating_factor", "not_aggravating_factor"} <= used
    for _, _, _, entry in _nlu_entries(sample):
        for attr in used & entry.keys():
            assert isinstance(entry[attr], list) and entry[attr]


def test_multi_item_utterances_multi_key_items_and_multi_entry_slots(sample):
    items_per_utterance = {}
    for did, uid, _ in _patient_items(sample):
        items_per_utterance[did, uid] = items_per_utterance.get((did, uid), 0) + 1
    assert max(items_per_utterance.values()) >= 2
    assert any(len(item.get("slots", {})) >= 2 for _, _, item in _patient_items(sample))
    assert any(len(entries) >= 2 for _, _, item in _patient_items(sample)
               for entries in item.get("slots", {}).values())


def test_intent_only_items_for_the_non_inform_intents(sample):
    intents = {item["intent"] for _, _, item in _patient_items(sample)}
    assert intents == set(cmas.PATIENT_INTENTS)
    for _, _, item in _patient_items(sample):
        assert ("slots" in item) == (item["intent"] == cmas.INFORM_INTENT)


def test_a_value_moves_from_negative_to_positive(sample):
    moved = []
    for did, dialogue in sample.dialogues.items():
        seen: dict[tuple[str, str], str] = {}
        for utt in dialogue["utterances"]:
            for item in utt.get("nlu", []):
                for key, entries in item.get("slots", {}).items():
                    parsed = cmas.split_slot_key(key)
                    for entry in entries:
                        head = (parsed.base, entry.get("value"))
                        if seen.get(head, parsed.status) != parsed.status:
                            moved.append((did, utt["uttr_id"], head, seen[head], parsed.status))
                        seen[head] = parsed.status
    assert any(old == "negative" and new == "positive" for *_, old, new in moved)


def test_value_less_travel_and_basic_information_entries(sample):
    value_less = {cmas.split_slot_key(key).base for _, _, key, entry in _nlu_entries(sample)
                  if "value" not in entry}
    assert {"travel", "basic_information"} <= value_less


def test_doctor_actions_cover_checks_values_pairs_diagnosis_and_chit_chat(sample):
    types = {act["action"] for act in _actions(sample)}
    assert set(cmas.ACTION_TYPES) <= types
    checks = [check for act in _actions(sample) for slot, entries in act.items() if slot != "action"
              for entry in entries for check in entry.get("checks", [])]
    assert checks and any(check.get("values") for check in checks)
    for act in _actions(sample):
        if act["action"] == "diagnosis":
            assert act.get("disease"), act
    for did, dialogue in sample.dialogues.items():
        utterances = dialogue["utterances"]
        assert [a["action"] for a in utterances[0]["actions"]] == ["nod_prompt_salutations"], did
        assert "diagnosis" in [a["action"] for a in utterances[-1]["actions"]], did
    assert any(len(u.get("actions", [])) >= 2
               for d in sample.dialogues.values() for u in d["utterances"])


def test_labels_are_lowercase_and_free_of_span_delimiters(sample):
    """PPTOD spans (docs/format.md, "Model formats") cannot carry `= # ( ) |` inside a value."""
    for dialogue in sample.dialogues.values():
        for utt in dialogue["utterances"]:
            assert not re.search(r"[<>\n]", utt["text"])
            for label in _strings([utt.get("nlu"), utt.get("actions"), utt.get("dialog_state")]):
                assert label == label.lower().strip() and not re.search(r"[=#()|]", label), label


def test_sample_is_small(embedded_release):
    assert sum(p.stat().st_size for p in embedded_release.iterdir()) < 100_000


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


def _shingles(texts, n: int = 6) -> set[tuple[str, ...]]:
    out = set()
    for text in texts:
        words = _words(text)
        out.update(tuple(words[i:i + n]) for i in range(len(words) - n + 1))
    return out


def test_no_meditod_text_in_the_sample(sample, sample_release):
    """Read the authors' sample in place at run time; nothing of it is stored in this project."""
    authors = json.loads((sample_release / "dialogs.json").read_text(encoding="utf-8"))
    theirs = [u["text"] for d in authors.values() for u in d["utterances"]]
    ours = [u["text"] for d in sample.dialogues.values() for u in d["utterances"]]
    assert not _shingles(theirs) & _shingles(ours)
    ours_normalised = {" ".join(_words(t)) for t in ours}
    assert not [t for t in theirs if len(_words(t)) >= 4 and " ".join(_words(t)) in ours_normalised]
