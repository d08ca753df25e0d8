"""A release folder being labelled: open, save (validated, atomic, version-checked), import, split.

Every save writes the release format: `dialogs.json` with the utterances' `nlu` / `actions` and
each patient utterance's `dialog_state` recomputed by `state.fold_states`; it is checked by the
release validator (`release.dialogue_problems`, the build's own checks) and written through
`files.atomic_write` (a temporary file, then a rename), so an interrupted save leaves the previous
file whole. Unchanged dialogues and values keep their bytes (`jsondoc`). A dialogue whose labels
do not validate is still saved, as a draft: it carries `"draft": true` and the build reports it.

Two editors of one dialogue (two tabs, two people on one folder): a save names the version it
started from; when the file moved on since, edits to different utterances are merged and edits to
the same utterance are refused (`SaveConflict`), never overwritten silently.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from meditod_hub import strictjson
from meditod_hub.apps.annotate.jsondoc import JsonDocument, replace_value, same
from meditod_hub.data import cmas
from meditod_hub.data.release import (
    DIALOGS_FILE,
    DRAFT_KEY,
    OOD_SPLIT,
    OOD_SPLIT_FILES,
    PATIENT_LABELS,
    SPLIT_FILES,
    Problem,
    dialogue_problems,
)
from meditod_hub.data.state import fold_states
from meditod_hub.data.tasks import LABELLING_TASKS
from meditod_hub.errors import MeditodError
from meditod_hub.files import atomic_write, read_json, stale_partials

PROVENANCE_FILE = "provenance.json"  # who/what produced each label item (not part of the release)
VOCABULARY_FILE = "vocabulary.json"  # canonical values loaded in the portal (not part of the release)
ORIGINS = ("release", "suggested", "edited", "manual")
LABEL_KEY = {speaker: task.target_column for speaker, task in LABELLING_TASKS.items()}
HISTORY = 64                         # versions kept per dialogue as merge bases
DIALOGUE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
# A transcript line opens with its speaker (a labelling task's) or the speaker's initial.
SPEAKER_OF = {tag: speaker for speaker in LABELLING_TASKS for tag in (speaker, speaker[0])}
TRANSCRIPT_LINE = re.compile(rf"\s*({'|'.join(SPEAKER_OF)})\s*:(.*)", re.IGNORECASE)


class UnknownDialogue(MeditodError):
    """No dialogue of that id in the release."""

    def __init__(self, dialogue_id: str):
        super().__init__(f"no dialogue {dialogue_id} in this release")


class SaveConflict(MeditodError):
    """The dialogue changed since the editor opened it, on the same utterances."""

    def __init__(self, dialogue_id: str, utterances: list[int]):
        self.utterances = utterances
        shown = ", ".join(map(str, utterances)) or "(unknown: the version opened is no longer known)"
        super().__init__(f"dialogue {dialogue_id} was saved elsewhere (another tab or annotator) "
                         f"since you opened it, with other labels on utterance(s) {shown}: "
                         "nothing was saved; reload it, or overwrite those utterances")


def version_of(dialogue: dict) -> str:
    return hashlib.sha256(json.dumps(dialogue, ensure_ascii=False).encode()).hexdigest()[:16]


def parse_transcript(text: str, name: str) -> list[dict]:
    """Utterances of a plain transcript: one line each, `D:`/`P:` or `Doctor:`/`Patient:` first."""
    utterances: list[dict] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        match = TRANSCRIPT_LINE.fullmatch(line)
        if match is None:
            raise MeditodError(f"{name}, line {number}: expected `D:`, `P:`, `Doctor:` or "
                               "`Patient:` before the utterance; fix the line and import again")
        utterance = match.group(2).strip()
        if not utterance:
            raise MeditodError(f"{name}, line {number}: the utterance after the speaker is empty")
        speaker = SPEAKER_OF[match.group(1).lower()]
        utterances.append({"speaker": speaker, "uttr_id": len(utterances), "text": utterance,
                           "keywords": [], LABEL_KEY[speaker]: []})
    if not utterances:
        raise MeditodError(f"{name}: no utterance lines (`D: ...` / `P: ...`)")
    return utterances


def label_of(utterance: dict) -> list:
    return utterance.get(LABEL_KEY.get(utterance.get("speaker"), PATIENT_LABELS), [])


def with_labels(dialogue_id: str, dialogue: dict, labels: list) -> tuple[dict, list[Problem]]:
    """A copy of `dialogue` holding `labels` (one list per utterance), its states recomputed by
    the fold (left as they were when the labels have errors: the fold needs valid labels), its
    draft flag set exactly when the labels have errors, and its problems."""
    utterances = dialogue["utterances"]
    if not all(isinstance(u, dict) for u in utterances):
        raise MeditodError(f"dialogue {dialogue_id}: an utterance is not a JSON object; fix "
                           f"{DIALOGS_FILE} by hand first")
    if not isinstance(labels, list) or len(labels) != len(utterances):
        raise MeditodError(f"dialogue {dialogue_id}: expected one label list per utterance "
                           f"({len(utterances)}), got {len(labels) if isinstance(labels, list) else 'none'}")
    new = copy.deepcopy(dialogue)
    new.pop(DRAFT_KEY, None)
    for utt, label in zip(new["utterances"], labels):
        key = LABEL_KEY.get(utt.get("speaker"))
        if key is None:
            raise MeditodError(f"dialogue {dialogue_id}, utterance {utt.get('uttr_id')}: unknown "
                               "speaker, cannot label it")
        utt[key] = label
    if any(p.error for p in dialogue_problems(dialogue_id, new)):
        new[DRAFT_KEY] = True
    else:
        patients = [u for u in new["utterances"] if u["speaker"] == "patient"]
        for utt, state in zip(patients, fold_states(u[PATIENT_LABELS] for u in patients)):
            _set_state(utt, state)
    return new, dialogue_problems(dialogue_id, new)


def _set_state(utterance: dict, state: dict) -> None:
    """Set `dialog_state` where it is, or just before `nlu` as the release orders keys."""
    if "dialog_state" in utterance:
        utterance["dialog_state"] = state
        return
    items = list(utterance.items())
    at = next((i for i, (k, _) in enumerate(items) if k == PATIENT_LABELS), len(items))
    utterance.clear()
    utterance.update(items[:at] + [("dialog_state", state)] + items[at:])


def states_after(dialogue: dict) -> list[dict]:
    """The patient's state after each utterance (a doctor's: the state after the last patient
    utterance before it), as the dataset's state fold computes it."""
    utterances = dialogue["utterances"]
    folded = iter(fold_states(u[PATIENT_LABELS] for u in utterances if u["speaker"] == "patient"))
    out, current = [], {}
    for utt in utterances:
        if utt["speaker"] == "patient":
            current = next(folded)
        out.append(current)
    return out


