"""Read and validate a MediTOD release folder (docs/format.md, "Release format").

A release is `dialogs.json` plus `train_ids.json`, `valid_ids.json`, `test_ids.json`, and
optionally an out-of-domain id file (`ood_ids.json` or `test_ood_ids.json`) or a second release
folder whose dialogues are all out-of-domain.

Every problem names the file, the dialogue and the utterance. Problems come in two severities:
errors make the release unloadable (the build refuses and lists *all* of them); warnings are
loadable and reported (the build refuses them too under `strict`). Messages never quote dialogue
text or label values, only schema names, so logs carry no MediTOD data.

Policy for irregular dialogues (the authors' code silently assumes strict doctor/patient
alternation ending with the doctor): such dialogues are loaded and views are built by speaker,
not by index parity; each irregularity is a warning. See `views` for how rows are formed.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from meditod_hub import strictjson
from meditod_hub.data import cmas
from meditod_hub.data.state import DialogueState
from meditod_hub.errors import MeditodError, name_ids

OOD_SPLIT = "test_ood"  # the out-of-domain (musculoskeletal) test split: named here alone
SPLIT_FILES = {"train": "train_ids.json", "validation": "valid_ids.json", "test": "test_ids.json"}
OOD_SPLIT_FILES = ("ood_ids.json", f"{OOD_SPLIT}_ids.json")
DIALOGS_FILE = "dialogs.json"
# The utterance keys of a release's labels: a patient line's CMAS items (what NLU predicts), a
# doctor line's actions (what POL predicts).
PATIENT_LABELS, DOCTOR_LABELS = "nlu", "actions"
# Optional: {"name", "description", "license" (declares the dialogues your own), "generator"
# (written by meditod_hub.data.synthetic)}; what it proves is `licence.licence_of`'s to decide.
METADATA_FILE = "release.json"
GENERATOR = "meditod_hub.data.synthetic"  # release.json's generator name for the kit's own corpus
# Dialogue-level flag the annotation app (`meditod annotate`) sets on a dialogue saved while its
# labels do not validate; the build reports it like any other problem.
DRAFT_KEY = "draft"
SPLITS = ("train", "validation", "test", OOD_SPLIT)
EVAL_SPLITS = SPLITS[2:]  # where models are scored and the paper reports: test, test_ood
# Longer than any real utterance (the longest in the authors' sample is ~200 words); every later
# row of its dialogue repeats it in `context`, so it is reported.
LONG_UTTERANCE_CHARS = 20_000


@dataclass(frozen=True)
class Problem:
    file: str
    message: str
    dialogue_id: str | None = None
    uttr_id: int | None = None
    error: bool = True

    def __str__(self) -> str:
        where = [self.file]
        if self.dialogue_id is not None:
            where.append(f"dialogue {self.dialogue_id}")
        if self.uttr_id is not None:
            where.append(f"utterance {self.uttr_id}")
        level = "error" if self.error else "warning"
        return f"{level}: {', '.join(where)}: {self.message}"


class ReleaseError(MeditodError):
    """The release cannot be built; `problems` lists every problem found, not only the first."""

    def __init__(self, problems: list[Problem], reason: str):
        self.problems = problems
        lines = [reason] + [f"  {p}" for p in problems]
        super().__init__("\n".join(lines))


@dataclass
class Release:
    dialogues: dict[str, dict]                # dialogue id -> dialogue object, as in the release
    splits: dict[str, list[str]]              # split -> dialogue ids, in id-file order
    problems: list[Problem] = field(default_factory=list)  # warnings that were accepted
    metadata: dict = field(default_factory=dict)          # release.json
    fingerprint: str = ""                                  # sha256 over every file read
    # every other file in the release folder(s) -> its sha256: the build publishes none, but the
    # licence proof covers them, so nothing rides along with a release proven synthetic
    other_files: dict[str, str] = field(default_factory=dict)

    @property
    def has_ood(self) -> bool:
        return bool(self.splits.get(OOD_SPLIT))


class _Files:
    """Reads release files, hashing each one for the build's fingerprint."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        self.digest = hashlib.sha256()
        self.read: set[Path] = set()

    def text(self, path: Path) -> str | None:
        if path.is_dir():
            self.problems.append(Problem(str(path), "is a folder, expected a JSON file"))
            return None
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            self.problems.append(Problem(str(path), "file not found"))
            return None
        except OSError as exc:
            self.problems.append(Problem(str(path), f"cannot read file ({exc.__class__.__name__})"))
            return None
        self.read.add(path.resolve())
        self.digest.update(f"{path.name}\n{len(data)}\n".encode() + data)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            self.problems.append(Problem(str(path), f"not UTF-8 (byte {exc.start}): save it as UTF-8"))
            return None

    def unread(self, folder: Path, prefix: str = "") -> dict[str, str]:
        """`prefix` + path -> sha256 of every file under `folder` that was not read."""
        found = {}
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            if path.resolve() not in self.read:
                try:
                    with path.open("rb") as f:
                        digest = hashlib.file_digest(f, "sha256").hexdigest()
                except OSError as exc:
                    digest = f"unreadable ({type(exc).__name__})"
                found[prefix + path.relative_to(folder).as_posix()] = digest
        return found

    def json(self, path: Path, hook=None):
        text = self.text(path)
        if text is None:
            return None
        try:
            value = strictjson.loads(text, object_pairs_hook=hook)
        except strictjson.NotJsonNumber as exc:
            self.problems.append(Problem(str(path), f"holds {exc}: write the value as a string, "
                                                    "or remove it"))
            return None
        except json.JSONDecodeError as exc:
            self.problems.append(Problem(str(path), f"invalid JSON at line {exc.lineno}, column "
                                                    f"{exc.colno}: {exc.msg}"))
            return None
        except RecursionError:
            self.problems.append(Problem(str(path), "JSON nested too deeply to read: not a "
                                                    "release file"))
            return None
        if _SURROGATE_ESCAPE.search(text) is None:  # a lone surrogate needs a \\ud800-\\udfff escape
            return value
        if isinstance(value, dict) and path.name == DIALOGS_FILE:  # only those dialogues refused
            for did in [did for did, dialogue in value.items()
                        if self.surrogate(path, dialogue, did)]:
                del value[did]
        elif self.surrogate(path, value):
            return None
        return value


    def surrogate(self, path: Path, value, did: str | None = None) -> bool:
        """Whether `value` (a whole file, or dialogue `did`) holds a lone surrogate: valid JSON
        (`"\\ud800"`), but no file or Parquet column can hold it. Said as a problem."""
        where = _lone_surrogate(value if did is None else {did: value})
        if where is None:
            return False
        keys, text = where
        uid = keys[2] if did is not None and len(keys) > 2 and keys[1] == "utterances" \
            and isinstance(keys[2], int) else None
        name = keys[-1] if uid is not None and len(keys) == 4 else ".".join(map(str, keys[1:] if
                                                                                 did else keys))
        self.problems.append(Problem(str(path), f"`{name or 'a key'}` holds a lone surrogate "
                                                f"({text!a}), which is not Unicode text: fix that "
                                                "\\u escape", did, uid))
        return True


