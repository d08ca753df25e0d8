"""The annotation app's storage: byte-exact round trips, the state fold, validation and drafts,
atomic and version-checked saves, transcript import, splits. Offline, no server, no browser.

The authors' sample is read in place and never written: its round trip runs on the file's text
in memory. The embedded synthetic sample is copied into a temporary folder before any save.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from meditod_hub.apps.annotate import schema as annotate_schema
from meditod_hub.apps.annotate.jsondoc import JsonDocument, Layout, replace_value
from meditod_hub.apps.annotate.labels import label_of, states_after, with_labels
from meditod_hub.apps.annotate.store import ReleaseStore
from meditod_hub.apps.annotate.transcript import parse_transcript
from meditod_hub.apps.annotate.versions import SaveConflict
from meditod_hub.apps.annotate.vocabulary import VOCABULARY_FILE, parse_vocabulary
from meditod_hub.data import cmas
from meditod_hub.data.release import DRAFT_KEY, ReleaseError, read_release
from meditod_hub.errors import MeditodError
from meditod_hub.files import stale_partials

PROJECT = Path(__file__).resolve().parent.parent


def digest(text: str) -> str:
    """Compared instead of the text itself: a failure must not print licensed dialogue text."""
    return hashlib.sha256(text.encode()).hexdigest()


def labels(dialogue: dict) -> list:
    return [json.loads(json.dumps(label_of(u))) for u in dialogue["utterances"]]


@pytest.fixture
def release(embedded_release, release_copy) -> Path:
    return release_copy(embedded_release)


# --- byte-exact round trips -----------------------------------------------------------------------
def test_saving_every_embedded_dialogue_unchanged_keeps_the_file_byte_for_byte(release):
    before = (release / "dialogs.json").read_bytes()
    store = ReleaseStore(release)
    for did in store.dialogue_ids():
        opened = store.open(did)
        result = store.save(did, labels(opened["dialogue"]), opened["version"], opened["origins"])
        assert not result.written and not result.draft, did
    assert (release / "dialogs.json").read_bytes() == before


def test_an_edit_then_its_undo_writes_the_file_back_byte_for_byte(release):
    """The second save really writes (the first changed the file): the splice restores every
    byte of the hand layout, one-line labels included."""
    before = (release / "dialogs.json").read_bytes()
    store = ReleaseStore(release)
    opened = store.open("9001")
    original = labels(opened["dialogue"])
    edited = json.loads(json.dumps(original))
    edited[1][0]["slots"]["positive_symptom"][0]["onset"] = "a fortnight ago"
    edited[2][0]["symptom"][0]["checks"].append({"type": "onset"})
    edited[3] = []  # a multi-line label emptied, then given back
    first = store.save("9001", edited, opened["version"])
    assert first.written and (release / "dialogs.json").read_bytes() != before
    second = store.save("9001", original, first.version)
    assert second.written
    assert (release / "dialogs.json").read_bytes() == before


def test_the_authors_sample_round_trips_byte_for_byte(sample_release):
    """In memory (the licensed sample is never written): every dialogue rebuilt from its labels
    alone, states refolded, serialises to the file's own bytes, also when forced to re-serialise."""
    text = (sample_release / "dialogs.json").read_text(encoding="utf-8")
    doc = JsonDocument(text)
    assert doc.layout.standard and doc.layout.indent == 2
    for did, dialogue in list(doc.value.items()):
        rebuilt, problems = with_labels(did, dialogue, labels(dialogue))
        assert not [p for p in problems if p.error], did
        assert not doc.set(did, rebuilt), f"dialogue {did} changed on an unchanged save"
        fresh = doc.layout.dumps(rebuilt, 1, one_line=False)
        start, end = doc._spans[did]
        assert digest(fresh) == digest(text[start:end]), f"dialogue {did}: re-serialised bytes differ"
    assert digest(doc.text) == digest(text)
    first = next(iter(doc.value))
    original = json.loads(json.dumps(doc.value[first]))
    edited = json.loads(json.dumps(original))
    edited["utterances"][1]["keywords"].append("x")
    assert doc.set(first, edited) and digest(doc.text) != digest(text)
    assert doc.set(first, original) and digest(doc.text) == digest(text)


