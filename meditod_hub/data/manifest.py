"""A build's manifest, `build_manifest.json`: every file's sha256, the release's fingerprints,
what the dialogues are (`provenance`) and their licence with its reason; written last by the
build (`write_manifest`), read back by whoever trusts a build folder (`read_manifest`,
`verify_manifest`: every file present with its hash, nothing else).

Apart from `build` because push, the build's own output guard and the tests read a manifest
without building anything. A manifest is a record, never proof: `proof.reprove_licence` proves
its licence again from the data before a push trusts it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from meditod_hub.data import provenance
from meditod_hub.data.dataset import MANIFEST
from meditod_hub.data.licence import KINDS as LICENCE_KINDS
from meditod_hub.data.licence import Licence
from meditod_hub.data.provenance import Provenance
from meditod_hub.data.release import DIALOGS_FILE, Release
from meditod_hub.errors import MeditodError, name_ids

MANIFEST_FORMAT = "meditod-build/2"  # /2: the licence is proven, and recorded with its reason


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def folder_files(folder: Path) -> list[str]:
    """Every file under `folder`, as sorted POSIX paths relative to it."""
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def write_manifest(folder: Path, release: Release, licence: Licence, content: str,
                   origin: Provenance) -> dict:
    manifest = {"format": MANIFEST_FORMAT, "provenance": origin.as_json(), "licence": licence.kind,
                "licence_reason": licence.reason, "license": licence.license,
                "synthetic": licence.synthetic, "gated": licence.gated,
                "release_fingerprint": release.fingerprint, "content_fingerprint": content,
                # what `reprove_licence` regenerates a synthetic corpus from at push time
                "generator": release.metadata.get("generator")
                if origin.kind == provenance.SYNTHETIC_CORPUS else None,
                "files": {name: file_sha256(folder / name) for name in folder_files(folder)}}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


class ManifestError(MeditodError):
    """A dataset folder whose files do not match its build manifest."""


def read_manifest(folder: Path) -> dict:
    path = folder / MANIFEST
    if not path.is_file() and (folder / DIALOGS_FILE).is_file():
        # a release: build refuses to write into it, so never suggest `build --out` it
        raise ManifestError(f"{folder} is a release folder (it holds {DIALOGS_FILE}), not a "
                            f"build: build it with `meditod build --source {folder} --out "
                            "meditod`, then use that folder")
    if not path.is_file():
        raise ManifestError(f"{folder} has no {MANIFEST}: it is not a complete build of this kit "
                            f"(rebuild it with `meditod build --out {folder}`)")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise ManifestError(f"{path} is unreadable: rebuild the folder") from None
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT \
            or not isinstance(manifest.get("files"), dict) \
            or not isinstance(manifest.get("synthetic"), bool) \
            or not isinstance(manifest.get("gated"), bool) \
            or manifest.get("licence") not in LICENCE_KINDS \
            or not isinstance(manifest.get("licence_reason"), str):
        raise ManifestError(f"{path} is not a {MANIFEST_FORMAT} manifest: rebuild the folder")
    return manifest


def verify_manifest(folder: Path) -> dict:
    """The manifest, once every file it lists is present with its hash and nothing else is."""
    manifest = read_manifest(folder)
    present = set(folder_files(folder)) - {MANIFEST}
    listed = set(manifest["files"])
    missing, extra = sorted(listed - present), sorted(present - listed)
    changed = sorted(n for n in listed & present if file_sha256(folder / n) != manifest["files"][n])
    for problem, names in (("missing", missing), ("not from the build", extra),
                           ("changed since the build", changed)):
        if names:
            raise ManifestError(f"{folder}: {len(names)} file(s) {problem} ({name_ids(names, 5)}): "
                                "rebuild the folder with `meditod build`")
    return manifest