def problem_dict(problem: Problem) -> dict:
    return {"uttr_id": problem.uttr_id, "message": problem.message, "error": problem.error}


@dataclass
class SaveResult:
    version: str
    written: bool                                    # False: nothing changed, file untouched
    draft: bool
    problems: list[Problem] = field(default_factory=list)
    merged: list[int] = field(default_factory=list)  # utterances taken from a newer save
    labels: list = field(default_factory=list)       # every utterance's label as saved
    origins: list = field(default_factory=list)      # and its items' origins


class ReleaseStore:
    """One release folder; every method is safe to call from several request threads."""

    def __init__(self, folder: str | Path, write_lock=None, vocabulary: frozenset[str] = frozenset()):
        self.folder = Path(folder)
        self._extra_vocabulary = vocabulary  # `meditod annotate --vocabulary`: this session only
        self.path = self.folder / DIALOGS_FILE
        # the lock a backup uploader holds while it reads the folder (CommitScheduler.lock)
        self._write_lock = write_lock or threading.Lock()
        self._lock = threading.RLock()
        self._history: dict[str, OrderedDict[str, dict]] = {}
        self._summaries: dict[str, tuple[object, dict]] = {}
        if self.folder.exists() and not self.folder.is_dir():
            raise MeditodError(f"{self.folder} is a file: give a release folder (or a new one)")
        if not (self.folder / DIALOGS_FILE).exists() and self.folder.is_dir() \
                and any(self.folder.iterdir()):
            raise MeditodError(f"{self.folder} holds files but no {DIALOGS_FILE}: give a release "
                               "folder, or a new or empty folder to start one")
        self.folder.mkdir(parents=True, exist_ok=True)
        for stale in stale_partials(self.folder):  # left by a killed save: ours
            stale.unlink()
        if not self.path.exists():
            atomic_write(self.path, "{}\n")
        self._load()

    # --- reading ------------------------------------------------------------------------------
    def _load(self) -> None:
        stat = self.path.stat()
        try:
            self.doc = JsonDocument(self.path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise MeditodError(f"{self.path}: not a JSON object of dialogues ({exc}); fix it or "
                               "start from another folder") from None
        self._stamp = (stat.st_mtime_ns, stat.st_size)

    def _sync(self) -> None:
        """Re-read the file when something else wrote it since we last did."""
        stat = self.path.stat()
        if (stat.st_mtime_ns, stat.st_size) != self._stamp:
            self._load()

    def _dialogue(self, dialogue_id: str) -> dict:
        dialogue = self.doc.value.get(dialogue_id)
        if not isinstance(dialogue, dict) or not isinstance(dialogue.get("utterances"), list):
            raise UnknownDialogue(dialogue_id)
        return dialogue

    def _remember(self, dialogue_id: str, dialogue: dict) -> str:
        version = version_of(dialogue)
        history = self._history.setdefault(dialogue_id, OrderedDict())
        history[version] = copy.deepcopy(dialogue)
        history.move_to_end(version)
        while len(history) > HISTORY:
            history.popitem(last=False)
        return version

    def values(self) -> dict:
        """What the questionnaire autocompletes (`known_values` of this release), the loaded
        canonical vocabulary, against which the page flags a medical value as new, and the
        canonical values this release already holds (`release_canonical`: the page counts them
        with the vocabulary, so a labelled release does not read as 0 values loaded)."""
        with self._lock:
            self._sync()
            known = known_values(self.doc.value)
            return {**known, "vocabulary": self.vocabulary(),
                    "release_canonical": release_canonical(known)}

    # --- the canonical vocabulary ---------------------------------------------------------------
    def vocabulary(self) -> list[str]:
        return sorted(self._saved_vocabulary() | self._extra_vocabulary)

    def _saved_vocabulary(self) -> set[str]:
        path = self.folder / VOCABULARY_FILE
        if not path.exists():
            return set()
        try:
            values = strictjson.loads(path.read_text(encoding="utf-8"))["values"]
            if not all(isinstance(v, str) and _is_text(v) for v in values):
                raise ValueError("a value that is not text: a number, NaN or a lone surrogate")
        except (ValueError, OSError, TypeError, KeyError, RecursionError) as exc:
            why = "nested too deeply" if isinstance(exc, RecursionError) else repr(exc)
            raise MeditodError(f"{path}: not a vocabulary this portal wrote ({why}); move it "
                               "away and load the vocabulary again") from None
        return set(values)

    def add_vocabulary(self, text: str, name: str) -> int:
        """Merge a vocabulary file's values into the release's `vocabulary.json` (the values
        given with `--vocabulary` stay this session's); the count of values new to the page."""
        new = parse_vocabulary(text, name)
        with self._lock:
            saved = self._saved_vocabulary()
            added = new - saved - self._extra_vocabulary
            if new - saved:
                with self._write_lock:
                    atomic_write(self.folder / VOCABULARY_FILE, json.dumps(
                        {"about": "canonical values loaded in `meditod annotate` (not part of the "
                                  "release; the build ignores this file)",
                         "values": sorted(saved | new)}, indent=1, ensure_ascii=False) + "\n")
            return len(added)

    def dialogue_ids(self) -> list[str]:
        with self._lock:
            self._sync()
            return list(self.doc.value)

    def summaries(self) -> list[dict]:
        """Per dialogue: size, labelled utterances, split, draft flag, problem counts."""
        with self._lock:
            self._sync()
            splits = self.splits()
            return [{**self._summary(did, dialogue), "split": splits.get(did)}
                    for did, dialogue in self.doc.value.items()]

    def _summary(self, dialogue_id: str, dialogue) -> dict:
        # a saved dialogue is a new object: the cache holds the object it summarised
        cached = self._summaries.get(dialogue_id)
        if cached is not None and cached[0] is dialogue:
            return cached[1]
        problems = dialogue_problems(dialogue_id, dialogue)
        utterances = dialogue.get("utterances") if isinstance(dialogue, dict) else None
        utterances = utterances if isinstance(utterances, list) else []
        summary = {"id": dialogue_id, "utterances": len(utterances),
                   "labelled": sum(bool(label_of(u)) for u in utterances if isinstance(u, dict)),
                   "draft": bool(dialogue.get(DRAFT_KEY)) if isinstance(dialogue, dict) else True,
                   "errors": sum(p.error for p in problems),
                   "warnings": sum(not p.error for p in problems)}
        self._summaries[dialogue_id] = (dialogue, summary)
        return summary

    def open(self, dialogue_id: str) -> dict:
        """The dialogue, its version, split, problems, states and each label item's origin."""
        with self._lock:
            self._sync()
            dialogue = self._dialogue(dialogue_id)
            problems = dialogue_problems(dialogue_id, dialogue)
            return {"id": dialogue_id, "version": self._remember(dialogue_id, dialogue),
                    "dialogue": dialogue, "split": self.splits().get(dialogue_id),
                    "draft": bool(dialogue.get(DRAFT_KEY)),
                    "problems": [problem_dict(p) for p in problems],
                    "states": None if any(p.error for p in problems) else states_after(dialogue),
                    "origins": self._origins(dialogue_id, dialogue)}

    def preview(self, dialogue_id: str, labels: list) -> tuple[dict, list[Problem]]:
        """The dialogue as it would be saved with `labels` (nothing is written)."""
        with self._lock:
            self._sync()
            return with_labels(dialogue_id, self._dialogue(dialogue_id), labels)

    # --- saving -------------------------------------------------------------------------------
    def save(self, dialogue_id: str, labels: list, base_version: str, origins: list | None = None,
             overwrite: bool = False, annotator: str | None = None,
             models: dict | None = None) -> SaveResult:
        """Save one dialogue's labels (one list per utterance), started from `base_version`.

        When the dialogue was saved since: utterances only one side changed are merged, and
        utterances both changed differently raise `SaveConflict` unless `overwrite`.
        """
        with self._lock:
            self._sync()
            current = self._dialogue(dialogue_id)
            current_labels = [label_of(u) for u in current["utterances"]]
            self._provenance()  # a damaged record refuses the save before dialogs.json is written
            merged: list[int] = []
            if base_version != version_of(current) and not overwrite:
                labels, merged = self._merge(dialogue_id, current_labels, labels, base_version)
                if origins is not None:  # the origins sent describe this editor's items only
                    origins = [None if i in merged else o for i, o in enumerate(origins)]
            new, problems = with_labels(dialogue_id, current, labels)
            draft = bool(new.get(DRAFT_KEY))
            written = self.doc.set(dialogue_id, new)
            if written:
                self._write()
            self._record(dialogue_id, new, current_labels, origins, annotator, models)
            return SaveResult(self._remember(dialogue_id, new), written, draft, problems, merged,
                              [label_of(u) for u in new["utterances"]],
                              self._origins(dialogue_id, new))

    def _merge(self, dialogue_id: str, theirs: list, mine: list, base_version: str):
        base_dialogue = self._history.get(dialogue_id, {}).get(base_version)
        if not isinstance(mine, list) or len(mine) != len(theirs):
            raise MeditodError(f"dialogue {dialogue_id}: expected one label list per utterance")
        base = [label_of(u) for u in base_dialogue["utterances"]] if base_dialogue else None
        out, merged, clashes = [], [], []
        for uid, (t, m) in enumerate(zip(theirs, mine)):
            if same(t, m):
                out.append(m)
            elif base is not None and same(m, base[uid]):
                out.append(t)
                merged.append(uid)
            elif base is not None and same(t, base[uid]):
                out.append(m)
            else:
                clashes.append(uid)
        if clashes:
            raise SaveConflict(dialogue_id, clashes)
        return out, merged

    def _write(self) -> None:
        try:
            with self._write_lock:
                atomic_write(self.path, self.doc.text)
        except BaseException as exc:
            self._load()  # the file on disk is the truth: forget the edit that was not written
            if isinstance(exc, OSError):
                raise MeditodError(f"{self.path}: cannot write ({exc.strerror or exc}): nothing "
                                   "was saved, the previous file is intact") from None
            raise
        stat = self.path.stat()
        self._stamp = (stat.st_mtime_ns, stat.st_size)

    # --- provenance: accepted as suggested, edited or added by hand ------------------------------
    def _provenance(self) -> dict:
        path = self.folder / PROVENANCE_FILE
        if not path.exists():
            return {}
        fix = "fix or delete it (it only records where each label came from)"
        value = read_json(path, fix=fix)
        if not all(isinstance(entry, dict) and all(isinstance(u, dict) for u in entry.values())
                   for entry in value.values()):
            raise MeditodError(f"{path}: not a provenance record of this kit; {fix}")
        return value

    def _origins(self, dialogue_id: str, dialogue: dict) -> list[list[str]]:
        recorded = self._provenance().get(dialogue_id, {})
        out = []
        for utt in dialogue["utterances"]:
            label = label_of(utt)
            items = recorded.get(str(utt.get("uttr_id")), {}).get("origins")
            size = len(label) if isinstance(label, list) else 0
            out.append(items if isinstance(items, list) and len(items) == size
                       else ["release"] * size)
        return out

    def _record(self, dialogue_id: str, new: dict, old_labels: list, origins: list | None,
                annotator: str | None, models: dict | None) -> None:
        """Record the origin of every item of each utterance whose label changed."""
        if origins is None:
            return
        provenance = self._provenance()
        entry = provenance.setdefault(dialogue_id, {})
        changed = False
        for utt, old, items in zip(new["utterances"], old_labels, origins):
            label = label_of(utt)
            if same(label, old) or not isinstance(label, list) or not isinstance(items, list) \
                    or len(items) != len(label) or any(o not in ORIGINS for o in items):
                continue
            entry[str(utt["uttr_id"])] = {"origins": items, "annotator": annotator,
                                          "models": models or {}}
            changed = True
        if changed:
            with self._write_lock:
                atomic_write(self.folder / PROVENANCE_FILE,
                             json.dumps(provenance, indent=2, ensure_ascii=False) + "\n")

    # --- new dialogues and splits ---------------------------------------------------------------
    def import_transcript(self, text: str, name: str, dialogue_id: str | None = None,
                          split: str | None = None) -> str:
        """A new unlabelled dialogue from a plain transcript, placed in `split`; returns its id."""
        if split is not None and split not in self._split_files():
            raise MeditodError(f"unknown split {split!r}: use one of {', '.join(self._split_files())}")
        utterances = parse_transcript(text, name)
        with self._lock:
            self._sync()
            if dialogue_id:
                if not DIALOGUE_ID.fullmatch(dialogue_id):
                    raise MeditodError(f"dialogue id {dialogue_id!r}: use letters, digits, `_`, "
                                       "`.`, `-` (at most 64)")
                if dialogue_id in self.doc.value:
                    raise MeditodError(f"dialogue {dialogue_id} already exists: choose another id")
            else:
                numbers = [int(k) for k in self.doc.value if k.isdigit()]
                dialogue_id = str(max(numbers, default=0) + 1)
            dialogue, _ = with_labels(dialogue_id, {"utterances": utterances},
                                      [[] for _ in utterances])
            self.doc.set(dialogue_id, dialogue)
            self._write()
            if split is not None:
                self.assign_split(dialogue_id, split)
            return dialogue_id

    def _split_files(self) -> dict[str, Path]:
        ood = next((n for n in OOD_SPLIT_FILES if (self.folder / n).exists()), OOD_SPLIT_FILES[0])
        return {**{s: self.folder / n for s, n in SPLIT_FILES.items()},
                OOD_SPLIT: self.folder / ood}

    def splits(self) -> dict[str, str]:
        """Dialogue id -> its split, from the id files (a broken id file counts as empty)."""
        out: dict[str, str] = {}
        for split, path in self._split_files().items():
            try:
                ids = strictjson.loads(path.read_text(encoding="utf-8")) if path.exists() else []
            except (ValueError, OSError):
                continue
            for did in ids if isinstance(ids, list) else []:
                out.setdefault(str(did), split)
        return out

    def assign_split(self, dialogue_id: str, split: str | None) -> None:
        """Move a dialogue into `split` (None: into none); creates the id files a build needs."""
        files = self._split_files()
        if split is not None and split not in files:
            raise MeditodError(f"unknown split {split!r}: use one of {', '.join(files)}")
        with self._lock:
            self._sync()
            self._dialogue(dialogue_id)
            for name, path in files.items():
                text = path.read_text(encoding="utf-8") if path.exists() else ""
                if not text and name != split and (name == OOD_SPLIT or split is None):
                    continue
                try:
                    ids = strictjson.loads(text) if text.strip() else []
                except ValueError:
                    raise MeditodError(f"{path}: not valid JSON; fix it before assigning "
                                       "splits") from None
                if not isinstance(ids, list):
                    raise MeditodError(f"{path}: expected a JSON list of dialogue ids")
                new = [i for i in ids if str(i) != dialogue_id]
                if name == split:
                    new.append(dialogue_id)
                if new != ids or not path.exists():
                    with self._write_lock:
                        atomic_write(path, replace_value(text, new))


def _is_text(value: str) -> bool:
    """Whether `value` is Unicode text (no lone surrogate, which no page or file can hold)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def parse_vocabulary(text: str, name: str) -> set[str]:
    """Canonical values from a vocabulary file: one value a line (`#` comments), or JSON: a list,
    an object of lists, or entries with `code` / `display_name` / `value` (the authors' ontology
    lists, exported as JSON)."""
    stripped = text.strip()
    if stripped[:1] in ("[", "{"):
        try:
            data = strictjson.loads(stripped)
        except ValueError as exc:
            raise MeditodError(f"{name}: looks like JSON but does not parse ({exc}); give one "
                               "value a line or valid JSON") from None
        except RecursionError:
            raise MeditodError(f"{name}: JSON nested too deeply to read; give one value a line "
                               "or a JSON list") from None
        values: set[str] = set()
        stack = [data]
        while stack:
            node = stack.pop()
            if isinstance(node, str):
                values.add(node.strip())
            elif isinstance(node, list):
                stack.extend(node)
            elif isinstance(node, dict):
                named = [node[k] for k in ("code", "display_name", "value") if k in node]
                stack.extend(named if named else node.values())
    else:
        values = {line.strip() for line in text.splitlines()
                  if line.strip() and not line.lstrip().startswith("#")}
    values.discard("")
    if not all(_is_text(value) for value in values):
        raise MeditodError(f"{name}: holds a lone surrogate (\\ud800-\\udfff), not text: "
                           "remove it and load the file again")
    if not values:
        raise MeditodError(f"{name}: no values found (one value a line, or a JSON list)")
    return values


def known_values(dialogues: dict) -> dict:
    """The values already used in a release, per patient (base slot, attribute) and per doctor
    (action slot, `value` or check type): what the questionnaire autocompletes."""
    patient: dict[str, dict[str, set]] = {}
    doctor: dict[str, dict[str, set]] = {}
    for dialogue in dialogues.values():
        for utt in dialogue.get("utterances", []) if isinstance(dialogue, dict) else []:
            for item in (utt.get(PATIENT_LABELS) or []) if isinstance(utt, dict) else []:
                for key, entries in ((item.get("slots") or {}) if isinstance(item, dict)
                                     else {}).items():
                    parsed = cmas.split_slot_key(key)
                    for entry in entries if parsed and isinstance(entries, list) else []:
                        for attr, value in (entry.items() if isinstance(entry, dict) else ()):
                            _collect(patient, parsed.base, attr, value)
            for act in (utt.get("actions") or []) if isinstance(utt, dict) else []:
                for slot, entries in (act.items() if isinstance(act, dict) else ()):
                    for entry in entries if slot != "action" and isinstance(entries, list) else []:
                        if not isinstance(entry, dict):
                            continue
                        _collect(doctor, slot, "value", entry.get("value"))
                        for check in entry.get("checks") or []:
                            if isinstance(check, dict) and isinstance(check.get("type"), str):
                                _collect(doctor, slot, check["type"], check.get("values"))
    return {side: {slot: {attr: sorted(values) for attr, values in attrs.items()}
                   for slot, attrs in table.items()}
            for side, table in (("patient", patient), ("doctor", doctor))}


def release_canonical(known: dict) -> list[str]:
    """The distinct values of `known_values` in fields the questionnaire marks medical (canonical):
    a patient slot's medical attributes, a doctor's medical slot's `value`."""
    values = {v for base, attrs in known["patient"].items() for attr, vs in attrs.items()
              if cmas.is_medical_attribute(base, attr) for v in vs}
    values |= {v for slot, attrs in known["doctor"].items() if slot in cmas.MEDICAL_ACTION_SLOTS
               for v in attrs.get("value", [])}
    return sorted(values)


def _collect(table: dict, slot: str, attr: str, value) -> None:
    values = value if isinstance(value, list) else [value]
    bucket = table.setdefault(slot, {}).setdefault(attr, set())
    bucket.update(v for v in values if isinstance(v, str) and v)