def test_a_standard_file_stays_standard_after_edits_and_imports(sample_release):
    text = (sample_release / "dialogs.json").read_text(encoding="utf-8")
    doc = JsonDocument(text)
    did = next(iter(doc.value))
    edited = json.loads(json.dumps(doc.value[did]))
    edited["utterances"][1]["nlu"].append({"intent": "chit-chat"})
    edited[DRAFT_KEY] = True
    doc.set(did, edited)
    doc.set("new", {"utterances": [{"speaker": "doctor", "uttr_id": 0, "text": "é 😀",
                                    "keywords": [], "actions": []}]})
    assert digest(doc.text) == digest(json.dumps(doc.value, indent=2, ensure_ascii=False))
    assert digest(json.dumps(json.loads(doc.text))) == digest(json.dumps(doc.value))


def test_layouts_are_detected_and_kept():
    hand = '{\n    "a": {"x": [1, 2], "y": "b"},\n    "b": 1\n}\n'
    doc = JsonDocument(hand)
    assert doc.layout == Layout(indent=4, colon=": ", ensure_ascii=False, standard=False)
    doc.set("a", {"x": [1, 2, 3], "y": "b", "z": "é"})
    assert doc.text == '{\n    "a": {"x": [1, 2, 3], "y": "b", "z": "é"},\n    "b": 1\n}\n'
    compact = JsonDocument('{"a":"\\u00e9","b":[1]}')
    assert compact.layout.indent is None and compact.layout.ensure_ascii
    compact.set("c", ["é"])
    assert compact.text == '{"a":"\\u00e9","b":[1],"c":["\\u00e9"]}'
    assert replace_value('["1", "2"]\n', ["1", "2", "3"]) == '["1", "2", "3"]\n'
    assert replace_value("", ["9"]) == '["9"]\n'


# --- the questionnaire's vocabulary is cmas's ------------------------------------------------------
def test_every_cmas_name_has_its_question_and_no_question_names_anything_else():
    words = annotate_schema.questions()
    assert set(words["intents"]) == set(cmas.PATIENT_INTENTS)
    assert set(words["actions"]) == set(cmas.ACTION_TYPES)
    assert set(words["slots"]) == set(cmas.BASE_SLOTS)
    for base, attrs in cmas.SLOT_ATTRIBUTES.items():
        assert set(words["slots"][base]["attributes"]) == set(attrs), base
        assert ("status" in words["slots"][base]) == (base in cmas.MEDICAL_BASE_SLOTS), base
    assert set(words["action_values"]) == set(cmas.ACTION_SLOTS)
    assert set(words["check_families"]) == set(cmas.CHECK_TYPE_ATTRIBUTES)
    assert set(words["statuses"]) == set(cmas.POLARITY_PREFIXES + cmas.TEST_PREFIXES)
    schema = annotate_schema.schema()
    for slot in schema["patient"]["slots"]:
        for attr in slot["attributes"]:
            assert attr["list"] == cmas.is_list_attribute(attr["name"])
            assert attr["medical"] == cmas.is_medical_attribute(slot["base"], attr["name"])
    for slot in schema["doctor"]["slots"]:  # every check type seen in the data is offered
        offered = [c["type"] for c in slot["checks"]]
        known = list(cmas.CHECK_TYPES.get(slot["slot"], ()))
        assert known == offered[:len(known)]


def test_the_page_learns_which_task_labels_each_speaker_and_under_which_key(embedded_release):
    """The schema the page reads names, per speaker, the task whose model suggests its labels and
    the utterance key the release keeps them under (the page spells neither)."""
    schema = annotate_schema.schema()
    labels = {speaker: {"task": schema[speaker]["task"], "key": schema[speaker]["label_key"]}
              for speaker in ("patient", "doctor")}
    assert labels == {"patient": {"task": "nlu", "key": "nlu"},
                      "doctor": {"task": "pol", "key": "actions"}}
    dialogues = json.loads((embedded_release / "dialogs.json").read_text(encoding="utf-8"))
    for dialogue in dialogues.values():
        for utterance in dialogue["utterances"]:
            assert isinstance(utterance[labels[utterance["speaker"]]["key"]], list)


