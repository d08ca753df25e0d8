"""Which split each dialogue is in: the release's id files (`train_ids.json`, ..., and the
out-of-domain one), read leniently (a broken file counts as empty) and rewritten, format kept,
when a dialogue moves (`SplitFiles`).

Apart from the store because the id files are the release's other files, read and written on
their own; the store only checks that the dialogue exists before a move.
"""

from __future__ import annotations

from pathlib import Path

from meditod_hub import strictjson
from meditod_hub.apps.annotate.jsondoc import replace_value
from meditod_hub.data.release import OOD_SPLIT, OOD_SPLIT_FILES, SPLIT_FILES
from meditod_hub.errors import MeditodError
from meditod_hub.files import atomic_write


class SplitFiles:
    """A release folder's split id files, written under `write_lock` (the backup's lock)."""

    def __init__(self, folder: Path, write_lock):
        self.folder = folder
        self._write_lock = write_lock

    def files(self) -> dict[str, Path]:
        ood = next((n for n in OOD_SPLIT_FILES if (self.folder / n).exists()), OOD_SPLIT_FILES[0])
        return {**{s: self.folder / n for s, n in SPLIT_FILES.items()},
                OOD_SPLIT: self.folder / ood}

    def check(self, split: str | None) -> None:
        """Refuse a split the release has no id file name for (None, no split, is fine)."""
        files = self.files()
        if split is not None and split not in files:
            raise MeditodError(f"unknown split {split!r}: use one of {', '.join(files)}")

    def assigned(self) -> dict[str, str]:
        """Dialogue id -> its split, from the id files (a broken id file counts as empty)."""
        out: dict[str, str] = {}
        for split, path in self.files().items():
            try:
                ids = strictjson.loads(path.read_text(encoding="utf-8")) if path.exists() else []
            except (ValueError, OSError):
                continue
            for did in ids if isinstance(ids, list) else []:
                out.setdefault(str(did), split)
        return out

    def assign(self, dialogue_id: str, split: str | None) -> None:
        """Move a dialogue into `split` (None: into none); creates the id files a build needs."""
        for name, path in self.files().items():
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
