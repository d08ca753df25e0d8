"""The Hub side: the dataset push, and what every upload shares (a token checked up front, one
deadline per command, failures as one line).

    meditod push --folder meditod --repo my-org/meditod            # private; gated: MediTOD data
    meditod push --folder meditod --repo my-org/meditod --public   # a public repo

A push uploads exactly the files the folder's build manifest lists (hashes verified first), in
one commit, and deletes only the files an earlier build of this kit put in the repo (its
manifest says which); a repo holding anything else is refused. The gating comes from the licence
the build proved and recorded in the manifest (`licence.py`), proved again from the data before
the push (`proof.reprove_licence`: a manifest and card edited together prove nothing), never from
the card alone or from release.json: MediTOD data goes out gated (manual approval: dataset
Settings -> gated access -> review requests); proven-synthetic data and the user's own declared
dialogues ungated; all of it private unless --public. The push prints the gating it chose and
why. Token, deadline and errors are `meditod_hub.hubclient`'s, shared with model publishing and
the portal.
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from huggingface_hub import (
    CommitOperationAdd,
    CommitOperationDelete,
    DatasetCard,
    HfApi,
)
from huggingface_hub.errors import (
    EntryNotFoundError,
    RemoteEntryNotFoundError,
    RevisionNotFoundError,
)

from meditod_hub.data.dataset import MANIFEST
from meditod_hub.data.licence import MEDITOD, SYNTHETIC
from meditod_hub.data.manifest import verify_manifest
from meditod_hub.data.proof import reprove_licence
from meditod_hub.errors import UsageError
from meditod_hub.hubclient import (
    HubError,
    check_timeout,
    deadline,
    hub_session,
)

# The secret scan every upload shares lives in secrets.py; its names stay importable from here.
from meditod_hub.publishing.secrets import NEVER_UPLOADED, SCAN_BLOCK, refuse_secrets  # noqa: F401

KEEP_ON_HUB = (".gitattributes",)  # the Hub's own file in every repo
# What a Space or model repo got from this kit's last upload (the dataset push's is the build
# manifest): a later upload replaces and deletes only these, never the owner's own files.
UPLOAD_RECORD = "meditod_upload.json"


@dataclass
class PushArguments:
    repo: str = field(metadata={"help": "ORG/NAME of the dataset repo on the Hub"})
    folder: Path = field(default=Path("meditod"), metadata={"help": "a folder built by "
                                                                    "`meditod build`"})
    public: bool = field(default=False, metadata={"help": "make the repo public (default: private)"})
    timeout: float = field(default=120.0, metadata={"above": 0,
        "help": "seconds for the whole push, retries included (also the limit of each request)"})


def upload_plan(api: HfApi, repo: str, uploads: set[str] | dict[str, str | bytes | Path], *,
                repo_type: str = "model", revision: str = "main", timeout: float = 120.0,
                command: str = "", take_over: bool = False,
                check_edits: bool = False) -> tuple[list[str], bytes]:
    """(files to delete, the new upload record) for a commit of `uploads` (names, or name ->
    content): only what this kit's last upload put there (its `UPLOAD_RECORD`) is replaced or
    deleted; a file it did not upload stops the commit before anything changes.

    The record says which command (`meditod space`, `meditod leaderboard`, ...) owns the repo and
    each file's digests. Unless `take_over`, another command's repo is refused (the leaderboard
    once replaced the assistant Space's app and deleted its models/), and with `check_edits` so
    is a file changed on the Hub since the kit uploaded it (a Space owner's edited app.py)."""
    present = set(api.list_repo_files(repo, repo_type=repo_type, revision=revision))
    try:
        path = api.hf_hub_download(repo, UPLOAD_RECORD, repo_type=repo_type, revision=revision,
                                   etag_timeout=timeout)
        earlier = json.loads(Path(path).read_text(encoding="utf-8"))
        owned = set(earlier["files"])
    except (EntryNotFoundError, ValueError, KeyError, TypeError):
        earlier, owned = {}, set()
    earlier = earlier if isinstance(earlier, dict) else {}
    if not owned and present - set(KEEP_ON_HUB) <= {"README.md"}:
        owned = present  # a new repo: the Hub may have made a README (a Space's), nothing else
    foreign = sorted((present & set(uploads)) - owned - set(KEEP_ON_HUB))
    if foreign:
        raise HubError(f"{repo} holds {', '.join(foreign[:3])}{', ...' if len(foreign) > 3 else ''}"
                       f" that no upload of this kit put there (no {UPLOAD_RECORD} lists it): "
                       "upload to a new repo, or move those files away first")
    owner = earlier.get("command")
    if command and owner and owner != command and not take_over:
        raise HubError(f"{repo} was uploaded by `meditod {owner}`, not `meditod {command}`: give "
                       f"another --repo, or pass --take_over to replace its files with this "
                       "command's")
    if check_edits and not take_over and isinstance(earlier.get("digests"), dict):
        edited = _edited_on_the_hub(api, repo, repo_type, revision, earlier["digests"],
                                    owned & present)
        if edited:
            raise HubError(f"{repo}: {', '.join(edited[:3])}{', ...' if len(edited) > 3 else ''} "
                           f"changed on the Hub since `meditod {owner or command}` uploaded it "
                           "(edited by its owner?): keep those edits elsewhere and pass "
                           "--take_over to replace them, or upload to another --repo")
    stale = sorted((owned & present) - set(uploads) - {UPLOAD_RECORD} - set(KEEP_ON_HUB))
    record = {"command": command or None, "files": sorted(set(uploads) | {UPLOAD_RECORD})}
    if isinstance(uploads, dict):
        record["digests"] = {name: _digests(content) for name, content in sorted(uploads.items())}
    return stale, (json.dumps(record, indent=2) + "\n").encode()


def _digests(content: str | bytes | Path) -> dict[str, str]:
    """The sha256 and git blob id of what is uploaded: the Hub shows one of them for each file
    (an LFS file's sha256, a regular file's blob id)."""
    sha, size = hashlib.sha256(), 0
    if isinstance(content, Path):
        size = content.stat().st_size
        git = hashlib.sha1(b"blob %d\0" % size)
        with content.open("rb") as f:
            for block in iter(lambda: f.read(SCAN_BLOCK), b""):
                sha.update(block)
                git.update(block)
    else:
        data = content.encode() if isinstance(content, str) else content
        sha.update(data)
        git = hashlib.sha1(b"blob %d\0" % len(data) + data)
    return {"sha256": sha.hexdigest(), "git": git.hexdigest()}


def _edited_on_the_hub(api: HfApi, repo: str, repo_type: str, revision: str, digests: dict,
                       names: set[str]) -> list[str]:
    """Of `names` (recorded with their digests), those whose file on the Hub is another."""
    edited = []
    for entry in api.list_repo_tree(repo, repo_type=repo_type, revision=revision, recursive=True):
        recorded = digests.get(entry.path)
        if entry.path not in names or not isinstance(recorded, dict) \
                or not hasattr(entry, "blob_id"):
            continue
        lfs = getattr(entry, "lfs", None)
        now = (lfs.sha256 if hasattr(lfs, "sha256") else lfs["sha256"]) if lfs else None
        if (now or entry.blob_id) != recorded.get("sha256" if now else "git"):
            edited.append(entry.path)
    return sorted(edited)


def _card_kind(folder: Path) -> tuple[bool, bool]:
    """(tagged synthetic, carries gating fields) of the folder's card."""
    try:
        card = DatasetCard.load(folder / "README.md")
    except (OSError, ValueError, yaml.YAMLError):
        raise HubError(f"{folder}/README.md: unreadable card; rebuild the folder") from None
    return ("synthetic" in (card.data.tags or []),
            any(key.startswith("extra_gated_") for key in card.data.to_dict()))


def _remote_build_files(api: HfApi, repo: str, timeout: float) -> set[str]:
    """The files an earlier build of this kit put in the repo (its manifest), plus that manifest;
    a repo holding anything else is refused."""
    present = set(api.list_repo_files(repo, repo_type="dataset")) - set(KEEP_ON_HUB)
    if not present:
        return set()
    try:
        path = api.hf_hub_download(repo, MANIFEST, repo_type="dataset", etag_timeout=timeout)
        ours = set(json.loads(Path(path).read_text(encoding="utf-8"))["files"]) | {MANIFEST}
    except (EntryNotFoundError, ValueError, KeyError, TypeError):
        ours = set()
    other = sorted(present - ours)
    if other:
        raise HubError(f"{repo} holds files that no build of this kit put there ({', '.join(other[:3])}"
                       f"{', ...' if len(other) > 3 else ''}): push to a new repo, or empty it first")
    return present


def push_dataset(folder: Path, repo: str, public: bool = False, timeout: float = 120.0) -> str:
    """Upload a `meditod build` folder in one commit; return the dataset URL.

    A new repo is private unless `public`; an existing repo keeps its visibility, and a public one
    only takes licence-restricted data with `public`.
    """
    timeout = check_timeout(timeout)
    folder = Path(folder)
    if not folder.is_dir():
        raise UsageError(f"no such folder: {folder} (build one with `meditod build --out {folder}`)")

    manifest = verify_manifest(folder)
    reprove_licence(folder, manifest)
    kind, synthetic, gated = manifest["licence"], manifest["synthetic"], manifest["gated"]
    if _card_kind(folder) != (synthetic, gated) or (synthetic, gated) != (kind == SYNTHETIC,
                                                                         kind == MEDITOD):
        raise HubError(f"{folder}/README.md disagrees with {MANIFEST} (licence={kind}, "
                       f"synthetic={synthetic}, gated={gated}): rebuild the folder with "
                       "`meditod build`")
    print(f"gating: {'gated, manual approval of each request' if gated else 'not gated'}; "
          f"{'public' if public else 'private'} if new (an existing repo keeps its visibility); "
          f"why: {manifest['licence_reason']}")
    action = f"push {folder} to {repo}"
    files = sorted(manifest["files"]) + [MANIFEST]
    refuse_secrets({name: folder / name for name in files}, action)

    def work() -> str:
        with hub_session(action, timeout) as api:
            url = api.create_repo(repo, repo_type="dataset", private=not public, exist_ok=True)
            info = api.dataset_info(repo, timeout=timeout)
            if not info.private and gated and not public:
                raise HubError(f"{repo} is public and {folder} holds licence-restricted data: pass "
                               "--public to publish it, or make the repo private first")
            stale = _remote_build_files(api, repo, timeout) - set(files)
            if gated:  # before the upload, so the data is never readable ungated
                api.update_repo_settings(repo, repo_type="dataset", gated="manual")
            if _remote_manifest(api, repo, timeout) == (folder / MANIFEST).read_bytes() \
                    and not stale:  # an earlier push's commit landed, after its --timeout too
                print(f"{repo} already holds this build (its {MANIFEST} is this one's): "
                      "nothing to upload", file=sys.stderr)
                return str(url)
            operations = ([CommitOperationAdd(name, str(folder / name)) for name in files]
                          + [CommitOperationDelete(name) for name in sorted(stale)])
            sent.set()
            api.create_commit(repo, operations, repo_type="dataset",
                              commit_message=f"Upload a MediTOD kit build ({kind} data)")
            return str(url)

    sent = threading.Event()
    return deadline(timeout, action, work, sent=sent,
                    retry="run the same push again: it sees a commit that landed and uploads "
                          "nothing, or uploads it whole")


def _remote_manifest(api: HfApi, repo: str, timeout: float) -> bytes | None:
    """The repo's build_manifest.json as it is on the Hub's main branch, None if it has none:
    equal to the local one, the repo holds this very build (every file's digest is in it)."""
    try:
        path = api.hf_hub_download(repo, MANIFEST, repo_type="dataset", revision="main",
                                   etag_timeout=timeout)
    except (EntryNotFoundError, RemoteEntryNotFoundError, RevisionNotFoundError):
        return None
    return Path(path).read_bytes()