# --- the tracking box's state is the dataset's fold --------------------------------------------
@pytest.mark.parametrize("which", ["embedded", "authors"])
def test_states_after_each_utterance_are_the_release_states(which, request):
    folder = request.getfixturevalue("embedded_release" if which == "embedded" else "sample_release")
    dialogues = json.loads((folder / "dialogs.json").read_text(encoding="utf-8"))
    turns = 0
    for did, dialogue in dialogues.items():
        last = {}
        for utt, state in zip(dialogue["utterances"], states_after(dialogue)):
            if utt["speaker"] == "patient":
                last = utt["dialog_state"]
                turns += 1
            assert digest(json.dumps(state)) == digest(json.dumps(last)), \
                f"dialogue {did}, utterance {utt['uttr_id']}"
    assert turns > 10


# --- validation, drafts and the build -----------------------------------------------------------------
def test_a_dialogue_that_does_not_validate_is_saved_as_a_flagged_draft_the_build_reports(release, tmp_path):
    import meditod

    store = ReleaseStore(release)
    opened = store.open("9002")
    bad = labels(opened["dialogue"])
    bad[1] = [{"intent": "inform", "slots": {"positive_symptom": [{"value": {"not": "a string"}}]}}]
    result = store.save("9002", bad, opened["version"])
    assert result.written and result.draft
    assert any(p.error and p.uttr_id == 1 for p in result.problems)
    saved = json.loads((release / "dialogs.json").read_text(encoding="utf-8"))["9002"]
    assert saved[DRAFT_KEY] is True
    assert [s for s in store.summaries() if s["id"] == "9002"][0]["draft"]
    with pytest.raises(ReleaseError) as caught:
        meditod.build(meditod.BuildArguments(source=release, out=tmp_path / "out"))
    report = str(caught.value)
    assert "dialogue 9002, utterance 1: slot 'positive_symptom' `value` must be a string" in report
    assert "dialogue 9002: saved as a draft" in report
    fixed = store.save("9002", labels(opened["dialogue"]), result.version)
    assert not fixed.draft
    assert (release / "dialogs.json").read_bytes() == (PROJECT / "data/sample/dialogs.json").read_bytes()


def test_saving_recomputes_dialog_state_with_the_fold(release):
    store = ReleaseStore(release)
    opened = store.open("9001")
    new = labels(opened["dialogue"])
    new[1] = [{"intent": "inform", "slots": {"negative_symptom": [{"value": "coughing"}]}}]
    store.save("9001", new, opened["version"])
    saved = read_release(release).dialogues["9001"]["utterances"]
    assert saved[1]["dialog_state"] == {"negative_symptom": [{"value": "coughing"}]}
    assert "negative_symptom" not in saved[3]["dialog_state"] or \
        {"value": "coughing"} not in saved[3]["dialog_state"]["negative_symptom"]
    assert not read_release(release).problems  # the fold the validator recomputes agrees


# --- two editors -------------------------------------------------------------------------------------
def test_two_editors_on_different_utterances_are_merged_and_on_the_same_one_refused(release):
    store = ReleaseStore(release)
    tab1, tab2 = store.open("9003"), store.open("9003")
    a = labels(tab1["dialogue"])
    a[1] = [{"intent": "chit-chat"}]
    saved = store.save("9003", a, tab1["version"])
    b = labels(tab2["dialogue"])
    b[2] = [{"action": "chit-chat"}]
    merged = store.save("9003", b, tab2["version"])
    assert merged.merged == [1]
    both = read_release(release).dialogues["9003"]["utterances"]
    assert both[1]["nlu"] == [{"intent": "chit-chat"}] and both[2]["actions"] == [{"action": "chit-chat"}]
    c = labels(tab2["dialogue"])
    c[1] = [{"intent": "nod_prompt_salutations"}]
    with pytest.raises(SaveConflict) as conflict:
        store.save("9003", c, tab2["version"])
    assert conflict.value.utterances == [1]
    assert read_release(release).dialogues["9003"]["utterances"][1]["nlu"] == [{"intent": "chit-chat"}]
    forced = store.save("9003", c, tab2["version"], overwrite=True)
    assert forced.written and saved.version != forced.version


def test_a_file_changed_on_disk_is_reread_before_saving(release):
    store = ReleaseStore(release)
    opened = store.open("9004")
    outside = json.loads((release / "dialogs.json").read_text(encoding="utf-8"))
    outside["9004"]["utterances"][1]["nlu"] = [{"intent": "chit-chat"}]
    (release / "dialogs.json").write_text(json.dumps(outside, indent=2), encoding="utf-8")
    mine = labels(opened["dialogue"])
    mine[2] = [{"action": "other"}]
    result = store.save("9004", mine, opened["version"])
    assert result.merged == [1]
    saved = read_release(release).dialogues["9004"]["utterances"]
    assert saved[1]["nlu"] == [{"intent": "chit-chat"}] and saved[2]["actions"] == [{"action": "other"}]


