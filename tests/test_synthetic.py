"""The paper-scale synthetic corpus: deterministic, shaped like paper Table 3, builds clean.
Offline, CPU; the paper-scale generation is done once per module (a few seconds)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import meditod
from meditod_hub.data import cmas, synthetic
from meditod_hub.data.release import read_release


@pytest.fixture(scope="module")
def paper_scale():
    return synthetic.generate_dialogues(seed=0)


def _files(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_same_seed_same_bytes_across_processes_and_hash_seeds(tmp_path):
    here = synthetic.generate_release(tmp_path / "here", seed=3, dialogues=6)
    env = {**os.environ, "PYTHONHASHSEED": "123"}
    subprocess.run([sys.executable, "-m", "meditod_hub.data.synthetic", "--out", str(tmp_path / "there"),
                    "--seed", "3", "--dialogues", "6"], check=True, env=env, capture_output=True,
                   cwd=Path(__file__).resolve().parent.parent)
    assert _files(here) == _files(tmp_path / "there")
    other = synthetic.generate_release(tmp_path / "other", seed=4, dialogues=6)
    assert _files(other)["dialogs.json"] != _files(here)["dialogs.json"]


def test_small_release_builds_with_no_warning(tmp_path):
    source = synthetic.generate_release(tmp_path / "release", seed=1, dialogues=5)
    release = read_release(source, strict=True)  # states equal the fold, every name is CMAS
    assert {split: len(ids) for split, ids in release.splits.items()} == {
        "train": 2, "validation": 1, "test": 1, "test_ood": 1}
    meditod.build(meditod.BuildArguments(source=source, out=tmp_path / "meditod"))
    infos = json.loads((tmp_path / "meditod" / "dataset_infos.json").read_text(encoding="utf-8"))
    rows = {config: sum(s["num_examples"] for s in info["splits"].values())
            for config, info in infos.items()}
    patients = sum(u["speaker"] == "patient" for d in release.dialogues.values()
                   for u in d["utterances"])
    assert rows["nlu"] == rows["pol"] == rows["nlg"] == patients


def test_split_sizes_follow_the_paper_and_scale_down():
    assert synthetic.split_sizes() == {"train": 175, "validation": 20, "test": 18, "test_ood": 20}
    assert synthetic.split_sizes(40) == {"train": 31, "validation": 3, "test": 3, "test_ood": 3}
    with pytest.raises(ValueError, match="at least 4"):
        synthetic.split_sizes(3)
    ids = synthetic.split_ids(9)
    assert sorted(sum(ids.values(), []), key=int) == [str(i) for i in range(1, 10)]


def test_paper_table_3_shape(paper_scale):
    for split, ids in synthetic.split_ids().items():
        count, mean_utterances, mean_words = synthetic.PAPER_SHAPE[split]
        utterances = [u for did in ids for u in paper_scale[did]["utterances"]]
        assert len(ids) == count
        assert len(utterances) / count == pytest.approx(mean_utterances, abs=0.1), split
        words = sum(len(u["text"].split()) for u in utterances) / len(utterances)
        assert words == pytest.approx(mean_words, rel=0.05), split


def _shares(counter: Counter) -> dict[str, float]:
    total = sum(counter.values())
    return {key: 100 * n / total for key, n in counter.items()}


def test_intent_action_and_slot_shares_match_the_paper(paper_scale):
    intents, actions, slots = Counter(), Counter(), Counter()
    for dialogue in paper_scale.values():
        for utt in dialogue["utterances"]:
            for item in utt.get("nlu", []):
                intents[item["intent"]] += 1
                slots.update(cmas.split_slot_key(key).base for key in item.get("slots", {}))
            if "actions" in utt:
                actions[utt["actions"][0]["action"]] += 1
    for counter, paper in ((intents, synthetic.PATIENT_INTENT_SHARES),
                           (actions, synthetic.DOCTOR_ACTION_SHARES)):
        for name, share in _shares(counter).items():
            assert share == pytest.approx(paper[name], abs=1.5), name
    assert _shares(slots)["symptom"] == pytest.approx(synthetic.SLOT_SHARES["symptom"], abs=5)


def test_dialogues_alternate_and_ood_is_musculoskeletal(paper_scale):
    ood = set(synthetic.split_ids()["test_ood"])
    for did, dialogue in paper_scale.items():
        utterances = dialogue["utterances"]
        assert [u["speaker"] for u in utterances] == (
            ["doctor", "patient"] * (len(utterances) // 2) + ["doctor"]), did
        domain = "musculoskeletal" if did in ood else "respiratory"
        symptoms = {e["value"] for u in utterances for item in u.get("nlu", [])
                    for key, entries in item.get("slots", {}).items()
                    if cmas.split_slot_key(key).base == "symptom" for e in entries}
        assert symptoms <= set(synthetic.DOMAIN_VALUES[domain]["symptom"]), did


def test_values_are_lowercase_and_free_of_span_delimiters(paper_scale):
    """Every label value comes from these pools; PPTOD spans (docs/format.md, "Model formats") cannot carry
    `= # ( ) |` inside a value."""
    pools = list(synthetic.VALUES.values()) + [
        pool for table in synthetic.DOMAIN_VALUES.values() for pool in table.values()]
    values = {value for pool in pools for value in pool}
    assert values and not [v for v in values if v != v.lower().strip() or re.search(r"[=#()|]", v)]
    assert not [u["text"] for d in paper_scale.values() for u in d["utterances"]
                if re.search(r"[<>\n]", u["text"])]


def test_every_check_type_is_answered_by_attributes_of_its_slot():
    for slot, kinds in cmas.CHECK_TYPES.items():
        assert slot in cmas.ACTION_SLOTS
        for kind in kinds:
            answers = cmas.CHECK_TYPE_ATTRIBUTES.get(kind, (kind,))
            assert set(answers) <= set(cmas.SLOT_ATTRIBUTES[slot]), (slot, kind)


def test_shares_name_exactly_the_cmas_vocabulary():
    assert set(synthetic.PATIENT_INTENT_SHARES) == set(cmas.PATIENT_INTENTS)
    assert set(synthetic.DOCTOR_ACTION_SHARES) == set(cmas.ACTION_TYPES)
    assert set(synthetic.SLOT_SHARES) == set(synthetic.DOCTOR_ASK) == set(cmas.BASE_SLOTS)
    statuses = set(cmas.POLARITY_PREFIXES + cmas.TEST_PREFIXES) | {None}
    assert set(synthetic.PATIENT_SAYS) == statuses
    assert set(synthetic.NO_DETAIL_STATUSES) <= statuses
