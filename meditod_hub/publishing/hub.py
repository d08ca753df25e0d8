"""The Hub side: the dataset push, and what every upload shares (a token checked up front, one
deadline per command, failures as one line).

    meditod push --folder meditod --repo my-org/meditod            # private; gated: MediTOD data
    meditod push --folder meditod --repo my-org/meditod --public   # a public repo

A push uploads exactly the files the folder's build manifest lists (hashes verified first), in
one commit, and deletes only the files an earlier build of this kit put in the repo (its
manifest says which); a repo holding anything else is refused. The gating comes from the licence
the build proved and recorded in the manifest (`licence.py`), proved again from the data before
the push (`build.reprove_licence`: a manifest and card edited together prove nothing), never from
the card alone or from release.json: MediTOD data goes out gated (manual approval: dataset
Settings -> gated access -> review requests); proven-synthetic data and the user's own declared
dialogues ungated; all of it private unless --public. The push prints the gating it chose and
why. Token, deadline and errors are `meditod_hub.hubclient`'s, shared with model publishing and
the portal.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import threading
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path

import yaml
from huggingface_hub import (
    CommitOperationAdd,
    CommitOperationDelete,
    DatasetCard,
    HfApi,
    get_token,
)
from huggingface_hub.errors import (
    EntryNotFoundError,
    RemoteEntryNotFoundError,
    RevisionNotFoundError,
)

from meditod_hub.data.build import reprove_licence, verify_manifest
from meditod_hub.data.dataset import MANIFEST
from meditod_hub.data.licence import MEDITOD, SYNTHETIC
from meditod_hub.errors import UsageError
from meditod_hub.hubclient import (
    HubError,
    check_timeout,
    deadline,
    hub_session,
)

KEEP_ON_HUB = (".gitattributes",)  # the Hub's own file in every repo
# What a Space or model repo got from this kit's last upload (the dataset push's is the build
# manifest): a later upload replaces and deletes only these, never the owner's own files.
UPLOAD_RECORD = "meditod_upload.json"
# The key shapes never uploaded, printed or written for others (the user's own token and the
# values of key variables set in the environment are looked for as well, `_secrets_to_find`).
# An sk- key needs a digit in its body, so a hyphenated word is no key.
KEY_SHAPES = {
    "a Hugging Face token (hf_...)": rb"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{30,}",
    "an OpenAI-style API key (sk-...)": rb"(?<![A-Za-z0-9])sk-(?=[A-Za-z0-9_-]*[0-9])[A-Za-z0-9_-]{20,}",
    "an AWS access key (AKIA...)": rb"(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])",
    "a GitHub token (ghp_...)": rb"(?<![A-Za-z0-9])gh[pousr]_[A-Za-z0-9]{36,}",
    "a Google API key (AIza...)": rb"(?<![A-Za-z0-9])AIza[0-9A-Za-z_-]{35}",
}
_KEY_PATTERNS = {kind: re.compile(shape) for kind, shape in KEY_SHAPES.items()}
# Environment variables whose values are keys, by name (HF_TOKEN, OPENAI_API_KEY,
# AWS_SECRET_ACCESS_KEY, --api_key_env's usual names), not those naming a place (..._DIR);
# a value shorter than MIN_KEY_LENGTH is no key.
KEY_VARIABLE = re.compile(r"TOKEN|API_?KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL|ACCESS_KEY",
                          re.IGNORECASE)
MIN_KEY_LENGTH = 12
NOT_A_KEY = ("_DIR", "_PATH", "_FILE", "_SOCK", "_URL", "_HOST")
# A key written with escapes (JSON's \u0068f_..., YAML's \x68) is the same key: decoded first.
_ESCAPE = re.compile(rb"\\(?:u([0-9a-fA-F]{4})|x([0-9a-fA-F]{2}))")
SCAN_BLOCK = 8 << 20  # bytes of a file scanned at a time (weights can be gigabytes)
# Pickles can hold anything, the training arguments' token included (training_args.bin).
NEVER_UPLOADED = ("training_args.bin", "*.pkl", "*.pickle", "*.pt", "*.pth")


@dataclass
class PushArguments:
    repo: str = field(metadata={"help": "ORG/NAME of the dataset repo on the Hub"})
    folder: Path = field(default=Path("meditod"), metadata={"help": "a folder built by "
                                                                    "`meditod build`"})
    public: bool = field(default=False, metadata={"help": "make the repo public (default: private)"})
    timeout: float = field(default=120.0, metadata={"above": 0,
        "help": "seconds for the whole push, retries included (also the limit of each request)"})


def refuse_secrets(items: dict[str, str | bytes | Path], action: str) -> None:
    """Stop before `items` (repo path or shown name -> text, bytes or local file) are uploaded,
    printed or written for others: no pickle, and no key in any file, binary ones too (a
    safetensors header, a tokenizer can hold one), escaped or not: no known key shape (Hub, OpenAI,
    AWS, GitHub, Google) and no value of a key variable set in the environment. The one scan every
    upload and every printed card goes through; the message names the file and the kind of key,
    never the key."""
    pickles = sorted(name for name in items
                     if any(fnmatch(Path(name).name, p) for p in NEVER_UPLOADED))
    if pickles:
        raise HubError(f"{action}: refusing to share {', '.join(pickles)} (a pickle can hold the "
                       "token and runs code when loaded)")
    secrets = _secrets_to_find()
    leaking = [(name, kind) for name, item in sorted(items.items())
               if (kind := _key_in(item, secrets))]
    if leaking:
        shown = ", ".join(f"{name} contains {kind}" for name, kind in leaking[:5])
        raise HubError(f"{action}: refusing: {shown}; remove it (e.g. from the run's recipe.yaml "
                       "or config.json) and rerun")


def _secrets_to_find() -> dict[str, bytes]:
    """Key values to look for besides the known shapes: the user's Hub token and every key
    variable's value in the environment (by the variable's name only: never the value)."""
    found = {}
    own = get_token()
    if own:
        found["a Hugging Face token (hf_...)"] = own.encode()
    for variable, value in sorted(os.environ.items()):
        if KEY_VARIABLE.search(variable) and not variable.upper().endswith(NOT_A_KEY) \
                and len(value.strip()) >= MIN_KEY_LENGTH:
            found.setdefault(f"the value of ${variable}", value.strip().encode())
    return found


def _key_in(item: str | bytes | Path, secrets: dict[str, bytes]) -> str | None:
    """What key text, bytes or a file holds (a known shape, or one of `secrets`), None if none;
    a file is read a block at a time, each block with the end of the one before, so a key
    across two blocks is found too."""
    if isinstance(item, Path):
        if not item.is_file():
            return None
        with item.open("rb") as f:
            return _key_in_blocks(iter(lambda: f.read(SCAN_BLOCK), b""), secrets)
    return _key_in_blocks([item.encode("utf-8", "surrogatepass") if isinstance(item, str)
                           else item], secrets)


def _unescaped(data: bytes) -> bytes:
    if b"\\" not in data:
        return data

    def char(match: re.Match) -> bytes:
        code = int(match.group(1) or match.group(2), 16)
        return bytes([code]) if code < 128 else match.group(0)
    return _ESCAPE.sub(char, data)


def _key_in_blocks(blocks, secrets: dict[str, bytes]) -> str | None:
    overlap = max([512, *(6 * len(value) for value in secrets.values())])
    tail = b""
    for block in blocks:
        data = tail + block
        for text in {data, _unescaped(data)}:
            for kind, value in secrets.items():
                if value in text:
                    return kind
            for kind, pattern in _KEY_PATTERNS.items():
                if pattern.search(text):
                    return kind
        tail = data[-overlap:]
    return None


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