# --- interrupted saves ------------------------------------------------------------------------------
def test_a_failure_between_write_and_rename_leaves_the_previous_file(release, monkeypatch):
    before = (release / "dialogs.json").read_bytes()
    store = ReleaseStore(release)
    opened = store.open("9001")
    new = labels(opened["dialogue"])
    new[1] = [{"intent": "chit-chat"}]

    def disk_full(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", disk_full)
    with pytest.raises(MeditodError, match="nothing was saved"):
        store.save("9001", new, opened["version"])
    monkeypatch.undo()
    assert (release / "dialogs.json").read_bytes() == before
    assert not stale_partials(release)
    assert store.open("9001")["version"] == opened["version"], "memory follows the disk"


KILLED_MID_SAVE = """
import json, os, sys
from meditod_hub.apps.annotate.labels import label_of
from meditod_hub.apps.annotate.store import ReleaseStore
store = ReleaseStore(sys.argv[1])
opened = store.open("9001")
labels = [label_of(u) for u in opened["dialogue"]["utterances"]]
labels[1] = [{"intent": "chit-chat"}]
def paused(src, dst):
    print("written", src, flush=True)
    sys.stdin.read()  # blocks until the test kills this process
os.replace = paused
store.save("9001", labels, opened["version"])
"""


def test_killing_the_process_mid_save_leaves_the_previous_file(release):
    before = (release / "dialogs.json").read_bytes()
    env = {**os.environ, "PYTHONPATH": str(PROJECT)}
    proc = subprocess.Popen([sys.executable, "-c", KILLED_MID_SAVE, str(release)], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("written"), line
        temp = Path(line.split(" ", 1)[1].strip())
        assert temp.exists() and temp.read_bytes() != before, "the new text was fully written"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert (release / "dialogs.json").read_bytes() == before
    read_release(release)  # still a whole, valid release
    ReleaseStore(release)  # the next start removes the killed save's temporary file
    assert not temp.exists()


# --- import, long text, splits, provenance ------------------------------------------------------
def test_a_transcript_becomes_an_unlabelled_dialogue():
    utterances = parse_transcript("D: Hello.\n\nPatient:  I cough.\ndoctor: Since when?\np: A week", "t.txt")
    assert [(u["speaker"], u["uttr_id"], u["text"]) for u in utterances] == [
        ("doctor", 0, "Hello."), ("patient", 1, "I cough."), ("doctor", 2, "Since when?"),
        ("patient", 3, "A week")]
    assert utterances[1] == {"speaker": "patient", "uttr_id": 1, "text": "I cough.",
                             "keywords": [], "nlu": []}


@pytest.mark.parametrize("text,line", [("D: hi\nNurse: hello", 2), ("D: hi\nP:\n", 2),
                                       ("hello there", 1), ("D: a\nP: b\nD c", 3)])
def test_a_malformed_transcript_line_is_a_one_line_error_naming_the_line(text, line):
    with pytest.raises(MeditodError) as caught:
        parse_transcript(text, "visit.txt")
    message = str(caught.value)
    assert message.startswith(f"visit.txt, line {line}: ") and "\n" not in message
    assert "hello" not in message and "Nurse" not in message  # never quotes the text


def test_long_unicode_and_emoji_utterances_survive_labelling_and_the_build(release, tmp_path):
    import meditod

    long_text = ("Ça fait mal ici 😷🤒, 咳嗽 — " * 801).strip()
    assert len(long_text) >= 20_000
    store = ReleaseStore(release)
    did = store.import_transcript(f"D: Qu'est-ce qui vous amène ? 👋\nP: {long_text}\n"
                                  "D: Depuis quand ?", "visite.txt")
    opened = store.open(did)
    new = labels(opened["dialogue"])
    new[1] = [{"intent": "inform", "slots": {"positive_symptom": [
        {"value": "toux 😷", "location": ["poitrine", "gorge — haut"]}]}}]
    new[2] = [{"action": "inquire", "symptom": [{"value": "toux 😷", "checks": [{"type": "onset"}]}]}]
    store.save(did, new, opened["version"])
    store.assign_split(did, "train")
    saved = json.loads((release / "dialogs.json").read_text(encoding="utf-8"))[did]
    assert saved["utterances"][1]["text"] == long_text
    symptoms = new[1][0]["slots"]["positive_symptom"]
    assert saved["utterances"][1]["dialog_state"] == {"positive_symptom": symptoms}
    meditod.build(meditod.BuildArguments(source=release, out=tmp_path / "built"))


def test_imported_dialogues_get_fresh_ids_and_a_taken_id_is_refused(release):
    store = ReleaseStore(release)
    assert store.import_transcript("D: a\nP: b", "t") == "9011"
    assert store.import_transcript("D: a\nP: b", "t", "visit-2") == "visit-2"
    with pytest.raises(MeditodError, match="already exists"):
        store.import_transcript("D: a\nP: b", "t", "9001")
    with pytest.raises(MeditodError, match="use letters"):
        store.import_transcript("D: a\nP: b", "t", "../x")


def test_split_files_are_untouched_until_a_split_is_assigned(release):
    files = {n: (release / n).read_bytes() for n in ("train_ids.json", "valid_ids.json",
                                                     "test_ids.json", "ood_ids.json")}
    store = ReleaseStore(release)
    did = store.import_transcript("D: a\nP: b\nD: c", "t")
    assert {n: (release / n).read_bytes() for n in files} == files
    assert store.splits().get(did) is None
    store.assign_split(did, "validation")
    assert json.loads((release / "valid_ids.json").read_text())[-1] == did
    store.assign_split("9001", "test")
    assert "9001" not in json.loads((release / "train_ids.json").read_text())
    assert json.loads((release / "test_ids.json").read_text())[-1] == "9001"
    assert read_release(release).splits["test"][-1] == "9001"
    with pytest.raises(MeditodError, match="unknown split"):
        store.assign_split("9001", "dev")


def test_a_new_folder_becomes_a_release_once_splits_are_assigned(tmp_path, capsys):
    import meditod

    store = ReleaseStore(tmp_path / "new")
    did = store.import_transcript("D: Hello, what brings you in?\nP: Chest pain.\nD: Since when?", "t")
    opened = store.open(did)
    new = labels(opened["dialogue"])
    new[0] = [{"action": "nod_prompt_salutations"}]
    new[1] = [{"intent": "inform", "slots": {"positive_symptom": [{"value": "chest pain"}]}}]
    new[2] = [{"action": "inquire", "symptom": [{"value": "chest pain", "checks": [{"type": "onset"}]}]}]
    store.save(did, new, opened["version"])
    store.assign_split(did, "train")
    assert sorted(p.name for p in (tmp_path / "new").iterdir()) == [
        "dialogs.json", "test_ids.json", "train_ids.json", "valid_ids.json"]
    built = meditod.build(meditod.BuildArguments(source=tmp_path / "new", out=tmp_path / "out"))
    assert built.sizes["train"]["nlu"] == 1
    assert {p.message for p in built.release.problems} == {  # only the unassigned splits
        "split 'validation' is empty (it is built with no rows)",
        "split 'test' is empty (it is built with no rows)"}


def test_each_items_origin_is_recorded(release):
    store = ReleaseStore(release)
    opened = store.open("9005")
    assert opened["origins"][1] == ["release"] * len(opened["dialogue"]["utterances"][1]["nlu"])
    new = labels(opened["dialogue"])
    new[1] = [{"intent": "inform"}, {"intent": "chit-chat"}, {"intent": "nod_prompt_salutations"}]
    origins = [list(o) for o in opened["origins"]]
    origins[1] = ["suggested", "edited", "manual"]
    store.save("9005", new, opened["version"], origins, annotator="ann-1", models={"nlu": "m"})
    recorded = json.loads((release / "provenance.json").read_text())
    assert recorded["9005"]["1"] == {"origins": ["suggested", "edited", "manual"],
                                     "annotator": "ann-1", "models": {"nlu": "m"}}
    assert list(recorded["9005"]) == ["1"], "only changed utterances are recorded"
    assert store.open("9005")["origins"][1] == ["suggested", "edited", "manual"]


@pytest.mark.parametrize("text", ["{", '{"a": 1} x', "[1]", '{"a" 1}', '{"a": 1,}', ""])
def test_a_dialogs_file_that_is_not_a_json_object_is_a_one_line_error(tmp_path, text):
    (tmp_path / "dialogs.json").write_text(text, encoding="utf-8")
    with pytest.raises(MeditodError) as caught:
        ReleaseStore(tmp_path)
    assert str(caught.value).startswith(f"{tmp_path / 'dialogs.json'}: not a JSON object")
    assert "\n" not in str(caught.value)
    assert (tmp_path / "dialogs.json").read_text(encoding="utf-8") == text, "never rewritten"


def test_a_folder_of_other_files_is_not_turned_into_a_release(tmp_path):
    (tmp_path / "README.md").write_text("a built dataset, say")
    with pytest.raises(MeditodError, match="holds files but no dialogs.json"):
        ReleaseStore(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["README.md"]


@pytest.mark.parametrize("text, expected", [
    ("# canonical\ncoughing\n\n fever \n", {"coughing", "fever"}),
    ('["coughing", "fever"]', {"coughing", "fever"}),
    ('{"symptom": ["coughing"], "habit": ["smoking"]}', {"coughing", "smoking"}),
    ('[{"code": "fever", "display_name": "Fever", "keywords": ["pyrexia"]}]', {"fever", "Fever"}),
])
def test_a_vocabulary_is_read_from_lines_or_json(text, expected):
    assert parse_vocabulary(text, "v.txt") == expected


@pytest.mark.parametrize("text, phrase", [("", "no values"), ("[1, 2", "does not parse"),
                                          ("[]", "no values")])
def test_a_bad_vocabulary_is_a_one_line_error_naming_the_file(text, phrase):
    with pytest.raises(MeditodError, match=f"v.txt: .*{phrase}"):
        parse_vocabulary(text, "v.txt")


def test_a_loaded_vocabulary_is_saved_beside_the_release_and_merged(tmp_path):
    store = ReleaseStore(tmp_path / "r", vocabulary=frozenset({"wheezing"}))
    assert store.values()["vocabulary"] == ["wheezing"]
    assert store.add_vocabulary("coughing\nfever", "a.txt") == 2
    assert store.add_vocabulary("fever", "b.txt") == 0  # known already
    assert ReleaseStore(tmp_path / "r").vocabulary() == ["coughing", "fever"]  # --vocabulary: session only
    (tmp_path / "r" / VOCABULARY_FILE).write_text("garbage", encoding="utf-8")
    with pytest.raises(MeditodError, match=f"{VOCABULARY_FILE}: not a vocabulary this portal wrote"):
        store.values()


def test_a_labelled_release_counts_its_own_canonical_values(release, tmp_path):
    """Issue 25: the page said "0 canonical values loaded" on a fully labelled release: it
    counted the loaded vocabulary only. The store now gives the release's own values in medical
    (canonical) fields, which the page counts with the vocabulary."""
    values = ReleaseStore(release).values()
    canonical = values["release_canonical"]
    assert values["vocabulary"] == [] and len(canonical) > 10
    assert "coughing" in canonical and canonical == sorted(set(canonical))
    symptom = values["patient"]["symptom"]
    assert set(symptom["value"]) <= set(canonical)
    assert not set(symptom.get("onset", [])) & set(canonical)  # onset is not a medical field
    assert ReleaseStore(tmp_path / "new").values()["release_canonical"] == []


def test_an_imported_transcript_goes_into_its_split(tmp_path):
    store = ReleaseStore(tmp_path / "r")
    did = store.import_transcript("D: hi\nP: a cough", "t", split="validation")
    assert store.splits() == {did: "validation"}
    with pytest.raises(MeditodError, match="unknown split 'dev'"):
        store.import_transcript("D: hi\nP: a cough", "t", split="dev")
    assert store.dialogue_ids() == [did]  # a refused import writes nothing


def test_a_write_that_fails_midway_leaves_the_store_as_the_file_is(release):
    """A dialogue that cannot be written (a lone surrogate reached the store) is forgotten, so
    the next save writes only what it should."""
    store = ReleaseStore(release)
    with pytest.raises(UnicodeEncodeError):
        store.import_transcript("D: a \ud800\nP: b", "t.txt")
    opened = store.open("9001")
    new = labels(opened["dialogue"])
    new[1] = [{"intent": "chit-chat"}]
    assert store.save("9001", new, opened["version"]).written
    assert set(json.loads((release / "dialogs.json").read_text())) == set(store.dialogue_ids())
