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
  `license` in `release.json` or `meditod build --license`: an identifier of the Hub's licence
  list (`HUB_LICENCES`), matched case-insensitively once ASCII whitespace is stripped, and
  nothing else (`unknown` names no licence; `other` only with a LICENSE file in the release and
  release.json's `license_name`). Anything else is refused, never read as MediTOD's data. The
  card carries that licence and the release's own name, never MediTOD's; pushed ungated
  (private unless `--public`).
- **meditod**: everything else, whatever `release.json` says: licence-restricted, the card is
  MediTOD's, the repo gated with manual approval (private unless `--public`).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
import string
from dataclasses import dataclass

from meditod_hub.data.release import GENERATOR, Release
from meditod_hub.errors import UsageError, name_ids

SYNTHETIC, OWN, MEDITOD = "synthetic", "own", "meditod"
KINDS = (SYNTHETIC, OWN, MEDITOD)
# content_fingerprint of data/sample (tests/test_licence.py checks it); editing any file of the
# sample changes it, and the sample is then licence-restricted until this is updated.
SAMPLE_FINGERPRINT = "47c99c9cba415aaa99dcf689d450f8c17341198ae0be24f8f22ab50a5efc3c9e"

# The licence identifiers the Hub accepts in a card's `license:`, in the order of the table at
# https://huggingface.co/docs/hub/repositories-licenses ("License identifier (to use in repo
# card)"), copied 2026-12-07 (issue 46); huggingface_hub 2.4.0 ships no such list. Update it from
# that page when the Hub adds one.
HUB_LICENCES = (
    "apache-2.0", "mit", "openrail", "bigscience-openrail-m", "creativeml-openrail-m",
    "bigscience-bloom-rail-1.0", "bigcode-openrail-m", "afl-3.0", "artistic-2.0", "bsl-1.0", "bsd",
    "bsd-2-clause", "bsd-3-clause", "bsd-3-clause-clear", "c-uda", "cc", "cc0-1.0", "cc-by-2.0",
    "cc-by-2.5", "cc-by-3.0", "cc-by-4.0", "cc-by-sa-3.0", "cc-by-sa-4.0", "cc-by-nc-2.0",
    "cc-by-nc-3.0", "cc-by-nc-4.0", "cc-by-nd-4.0", "cc-by-nc-nd-3.0", "cc-by-nc-nd-4.0",
    "cc-by-nc-sa-2.0", "cc-by-nc-sa-3.0", "cc-by-nc-sa-4.0", "cdla-sharing-1.0",
    "cdla-permissive-1.0", "cdla-permissive-2.0", "wtfpl", "ecl-2.0", "epl-1.0", "epl-2.0",
    "etalab-2.0", "eupl-1.1", "eupl-1.2", "agpl-3.0", "gfdl", "gpl", "gpl-2.0", "gpl-3.0", "lgpl",
    "lgpl-2.1", "lgpl-3.0", "isc", "h-research", "intel-research", "lppl-1.3c", "ms-pl",
    "apple-ascl", "apple-amlr", "mpl-2.0", "odc-by", "odbl", "openmdw-1.0", "openrail++",
    "osl-3.0", "postgresql", "ofl-1.1", "ncsa", "unlicense", "zlib", "pddl", "lgpl-lr",
    "deepfloyd-if-license", "fair-noncommercial-research-license", "llama2", "llama3", "llama3.1",
    "llama3.2", "llama3.3", "llama4", "gemma", "unknown", "other",
)
_HUB_IDS = frozenset(HUB_LICENCES)
UNKNOWN_LICENCE, OTHER_LICENCE = "unknown", "other"  # on the list; neither proves ownership alone
LICENCE_LIST = ("the ids of HUB_LICENCES in meditod_hub/data/licence.py, or "
                "https://huggingface.co/docs/hub/repositories-licenses")
# `other` needs one of these (any case) at the top of the release folder, not empty...
LICENCE_FILES = ("LICENSE", "LICENSE.md", "LICENSE.txt")
EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
# ...and release.json's `license_name` (the Hub card's key for it): a short id, like the Hub's
LICENCE_NAME_KEY = "license_name"
_LICENCE_NAME = re.compile(r"[a-z0-9](?:[a-z0-9.+_-]{0,62}[a-z0-9+])?")
_NO_NAMES = frozenset({"none", "null", "nil", "na", "n-a", "tbd", "todo", "noassertion",
                       UNKNOWN_LICENCE, OTHER_LICENCE, "license", "licence", "meditod", "umls"})


class LicenceError(UsageError):
    """A declared licence that is not an identifier of the Hub's list (exit code 2)."""


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
    a file does not change it. A lone surrogate (a flag's undecodable byte) is hashed as such, so
    the licence check after it can refuse it in words."""
    content = {"dialogues": dialogues, "splits": splits, "metadata": metadata,
               "other_files": other_files}
    text = json.dumps(content, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


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


def hub_licence(value: object) -> str | None:
    """The Hub licence id `value` is (lowercase), or None: a string that, once ASCII whitespace is
    stripped from its ends, is one of HUB_LICENCES in any ASCII case. Nothing else matches: no
    other Unicode character (a non-ASCII letter that lowercases to ASCII, a no-break or
    zero-width space, a combining mark, a filler), no extra word."""
    if not isinstance(value, str):
        return None
    text = value.strip(string.whitespace)
    if not text.isascii():  # before lower(): "\u212a".lower() == "k"
        return None
    text = text.lower()
    return text if text in _HUB_IDS else None


def declared_licence(value: object) -> str | None:
    """The Hub licence id `value` declares the dialogues under, or None when it declares none:
    not an id of the Hub's list (`hub_licence`), or `unknown`, which names no licence. `other`
    is returned: it proves ownership only with what `own_licence` asks beside it."""
    found = hub_licence(value)
    return None if found == UNKNOWN_LICENCE else found


def _shown(value: object) -> str:
    """A declared value for a one-line message, never the value itself (a key pasted into the
    wrong field would be printed): its length, whether it holds characters beyond ASCII (an
    invisible one), and the Hub id it is closest to."""
    if not isinstance(value, str):
        return f"(a {type(value).__name__}, not a string)"
    text = value.strip(string.whitespace).lower()
    close = difflib.get_close_matches(text, HUB_LICENCES, n=1, cutoff=0.8) if text.isascii() \
        else []
    return (f"(a {len(value)}-character value, not shown"
            + ("" if value.isascii() else ", with characters beyond ASCII")
            + (f"; did you mean {close[0]}?" if close else "") + ")")


def _licence_file(other_files: dict[str, str]) -> str | None:
    """The release's LICENSE file (top level, any case, not empty), if it has one."""
    wanted = {name.lower() for name in LICENCE_FILES}
    for name, digest in sorted(other_files.items()):
        if name.lower() in wanted and len(digest) == 64 and digest != EMPTY_SHA256:
            return name
    return None


def own_licence(value: object, where: str, other_files: dict[str, str],
                metadata: dict) -> tuple[str, str]:
    """(the Hub id, its words for the reason) of a declared own-data licence, from `where` (the
    flag or file that gave it); `LicenceError`, one line naming `where`, for anything else."""
    found = hub_licence(value)
    refuse = ("leave it out for MediTOD's licence-restricted data, which builds gated")
    if found is None:
        raise LicenceError(f"{where} {_shown(value)} is not a licence id the Hub accepts: give "
                           f"one, in any case, e.g. cc-by-4.0 (see {LICENCE_LIST}), or {refuse}")
    if found == UNKNOWN_LICENCE:
        raise LicenceError(f"{where} {found!r} names no licence, so it cannot declare the "
                           f"dialogues your own: give your licence's id (see {LICENCE_LIST}), or "
                           f"{refuse}")
    if found != OTHER_LICENCE:
        return found, found
    licence_file = _licence_file(other_files)
    name = metadata.get(LICENCE_NAME_KEY)
    short = name.strip(string.whitespace).lower() if isinstance(name, str) \
        and name.strip(string.whitespace).isascii() else None
    if licence_file is None:
        raise LicenceError(f"{where} {found!r} needs your licence's text in a LICENSE file (or "
                           "LICENSE.md, LICENSE.txt) in the release folder, not empty, and its "
                           f"short name as release.json's `{LICENCE_NAME_KEY}`; or give an id "
                           f"from the Hub's list ({LICENCE_LIST})")
    if short is None or not _LICENCE_NAME.fullmatch(short) or short in _NO_NAMES \
            or short in _HUB_IDS:
        got = "none given" if name is None else _shown(name)
        raise LicenceError(f"{where} {found!r} needs release.json's `{LICENCE_NAME_KEY}`: your "
                           "licence's short name, lowercase letters, digits and - . + _ (e.g. "
                           f"my-clinic-licence-1.0; {got}); a licence on the Hub's list is given "
                           f"by its own id ({LICENCE_LIST})")
    return found, f"other ({short}, text in {licence_file})"


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
    value = metadata.get("license")
    if value is not None:
        # the flag overrides release.json's key; the same value in both is release.json's too
        where = "release.json's `license`" if release.metadata.get("license") == value \
            else "--license"
        declared, words = own_licence(value, where, release.other_files, metadata)
        return Licence(OWN, f"your own dialogues, licence {words} declared by {where}",
                       declared), fingerprint
    claimed = " (release.json's \"synthetic\" is not proof)" if "synthetic" in metadata else ""
    others = release.other_files
    beside = (f"; the folder also holds {len(others)} other file(s): "
              f"{name_ids(sorted(others), 3)}" if others else "")
    return Licence(MEDITOD, "licence-restricted MediTOD data: not exactly the embedded sample or "
                            f"a regenerable {GENERATOR} corpus (every key of every dialogue, the "
                            "splits, release.json with the build's --name/--description/--license "
                            f"and any other file in the folder count){beside}, and no own-data "
                            f"licence declared{claimed}", "other"), fingerprint
