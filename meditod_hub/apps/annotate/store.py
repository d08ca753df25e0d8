"""A release folder being labelled: open, save (validated, atomic, version-checked), import, split.

Every save writes the release format: `dialogs.json` with the utterances' `nlu` / `actions` and
each patient utterance's `dialog_state` recomputed by `state.fold_states` (`labels.with_labels`);
it is checked by the release validator (`release.dialogue_problems`, the build's own checks) and
written through `files.atomic_write` (a temporary file, then a rename), so an interrupted save
leaves the previous file whole. Unchanged dialogues and values keep their bytes (`jsondoc`). A
dialogue whose labels do not validate is still saved, as a draft: it carries `"draft": true` and
the build reports it.

Two editors of one dialogue (two tabs, two people on one folder): a save names the version it
started from; when the file moved on since, edits to different utterances are merged and edits to
the same utterance are refused (`versions.SaveConflict`), never overwritten silently.

`ReleaseStore` is what the server calls, every method under one lock: it owns `dialogs.json` and
hands each other job to a module of its own: `labels` (a dialogue's labels, pure), `versions`
(merge bases, merging), `origins` (`provenance.json`), `splits` (the id files), `vocabulary`
(`vocabulary.json`, the values offered) and `transcript` (a pasted transcript's utterances).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

from meditod_hub.apps.annotate.jsondoc import JsonDocument
from meditod_hub.apps.annotate.labels import label_of, problem_dict, states_after, with_labels
from meditod_hub.apps.annotate.origins import LabelOrigins
from meditod_hub.apps.annotate.splits import SplitFiles
from meditod_hub.apps.annotate.transcript import parse_transcript
from meditod_hub.apps.annotate.versions import Versions, version_of
from meditod_hub.apps.annotate.vocabulary import (
    Vocabulary,
    known_values,
    parse_vocabulary,
    release_canonical,
)
from meditod_hub.data.release import DIALOGS_FILE, DRAFT_KEY, Problem, dialogue_problems
from meditod_hub.errors import MeditodError
from meditod_hub.files import atomic_write, stale_partials

DIALOGUE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


class UnknownDialogue(MeditodError):
    """No dialogue of that id in the release."""

    def __init__(self, dialogue_id: str):
        super().__init__(f"no dialogue {dialogue_id} in this release")


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
        self.path = self.folder / DIALOGS_FILE
        # the lock a backup uploader holds while it reads the folder (CommitScheduler.lock)
        self._write_lock = write_lock or threading.Lock()
        self._lock = threading.RLock()
        self._versions = Versions()
        self._origins = LabelOrigins(self.folder, self._write_lock)
        self._splits = SplitFiles(self.folder, self._write_lock)
        # `meditod annotate --vocabulary`'s values: this session only
        self._vocabulary = Vocabulary(self.folder, vocabulary, self._write_lock)
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
        return self._vocabulary.values()

    def add_vocabulary(self, text: str, name: str) -> int:
        """Merge a vocabulary file's values into the release's `vocabulary.json` (the values
        given with `--vocabulary` stay this session's); the count of values new to the page."""
        new = parse_vocabulary(text, name)
        with self._lock:
            return self._vocabulary.add(new)

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
            return {"id": dialogue_id, "version": self._versions.remember(dialogue_id, dialogue),
                    "dialogue": dialogue, "split": self.splits().get(dialogue_id),
                    "draft": bool(dialogue.get(DRAFT_KEY)),
                    "problems": [problem_dict(p) for p in problems],
                    "states": None if any(p.error for p in problems) else states_after(dialogue),
                    "origins": self._origins.of(dialogue_id, dialogue)}

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
            self._origins.read()  # a damaged record refuses the save before dialogs.json is written
            merged: list[int] = []
            if base_version != version_of(current) and not overwrite:
                labels, merged = self._versions.merge(dialogue_id, current_labels, labels,
                                                      base_version)
                if origins is not None:  # the origins sent describe this editor's items only
                    origins = [None if i in merged else o for i, o in enumerate(origins)]
            new, problems = with_labels(dialogue_id, current, labels)
            draft = bool(new.get(DRAFT_KEY))
            written = self.doc.set(dialogue_id, new)
            if written:
                self._write()
            self._origins.record(dialogue_id, new, current_labels, origins, annotator, models)
            return SaveResult(self._versions.remember(dialogue_id, new), written, draft, problems,
                              merged, [label_of(u) for u in new["utterances"]],
                              self._origins.of(dialogue_id, new))

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

    # --- new dialogues and splits ---------------------------------------------------------------
    def import_transcript(self, text: str, name: str, dialogue_id: str | None = None,
                          split: str | None = None) -> str:
        """A new unlabelled dialogue from a plain transcript, placed in `split`; returns its id."""
        self._splits.check(split)
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

    def splits(self) -> dict[str, str]:
        """Dialogue id -> its split, from the id files (a broken id file counts as empty)."""
        return self._splits.assigned()

    def assign_split(self, dialogue_id: str, split: str | None) -> None:
        """Move a dialogue into `split` (None: into none); creates the id files a build needs."""
        self._splits.check(split)
        with self._lock:
            self._sync()
            self._dialogue(dialogue_id)
            self._splits.assign(dialogue_id, split)
