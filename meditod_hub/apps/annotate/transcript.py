"""A plain transcript, one utterance a line (`D:`/`P:` or `Doctor:`/`Patient:` first), read into
unlabelled utterances of the release format: what `ReleaseStore.import_transcript` adds.

Apart from the store because it reads text a user pasted, line by line (a refusal names the
line), and touches no file.
"""

from __future__ import annotations

import re

from meditod_hub.apps.annotate.labels import LABEL_KEY
from meditod_hub.data.tasks import LABELLING_TASKS
from meditod_hub.errors import MeditodError

# A transcript line opens with its speaker (a labelling task's) or the speaker's initial.
SPEAKER_OF = {tag: speaker for speaker in LABELLING_TASKS for tag in (speaker, speaker[0])}
TRANSCRIPT_LINE = re.compile(rf"\s*({'|'.join(SPEAKER_OF)})\s*:(.*)", re.IGNORECASE)


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
