"""Which licence a release's dialogues are under: proven from their content, never taken on trust.

MediTOD's labels are UMLS-derived, so any copy of its dialogues must stay gated. A flag in
`release.json` proves nothing (a real release copied over `data/sample` keeps the sample's
file), so a release is one of three kinds:

- **synthetic**, only when its content proves it: the embedded sample (`data/sample`, by its
  content fingerprint below), or a corpus of `meditod_hub.data.synthetic` whose `release.json` records
  the generator's seed, size and style and which regenerates from them exactly. The fingerprint
  covers everything the build reads (every key of every dialogue, the splits, release.json with
  the build's flags, every other file in the release folder), so nothing can ride along with a
  synthetic release: any addition makes it licence-restricted. Built and pushed ungated (private
  unless `--public`).
- **own**: the user declares the dialogues their own (e.g. made in the annotation portal) with a
  `license` in `release.json` or `meditod build --license`. The card carries that licence and
  the release's own name, never MediTOD's; pushed ungated (private unless `--public`).
- **meditod**: everything else, whatever `release.json` says: licence-restricted, the card is
  MediTOD's, the repo gated with manual approval (private unless `--public`).
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from dataclasses import dataclass

from meditod_hub.data.release import GENERATOR, Release
from meditod_hub.errors import name_ids

SYNTHETIC, OWN, MEDITOD = "synthetic", "own", "meditod"
KINDS = (SYNTHETIC, OWN, MEDITOD)
# content_fingerprint of data/sample (tests/test_licence.py checks it); editing any file of the
# sample changes it, and the sample is then licence-restricted until this is updated.
SAMPLE_FINGERPRINT = "47c99c9cba415aaa99dcf689d450f8c17341198ae0be24f8f22ab50a5efc3c9e"


@dataclass(frozen=True)
class Licence:
    kind: str      # SYNTHETIC, OWN or MEDITOD
    reason: str    # why, in words (the build and the push print it)
    license: str   # the card's `license:` (an id the Hub knows, or "other")

    @property
    def synthetic(self) -> bool:
        return self.kind == SYNTHETIC

    @property
    def gated(self) -> bool:
        return self.kind == MEDITOD

    def gating(self) -> str:
        """What a push does about access, and why."""
        if self.gated:
            return f"gated, manual approval of each request ({self.reason})"
        return f"not gated ({self.reason})"


def content_fingerprint(dialogues: dict[str, dict], splits: dict[str, list[str]],
                        metadata: dict, other_files: dict[str, str]) -> str:
    """sha256 of everything a build reads, so that a proof of synthetic covers all it could
    publish: every dialogue whole (every key at every level, those in no split too), each split's
    ids in order, release.json as the build uses it (with --name, --description, --license) and
    every other file of the release folder (`Release.other_files`). Canonical JSON: reformatting
    a file does not change it."""
    content = {"dialogues": dialogues, "splits": splits, "metadata": metadata,
               "other_files": other_files}
    text = json.dumps(content, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _generated(metadata: dict, fingerprint: str, dialogue_count: int) -> bool:
    """Whether the release is exactly what `meditod_hub.data.synthetic` makes from the recorded
    seed, size and style (regenerated here; a size that differs is refused before generating)."""
    record = metadata.get("generator")
    if not isinstance(record, dict) or record.get("name") != GENERATOR:
        return False
    # deferred: the generator and its phrasings load only for a release that says it was generated
    from meditod_hub.data import synthetic

    seed, size = record.get("seed"), record.get("dialogues")
    style = record.get("style", synthetic.DEFAULT_STYLE)
    if type(seed) is not int or type(size) is not int or size != dialogue_count \
            or style not in synthetic.STYLES:
        return False
    try:
        dialogues = synthetic.generate_dialogues(seed, size, style)
    except ValueError:
        return False
    return content_fingerprint(dialogues, synthetic.split_ids(size),
                               synthetic.release_metadata(seed, size, style), {}) == fingerprint


def declared_licence(value: object) -> str | None:
    """A declared licence id, or None when there is none to see: not a string, or only spaces,
    zero-width and other invisible characters (a licence no reader can see declares nothing)."""
    if not isinstance(value, str):
        return None
    visible = "".join(c for c in value if unicodedata.category(c)[0] not in "CZ").strip()
    return value.strip() if visible else None


def licence_of(release: Release, metadata: dict) -> tuple[Licence, str]:
    """The release's licence and its content fingerprint; `metadata` is release.json with the
    build's flags."""
    fingerprint = content_fingerprint(release.dialogues, release.splits, metadata,
                                      release.other_files)
    if fingerprint == SAMPLE_FINGERPRINT:
        return Licence(SYNTHETIC, "synthetic: the embedded sample, by content fingerprint",
                       "other"), fingerprint
    if _generated(metadata, fingerprint, len(release.dialogues)):
        record = metadata["generator"]
        return Licence(SYNTHETIC, f"synthetic: regenerated by {GENERATOR} from seed "
                                  f"{record['seed']}", "other"), fingerprint
    declared = declared_licence(metadata.get("license"))
    if declared:
        return Licence(OWN, f"your own dialogues, licence {declared} declared in "
                            "release.json or by --license", declared), fingerprint
    claimed = " (release.json's \"synthetic\" is not proof)" if "synthetic" in metadata else ""
    others = release.other_files
    beside = (f"; the folder also holds {len(others)} other file(s): "
              f"{name_ids(sorted(others), 3)}" if others else "")
    return Licence(MEDITOD, "licence-restricted MediTOD data: not exactly the embedded sample or "
                            f"a regenerable {GENERATOR} corpus (every key of every dialogue, the "
                            "splits, release.json with the build's --name/--description/--license "
                            f"and any other file in the folder count){beside}, and no own-data "
                            f"licence declared{claimed}", "other"), fingerprint
