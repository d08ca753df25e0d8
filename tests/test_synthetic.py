"""The paper-scale synthetic corpus: deterministic, shaped like paper Table 3, builds clean; its
realistic style says exactly its labels and builds as synthetic.
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
from helpers import edit_dialogs

import meditod
from meditod_hub.data import cmas, phrasings, synthetic
from meditod_hub.data.licence import GENERATOR, MEDITOD, SYNTHETIC
from meditod_hub.data.release import read_release


@pytest.fixture(scope="module")
def paper_scale():
    return synthetic.generate_dialogues(seed=0)


def _files(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize("style", synthetic.STYLES)
def test_same_seed_same_bytes_across_processes_and_hash_seeds(tmp_path, style):
    here = synthetic.generate_release(tmp_path / "here", seed=3, dialogues=6, style=style)
    env = {**os.environ, "PYTHONHASHSEED": "123"}
    subprocess.run([sys.executable, "-m", "meditod_hub.commands.synthetic", "--out", str(tmp_path / "there"),
                    "--seed", "3", "--dialogues", "6", "--style", style], check=True, env=env,
                   capture_output=True, cwd=Path(__file__).resolve().parent.parent)
    assert _files(here) == _files(tmp_path / "there")
    other = synthetic.generate_release(tmp_path / "other", seed=4, dialogues=6, style=style)
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


# -- the realistic style -------------------------------------------------------------------------

NEGATION = re.compile(r"\b(no|not|never|nope|none|nothing|nobody)\b|n't\b", re.IGNORECASE)
# Stance attributes: what they say is a yes or a no, checked through the negation cue.
STANCES = {"status", "impact"}
DENIAL_ATTRIBUTES = {"negative_characteristics", "not_aggravating_factor", "not_alleviating_factor"}
DENIAL_STANCES = {("residence", "not_living"), ("occupation", "false"), ("travel", "not_traveled"),
                  ("medication", "no")}
SHORT_ANSWERS = {answer for answers in phrasings.SHORT_ANSWERS.values() for answer in answers}


@pytest.fixture(scope="module")
def realistic():
    # 40 dialogues in which even the rarest details occur (sputum's colour and volume, which fit
    # one symptom only; at 40 dialogues some seeds draw neither)
    return synthetic.generate_dialogues(seed=1, dialogues=40, style="realistic")


def _says(text: str, key: str, value: str) -> bool:
    return any(re.search(rf"(?<!\w){re.escape(phrasings.bare(s))}(?!\w)", text, re.IGNORECASE)
               for s in phrasings.surfaces(key, value))


def _denies(base: str, status: str | None, entry: dict) -> bool:
    return status in ("negative", "unavail") or bool(DENIAL_ATTRIBUTES & set(entry)) or any(
        (base, entry.get(a)) in DENIAL_STANCES for a in STANCES)


def _patient_errors(utt: dict, doctor: dict) -> list[str]:
    asked = {(base, e["value"]) for act in doctor["actions"] for base, entries in act.items()
             if base != "action" for e in entries}
    errors, denies = [], False
    for item in utt["nlu"]:
        for key, entries in item.get("slots", {}).items():
            slot = cmas.split_slot_key(key)
            for entry in entries:
                denies |= _denies(slot.base, slot.status, entry)
                # a value not said comes from the question: "Any fever?" "No." / "When did the
                # cough start?" "Two days ago." (a bare answer, or one that says details)
                answers = len(entry) > 1 or any(f"{as_written(utt['text'])} ".startswith(f"{short} ")
                                                for short in SHORT_ANSWERS)
                if "value" in entry and not _says(utt["text"], slot.base, entry["value"]) and not (
                        answers and (slot.base, entry["value"]) in asked
                        and _says(doctor["text"], slot.base, entry["value"])):
                    errors.append(f"{key} value {entry['value']!r} unsaid")
                for attribute, value in entry.items():
                    for v in (value if isinstance(value, list) else [value]):
                        if attribute not in STANCES | {"value"} and not _says(utt["text"], attribute, v):
                            errors.append(f"{key} {attribute} {v!r} unsaid")
    if denies != bool(NEGATION.search(utt["text"])):
        errors.append(f"negation cue {not denies} but denial {denies}")
    return errors


def as_written(text: str) -> str:
    """A line typed into a chat box ("no, none of that") as the voice first wrote it."""
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "?", "!")) else text + "."


def _doctor_errors(utt: dict) -> list[str]:
    errors = []
    for act in utt["actions"]:
        for base, entries in act.items():
            for entry in entries if base != "action" else ():
                # travel and basic information have no head: their action value is a placeholder
                if "value" in cmas.SLOT_ATTRIBUTES.get(base, ("value",)) and not _says(
                        utt["text"], base, entry["value"]):
                    errors.append(f"{base} value {entry['value']!r} unsaid")
                errors += [f"{base} check {c['type']} {v!r} unsaid" for c in entry.get("checks", [])
                           for v in c.get("values", []) if not _says(utt["text"], c["type"], v)]
    return errors


def test_realistic_patients_type_some_lines_and_describe_the_complaint_inline(realistic):
    """About a quarter of patient lines come as typed into a chat box (no capital, no full stop:
    what a user of the assistant writes), and a chief complaint may carry its quality before the
    noun ("I've had a dry cough"): both say the same labels (the test above)."""
    patients = [u for d in realistic.values() for u in d["utterances"] if "nlu" in u]
    typed = [u["text"] for u in patients if not u["text"].endswith((".", "?", "!"))]
    assert 0.15 < len(typed) / len(patients) < 0.35, (len(typed), len(patients))
    assert any(t[0].islower() for t in typed)
    complaints = [d["utterances"][1] for d in realistic.values()]
    inline = [c for c in complaints if any(
        re.search(rf"\b{word} cough", c["text"]) for word in ("dry", "productive", "barky"))]
    assert inline and all(c["nlu"][0]["slots"]["positive_symptom"][0]["positive_characteristics"]
                          for c in inline)


def test_realistic_text_says_exactly_its_labels(realistic):
    """Every value is said by one of its phrasings in the utterance (a patient's, or the doctor's
    question it answers: "Any fever?" "No."), every check value the doctor offers is said, and a
    patient turn has a negation cue iff it denies something."""
    errors = []
    for did, dialogue in realistic.items():
        utterances = dialogue["utterances"]
        for i, utt in enumerate(utterances):
            found = _doctor_errors(utt) if "actions" in utt else _patient_errors(utt, utterances[i - 1])
            errors += [f"dialogue {did} utterance {i}: {e}: {utt['text']!r}" for e in found]
    assert not errors, "\n".join(errors[:20])


def test_realistic_style_says_every_kind_of_answer(realistic):
    patients = [u for d in realistic.values() for u in d["utterances"] if "nlu" in u]
    texts = Counter(u["text"] for u in patients)
    short = {u["text"] for u in patients for item in u["nlu"]
             if "slots" in item and u["text"] in SHORT_ANSWERS}
    keys = Counter(len(item.get("slots", {})) for u in patients for item in u["nlu"])
    statuses = {cmas.split_slot_key(k).status for u in patients for item in u["nlu"]
                for k in item.get("slots", {})}
    assert {"No.", "Yes."} <= short                               # labels from the question
    assert keys[2] + keys[3] > 20                                  # several slots in one turn
    assert set(cmas.POLARITY_PREFIXES + cmas.TEST_PREFIXES) <= statuses
    assert len(texts) > 0.4 * len(patients)  # varied, though "No." repeats as in MediTOD
    assert not [t for t in texts if any(f" {f} " in f" {t} " for f in ("you know", "uh", "um"))]


def test_realistic_labels_cover_the_template_vocabulary(realistic, paper_scale):
    """The realistic style says every slot and attribute the template style emits."""
    def said(dialogues):
        return {(cmas.split_slot_key(k).base, a) for d in dialogues.values() for u in d["utterances"]
                for item in u.get("nlu", []) for k, entries in item.get("slots", {}).items()
                for e in entries for a in e}
    assert said(paper_scale) == said(realistic)


def test_realistic_symptoms_are_real_names_with_lay_phrasings():
    for table in synthetic.DOMAIN_VALUES.values():
        for name in table["symptom"]:
            assert name == name.lower() and phrasings.surfaces("symptom", name), name
    assert _says("I've been having shortness of breath.", "symptom", "dyspnea")
    assert not _says("A coughing fit.", "symptom", "coughing")  # "a cough" is not in "coughing"


def test_realistic_release_builds_as_synthetic_and_a_tampered_one_does_not(tmp_path):
    source = synthetic.generate_release(tmp_path / "release", seed=2, dialogues=5,
                                        style="realistic")
    metadata = json.loads((source / "release.json").read_text(encoding="utf-8"))
    assert metadata["generator"] == {"name": GENERATOR, "seed": 2, "dialogues": 5,
                                     "style": "realistic"}
    read_release(source, strict=True)  # states equal the fold, every name is CMAS
    out = tmp_path / "meditod"
    assert meditod.build(meditod.BuildArguments(source=source, out=out)).licence.kind == SYNTHETIC

    del metadata["generator"]["style"]  # the same dialogues, said to be the template style
    (source / "release.json").write_text(json.dumps(metadata), encoding="utf-8")
    assert meditod.build(meditod.BuildArguments(source=source, out=out)).licence.kind == MEDITOD
    for style in ("realistic", "poetic"):
        metadata["generator"]["style"] = style
        (source / "release.json").write_text(json.dumps(metadata), encoding="utf-8")
        kind = SYNTHETIC if style == "realistic" else MEDITOD
        assert meditod.build(meditod.BuildArguments(source=source, out=out)).licence.kind == kind

    edit_dialogs(source, lambda d: d["1"]["utterances"][1].update(
        text="I have had a dry cough for a month."))
    assert meditod.build(meditod.BuildArguments(source=source, out=out)).licence.kind == MEDITOD


def test_unknown_style_is_refused():
    with pytest.raises(ValueError, match="unknown style"):
        synthetic.generate_dialogues(seed=0, dialogues=4, style="poetic")
