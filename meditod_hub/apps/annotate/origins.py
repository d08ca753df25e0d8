"""Where each label item came from: accepted as suggested, edited, added by hand, or the
release's own, with its annotator and models, in the release folder's `provenance.json` (not part
of the release: the build ignores it).

Apart from the store because it is a second file with its own reader and writer, consulted only
when a dialogue is opened or saved.
"""

from __future__ import annotations

import json
from pathlib import Path

from meditod_hub.apps.annotate.jsondoc import same
from meditod_hub.apps.annotate.labels import label_of
from meditod_hub.errors import MeditodError
from meditod_hub.files import atomic_write, read_json

PROVENANCE_FILE = "provenance.json"  # who/what produced each label item (not part of the release)
ORIGINS = ("release", "suggested", "edited", "manual")


class LabelOrigins:
    """A release folder's `provenance.json`, written under `write_lock` (the backup's lock)."""

    def __init__(self, folder: Path, write_lock):
        self.path = folder / PROVENANCE_FILE
        self._write_lock = write_lock

    def read(self) -> dict:
        """The record (empty when there is none); a damaged one is refused."""
        if not self.path.exists():
            return {}
        fix = "fix or delete it (it only records where each label came from)"
        value = read_json(self.path, fix=fix)
        if not all(isinstance(entry, dict) and all(isinstance(u, dict) for u in entry.values())
                   for entry in value.values()):
            raise MeditodError(f"{self.path}: not a provenance record of this kit; {fix}")
        return value

    def of(self, dialogue_id: str, dialogue: dict) -> list[list[str]]:
        """Each utterance's items' origins (the release's where none is recorded)."""
        recorded = self.read().get(dialogue_id, {})
        out = []
        for utt in dialogue["utterances"]:
            label = label_of(utt)
            items = recorded.get(str(utt.get("uttr_id")), {}).get("origins")
            size = len(label) if isinstance(label, list) else 0
            out.append(items if isinstance(items, list) and len(items) == size
                       else ["release"] * size)
        return out

    def record(self, dialogue_id: str, new: dict, old_labels: list, origins: list | None,
               annotator: str | None, models: dict | None) -> None:
        """Record the origin of every item of each utterance whose label changed."""
        if origins is None:
            return
        provenance = self.read()
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
                atomic_write(self.path, json.dumps(provenance, indent=2, ensure_ascii=False) + "\n")