# A file read as UTF-8 holds no surrogate; one in its JSON comes from a \\u escape (a pair of
# them, valid, too: those files are walked string by string, `_lone_surrogate`).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _is_text(value: str) -> bool:
    """No lone surrogate: ASCII, or UTF-8 encodes it (one C-level pass either way)."""
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _lone_surrogate(value, keys: tuple = ()) -> tuple[tuple, str] | None:
    """(the key path, the string) of the first string or key in `value` that holds a lone
    surrogate (\\ud800-\\udfff), if any."""
    if isinstance(value, str):
        return None if _is_text(value) else (keys, value[:60])
    items = value.items() if isinstance(value, dict) else enumerate(value) \
        if isinstance(value, list) else ()
    for key, inner in items:
        if isinstance(key, str) and (found := _lone_surrogate(key, keys)) is not None:
            return found
        if (found := _lone_surrogate(inner, (*keys, key))) is not None:
            return found
    return None


class _DuplicateKeys:
    """`object_pairs_hook` that records every object whose keys repeat: plain `json.loads` keeps
    the last value silently, so a dialogue id listed twice would lose a dialogue unseen."""

    def __init__(self):
        self.found: dict[int, list[str]] = {}  # id() of the resulting dict -> repeated keys

    def __call__(self, pairs: list[tuple[str, object]]) -> dict:
        result = dict(pairs)
        if len(result) != len(pairs):
            seen: set[str] = set()
            self.found[id(result)] = sorted({k for k, _ in pairs if k in seen or seen.add(k)})
        return result


