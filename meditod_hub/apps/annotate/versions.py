"""Two editors of one dialogue: the versions each editor opened, kept as merge bases
(`Versions`), and a save from an older version merged per utterance, three-way, or refused where
both sides changed the same utterance (`SaveConflict`): never overwritten silently.

Apart from the store because it is the one place that compares an editor's labels with the
file's and a common base; the store only asks it before writing.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections import OrderedDict

from meditod_hub.apps.annotate.jsondoc import same
from meditod_hub.apps.annotate.labels import label_of
from meditod_hub.errors import MeditodError

HISTORY = 64  # versions kept per dialogue as merge bases


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


class Versions:
    """The last `HISTORY` versions of each dialogue an editor opened or saved, by version."""

    def __init__(self) -> None:
        self._history: dict[str, OrderedDict[str, dict]] = {}

    def remember(self, dialogue_id: str, dialogue: dict) -> str:
        version = version_of(dialogue)
        history = self._history.setdefault(dialogue_id, OrderedDict())
        history[version] = copy.deepcopy(dialogue)
        history.move_to_end(version)
        while len(history) > HISTORY:
            history.popitem(last=False)
        return version

    def merge(self, dialogue_id: str, theirs: list, mine: list, base_version: str):
        """`mine` (an editor's labels, from `base_version`) merged into `theirs` (the file's): the
        merged labels and the utterances taken from theirs; `SaveConflict` where both changed."""
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