def _load_ids(path: Path, files: _Files) -> list[str] | None:
    problems = files.problems
    ids = files.json(path)
    if ids is None:
        return None
    if not isinstance(ids, list) or not all(isinstance(i, (str, int)) for i in ids):
        problems.append(Problem(str(path), "expected a JSON list of dialogue ids"))
        return None
    seen: set[str] = set()
    out = []
    for i in map(str, ids):
        if i in seen:
            problems.append(Problem(str(path), "id listed twice", dialogue_id=i, error=False))
            continue
        seen.add(i)
        out.append(i)
    return out


class _Checker:
    """Collects the problems of one dialogues file."""

    def __init__(self, file: str, problems: list[Problem]):
        self.file = file
        self.problems = problems

    def add(self, message: str, did=None, uid=None, error=True) -> None:
        self.problems.append(Problem(self.file, message, did, uid, error))

    def dialogue(self, did: str, dialogue) -> dict | None:
        if not isinstance(dialogue, dict) or not isinstance(dialogue.get("utterances"), list):
            self.add("expected an object with an `utterances` list", did)
            return None
        if dialogue.get(DRAFT_KEY):
            self.add("saved as a draft by the annotation app (its labels did not validate): "
                     "finish it with `meditod annotate`", did, error=False)
        utterances = dialogue["utterances"]
        if not utterances:
            self.add("dialogue has no utterances", did)
            return None
        ok = True
        for index, utt in enumerate(utterances):
            ok &= self.utterance(did, index, utt)
        if not ok:
            return None
        self.turn_taking(did, utterances)
        self.state(did, utterances)
        return dialogue

    def utterance(self, did: str, index: int, utt) -> bool:
        if not isinstance(utt, dict):
            self.add("utterance is not an object", did, index)
            return False
        before = len(self.problems)
        uttr_id = utt.get("uttr_id")
        if type(uttr_id) is not int or uttr_id != index:  # 0.0 and true equal 0 and 1 in Python
            self.add(f"`uttr_id` must be the whole number {index} (the utterance's position), "
                     f"got {json.dumps(uttr_id)[:40]}", did, index)
        if not isinstance(utt.get("text"), str):
            self.add("`text` missing or not a string", did, index)
        elif not utt["text"].strip():
            self.add("empty `text`", did, index, error=False)
        elif len(utt["text"]) > LONG_UTTERANCE_CHARS:
            self.add(f"`text` is {len(utt['text']):,} characters long (over "
                     f"{LONG_UTTERANCE_CHARS:,}; every later row of the dialogue repeats it in "
                     "`context`): check the transcript", did, index, error=False)
        speaker = utt.get("speaker")
        if speaker not in cmas.SPEAKERS:
            self.add(f"unknown speaker {speaker!r} (expected doctor or patient)", did, index)
        elif speaker == "doctor":
            for key in (PATIENT_LABELS, "dialog_state"):
                if key in utt:
                    self.add(f"`{key}` on a doctor utterance (patient-only field)", did, index)
            if not isinstance(utt.get("actions"), list):
                self.add("doctor utterance without an `actions` list", did, index)
            else:
                self.actions(did, index, utt["actions"])
        else:
            if "actions" in utt:
                self.add("`actions` on a patient utterance (doctor-only field)", did, index)
            if not isinstance(utt.get(PATIENT_LABELS), list):
                self.add("patient utterance without an `nlu` list", did, index)
            else:
                self.nlu(did, index, utt[PATIENT_LABELS])
            if "dialog_state" in utt and not isinstance(utt["dialog_state"], dict):
                self.add("`dialog_state` is not an object", did, index)
        return not any(p.error for p in self.problems[before:])

    def nlu(self, did: str, uid: int, items: list) -> None:
        if not items:
            self.add("empty `nlu` (no intent)", did, uid, error=False)
        for item in items:
            if not isinstance(item, dict) or not isinstance(item.get("intent"), str):
                self.add("NLU item must be an object with a string `intent`", did, uid)
                continue
            if item["intent"] not in cmas.PATIENT_INTENTS:
                self.add(f"unknown intent {item['intent']!r}", did, uid, error=False)
            slots = item.get("slots", {})
            if not isinstance(slots, dict):
                self.add("NLU `slots` must be an object", did, uid)
                continue
            for key, entries in slots.items():
                parsed = cmas.split_slot_key(key)
                if parsed is None:
                    self.add(f"unknown slot key {key!r}", did, uid, error=False)
                if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
                    self.add(f"slot {key!r} must be a list of objects", did, uid)
                    continue
                for entry in entries:
                    self.attributes(did, uid, key, parsed.base if parsed else None, entry)

    def attributes(self, did, uid, key: str, base: str | None, entry: dict) -> None:
        for attr, value in entry.items():
            if base is not None and attr not in cmas.SLOT_ATTRIBUTES[base]:
                self.add(f"unknown attribute {attr!r} on slot {key!r}", did, uid, error=False)
            if attr == "value" and not isinstance(value, str):
                # the head keys the state fold's entries: anything but a string breaks it
                self.add(f"slot {key!r} `value` must be a string, got {type(value).__name__}",
                         did, uid)
            elif _nested(value):
                self.add(f"attribute {attr!r} on slot {key!r} holds an object or a nested list "
                         "(only strings and lists of strings can be scored)", did, uid)
            elif cmas.is_list_attribute(attr):
                if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
                    self.add(f"attribute {attr!r} on slot {key!r} must be a list of strings, "
                             f"got {type(value).__name__}", did, uid, error=False)
            elif not isinstance(value, str):
                self.add(f"attribute {attr!r} on slot {key!r} must be a string, "
                         f"got {type(value).__name__}", did, uid, error=False)

    def actions(self, did: str, uid: int, actions: list) -> None:
        if not actions:  # still a POL row, whose target is "no action"
            self.add("empty `actions` (no action): it enters the dataset as a POL row with an "
                     "empty target; label it", did, uid, error=False)
        for act in actions:
            if not isinstance(act, dict) or not isinstance(act.get("action"), str):
                self.add("action must be an object with a string `action`", did, uid)
                continue
            if act["action"] not in cmas.ACTION_TYPES:
                self.add(f"unknown action type {act['action']!r}", did, uid, error=False)
            for slot, entries in act.items():
                if slot == "action":
                    continue
                if slot not in cmas.ACTION_SLOTS:
                    self.add(f"unknown action slot {slot!r}", did, uid, error=False)
                if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
                    self.add(f"action slot {slot!r} must be a list of objects", did, uid)
                    continue
                for entry in entries:
                    self.action_entry(did, uid, slot, entry)

    def action_entry(self, did, uid, slot: str, entry: dict) -> None:
        for key in entry:
            if key not in cmas.ACTION_ENTRY_KEYS:
                self.add(f"unknown key {key!r} in an action {slot!r} entry", did, uid, error=False)
        if "value" in entry and not isinstance(entry["value"], str):
            self.add(f"action {slot!r} `value` must be a string", did, uid)
        checks = entry.get("checks", [])
        if not isinstance(checks, list):
            self.add(f"action {slot!r} `checks` must be a list", did, uid)
            return
        for check in checks:
            if not isinstance(check, dict) or not isinstance(check.get("type"), str):
                self.add(f"action {slot!r} check must be an object with a string `type`", did, uid)
                continue
            values = check.get("values", [])
            if not (isinstance(values, list) and all(isinstance(v, str) for v in values)):
                self.add(f"action {slot!r} check `values` must be a list of strings", did, uid,
                         error=False)

    def turn_taking(self, did: str, utterances: list[dict]) -> None:
        for prev, utt in zip(utterances, utterances[1:]):
            if prev["speaker"] == utt["speaker"]:
                self.add(f"two {utt['speaker']} utterances in a row (views follow speakers, "
                         "not alternation)", did, utt["uttr_id"], error=False)
        if utterances[0]["speaker"] != "doctor":
            self.add("dialogue does not open with the doctor", did, 0, error=False)
        if utterances[-1]["speaker"] == "patient":
            self.add("dialogue ends with a patient utterance (it gets an NLU row, no POL/NLG "
                     "row follows it)", did, utterances[-1]["uttr_id"], error=False)

    def state(self, did: str, utterances: list[dict]) -> None:
        """Recompute the state fold and compare it with `dialog_state`, key order included."""
        state = DialogueState()
        for utt in utterances:
            if utt["speaker"] != "patient":
                continue
            rendered = state.update(utt[PATIENT_LABELS]).render()
            if "dialog_state" not in utt:
                self.add("`dialog_state` missing; the recomputed state is used", did,
                         utt["uttr_id"], error=False)
            elif not _same_json(rendered, utt["dialog_state"]):
                self.add("`dialog_state` differs from the state recomputed from the NLU labels "
                         "(the release's state is kept)", did, utt["uttr_id"], error=False)


def _same_json(rendered: dict, given) -> bool:
    """Equal as JSON text would be: values equal (a C-speed `==`), and every slot and entry in
    the same key order (a state's entries are flat: strings and lists of strings)."""
    return rendered == given and list(rendered) == list(given) and all(
        list(a) == list(b) for key in rendered for a, b in zip(rendered[key], given[key]))


def _nested(value) -> bool:
    """An object, or a list holding objects or lists: no CMAS attribute value has that shape."""
    return isinstance(value, dict) or (isinstance(value, list)
                                       and any(isinstance(v, (dict, list)) for v in value))


def nlu_label_errors(label) -> list[str]:
    """What makes a patient line's `nlu` items, as a model gave them, unusable by the state fold
    and the metrics: the release's error-level checks of that key."""
    return _label_errors(_Checker.nlu, label)


def action_label_errors(label) -> list[str]:
    """What makes a doctor line's `actions`, as a model gave them, unusable by the state fold and
    the metrics: the release's error-level checks of that key."""
    return _label_errors(_Checker.actions, label)


def _label_errors(check, label) -> list[str]:
    if not isinstance(label, list):
        return [f"expected a list, got {type(label).__name__}"]
    problems: list[Problem] = []
    check(_Checker("<label>", problems), None, None, label)
    return [p.message for p in problems if p.error]


def dialogue_problems(dialogue_id: str, dialogue, file: str = DIALOGS_FILE) -> list[Problem]:
    """Every problem of one dialogue, exactly as the build reports it (checked on every save of
    the annotation app)."""
    problems: list[Problem] = []
    _Checker(file, problems).dialogue(dialogue_id, dialogue)
    return problems


def _where_nested(dialogue, targets: set[int]) -> int | None:
    """The index of the utterance holding one of the objects `targets` (id()s), if any."""
    for index, utt in enumerate(dialogue.get("utterances", []) if isinstance(dialogue, dict) else []):
        stack = [utt]
        while stack:
            value = stack.pop()
            if id(value) in targets:
                return index
            stack.extend(value.values() if isinstance(value, dict) else
                         value if isinstance(value, list) else ())
    return None


def _read_dialogs(folder: Path, files: _Files) -> dict[str, dict] | None:
    path, problems = folder / DIALOGS_FILE, files.problems
    duplicates = _DuplicateKeys()
    data = files.json(path, duplicates)
    if data is None:
        return None
    if not isinstance(data, dict):
        problems.append(Problem(str(path), "expected an object keyed by dialogue id"))
        return None
    if id(data) in duplicates.found:
        ids = duplicates.found.pop(id(data))
        problems.append(Problem(str(path), f"dialogue id(s) listed twice: {name_ids(ids)} (JSON "
                                           "keeps only the last; give each dialogue its own id)"))
    if duplicates.found:
        targets = set(duplicates.found)
        for did, dialogue in data.items():
            uid = _where_nested(dialogue, targets)
            if uid is not None or id(dialogue) in targets:
                problems.append(Problem(str(path), "an object repeats a key (JSON keeps only the "
                                                   "last value): remove the duplicate", str(did),
                                        uid))
    checker = _Checker(str(path), problems)
    dialogues = {}
    for did, dialogue in data.items():
        checked = checker.dialogue(str(did), dialogue)
        if checked is not None:
            dialogues[str(did)] = checked
    return dialogues


def _read_metadata(source: Path, files: _Files) -> dict:
    path = source / METADATA_FILE
    if not path.exists():
        return {}
    metadata = files.json(path)
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        files.problems.append(Problem(str(path), "expected a JSON object"))
        return {}
    if "synthetic" in metadata and not isinstance(metadata["synthetic"], bool):
        files.problems.append(Problem(str(path), "`synthetic` must be true or false"))
    for key in ("name", "description", "license"):
        if key in metadata and not isinstance(metadata[key], str):
            files.problems.append(Problem(str(path), f"`{key}` must be a string"))
    if "generator" in metadata and not isinstance(metadata["generator"], dict):
        files.problems.append(Problem(str(path), "`generator` must be an object (it is written "
                                                 "by meditod_hub.data.synthetic)"))
    return metadata


def read_release(source: str | Path, ood_source: str | Path | None = None,
                 strict: bool = False) -> Release:
    """Validate and load a release; raise `ReleaseError` listing every problem if it can't be."""
    source = Path(source)
    problems: list[Problem] = []
    if not source.is_dir():
        raise ReleaseError([], f"no such release folder: {source} (it must hold {DIALOGS_FILE} "
                               "and the split id files)")
    files = _Files(problems)
    metadata = _read_metadata(source, files)
    dialogues = _read_dialogs(source, files) or {}
    splits: dict[str, list[str]] = {}
    for split, name in SPLIT_FILES.items():
        ids = _load_ids(source / name, files)
        if ids is not None:
            splits[split] = ids
    ood_files = [source / n for n in OOD_SPLIT_FILES if (source / n).exists()]
    if len(ood_files) > 1:
        problems.append(Problem(str(source), f"both {OOD_SPLIT_FILES[0]} and "
                                             f"{OOD_SPLIT_FILES[1]} exist; keep one"))
    elif ood_files:
        ids = _load_ids(ood_files[0], files)
        if ids is not None:
            splits[OOD_SPLIT] = ids
    dialogue_files = {did: source / DIALOGS_FILE for did in dialogues}
    if ood_source is not None:
        if ood_files:
            problems.append(Problem(str(ood_files[0]), "an OOD id file and --ood_source were both "
                                                       "given; use one"))
        if not Path(ood_source).is_dir():
            raise ReleaseError([], f"no such release folder: {ood_source} (--ood_source)")
        ood_path = Path(ood_source) / DIALOGS_FILE
        ood_dialogues = _read_dialogs(Path(ood_source), files) or {}
        for did in ood_dialogues:
            if did in dialogues:
                problems.append(Problem(str(ood_path), "dialogue id also used by the in-domain "
                                                       "release", dialogue_id=did))
        dialogues.update({k: v for k, v in ood_dialogues.items() if k not in dialogues})
        dialogue_files.update({did: ood_path for did in ood_dialogues})
        splits[OOD_SPLIT] = list(ood_dialogues)

    owner: dict[str, str] = {}
    known = set(dialogues) | {p.dialogue_id for p in problems if p.error}
    for split, ids in splits.items():
        split_file = (ood_files[0] if split == OOD_SPLIT and ood_files
                      else source / SPLIT_FILES.get(split, DIALOGS_FILE))
        if not ids:
            problems.append(Problem(str(split_file), f"split {split!r} is empty (it is built "
                                                     "with no rows)", error=False))
        for did in ids:
            if did not in known and did not in dialogues:
                problems.append(Problem(str(split_file), f"id listed in split {split!r} is not in "
                                                         f"{DIALOGS_FILE}", dialogue_id=did))
            if did in owner:
                problems.append(Problem(str(split_file), f"id is in two splits ({owner[did]!r} and "
                                                         f"{split!r})", dialogue_id=did))
            owner.setdefault(did, split)
    for did in dialogues:
        if did not in owner:
            problems.append(Problem(str(dialogue_files[did]), "dialogue is in no split (kept out of "
                                                              "every split)", did, error=False))
    if not any(p.error and p.file.endswith(DIALOGS_FILE) for p in problems) and not dialogues:
        problems.append(Problem(str(source / DIALOGS_FILE), "the release holds no dialogue"))

    errors = [p for p in problems if p.error]
    if errors:
        raise ReleaseError(problems, f"cannot build the release in {source}: {len(errors)} "
                                     f"error(s), {len(problems) - len(errors)} warning(s)")
    if strict and problems:
        raise ReleaseError(problems, f"--strict: {len(problems)} warning(s) in {source}")
    other_files = files.unread(source)
    if ood_source is not None:
        other_files.update(files.unread(Path(ood_source), "--ood_source/"))
    return Release(dialogues=dialogues, splits=splits, problems=problems, metadata=metadata,
                   fingerprint=files.digest.hexdigest(), other_files=other_files)
