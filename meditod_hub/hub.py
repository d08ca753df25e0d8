"""The Hub side: the dataset push, and what every upload shares (a token checked up front, one
deadline per command, failures as one line).

    meditod push --folder meditod --repo my-org/meditod            # private, gated unless synthetic
    meditod push --folder meditod --repo my-org/meditod --public   # a public repo

A push uploads exactly the files the folder's build manifest lists (hashes verified first), in
one commit, and deletes only the files an earlier build of this kit put in the repo (its
manifest says which); a repo holding anything else is refused. Whether the data is licence-
restricted comes from the manifest, never from the card alone: real MediTOD data goes out gated
(manual approval: dataset Settings -> gated access -> review requests) and private unless
--public. `hub_session` and `deadline` are what model publishing reuses.
"""

from __future__ import annotations

import json
import math
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import httpx2
import yaml
from huggingface_hub import (
    CommitOperationAdd,
    CommitOperationDelete,
    DatasetCard,
    HfApi,
    constants,
    get_session,
    get_token,
)
from huggingface_hub.errors import (
    EntryNotFoundError,
    HfHubHTTPError,
    HFValidationError,
    LocalTokenNotFoundError,
)

from .errors import MeditodError, UsageError, run_main

T = TypeVar("T")
KEEP_ON_HUB = (".gitattributes",)  # the Hub's own file in every repo


class HubError(MeditodError):
    """A Hub operation that cannot go on; the CLI prints it as one line."""


@dataclass
class PushArguments:
    repo: str = field(metadata={"help": "ORG/NAME of the dataset repo on the Hub"})
    folder: Path = field(default=Path("meditod"), metadata={"help": "a folder built by "
                                                                    "`meditod build`"})
    public: bool = field(default=False, metadata={"help": "make the repo public (default: private)"})
    timeout: float = field(default=120.0, metadata={"above": 0,
        "help": "seconds for the whole push, retries included (also the limit of each request)"})


def check_timeout(seconds: float) -> float:
    if not (isinstance(seconds, (int, float)) and math.isfinite(seconds) and seconds > 0):
        raise UsageError(f"--timeout must be a positive number of seconds, got {seconds}")
    return float(seconds)


def deadline(seconds: float, action: str, work: Callable[[], T]) -> T:
    """Run `work` and give up after `seconds`, retries and all (the library retries on its own).

    The work runs in a daemon thread; past the deadline it is abandoned (a Hub commit is atomic:
    it either landed whole or not at all) and the command ends with a one-line error.
    """
    outcome: dict = {}

    def target() -> None:
        try:
            outcome["value"] = work()
        except BaseException as exc:  # noqa: BLE001 - carried to the caller's thread
            outcome["error"] = exc

    worker = threading.Thread(target=target, daemon=True, name="meditod-hub")
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise HubError(f"{action}: not done within --timeout {seconds:g} s ({constants.ENDPOINT} "
                       "is slow or not answering); retry later or allow a longer --timeout")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def require_token() -> str:
    """The token huggingface_hub will send (HF_TOKEN, else `hf auth login`'s), before any request."""
    token = get_token()
    if not token:
        raise HubError("no Hugging Face token: run `hf auth login` or set HF_TOKEN to a write token")
    return token


@contextmanager
def http_timeout(seconds: float) -> Iterator[None]:
    """Give every huggingface_hub request in the block a `seconds` connect/read/write timeout.

    huggingface_hub shares one httpx client (`get_session`) created without a timeout; setting it
    on that client for the block keeps the library's own hooks. `deadline` bounds the whole.
    """
    session = get_session()
    previous = session.timeout
    session.timeout = httpx2.Timeout(seconds)
    try:
        yield
    finally:
        session.timeout = previous


@contextmanager
def translate_errors(action: str) -> Iterator[None]:
    """Turn transport, token and HTTP failures into a one-line `HubError` that says what to do."""
    endpoint = constants.ENDPOINT
    try:
        yield
    except httpx2.TimeoutException:
        raise HubError(f"{action}: {endpoint} did not answer in time "
                       "(retry later, or allow a longer --timeout)") from None
    except httpx2.ConnectError:
        raise HubError(f"{action}: cannot connect to {endpoint} "
                       "(down, or no network; check HF_ENDPOINT)") from None
    except httpx2.TransportError as exc:
        raise HubError(f"{action}: network error talking to {endpoint}: {type(exc).__name__}") from None
    except LocalTokenNotFoundError:
        raise HubError(f"{action}: no Hugging Face token: run `hf auth login` or set HF_TOKEN") from None
    except HFValidationError as exc:
        raise HubError(f"{action}: {exc}") from None
    except HfHubHTTPError as exc:
        status = exc.response.status_code if exc.response is not None else None
        if status == 401:
            raise HubError(f"{action}: the Hub rejected the token (401): create a write token at "
                           "https://huggingface.co/settings/tokens") from None
        if status == 403:
            raise HubError(f"{action}: the token may not write here (403): it is read-only or has no "
                           "access to this namespace") from None
        detail = exc.server_message or str(exc).splitlines()[0]
        raise HubError(f"{action}: the Hub answered {status}: {detail}") from None


@contextmanager
def hub_session(action: str, timeout: float) -> Iterator[HfApi]:
    """An `HfApi` holding a token checked to be able to write, every call under `timeout`.

    Any failure inside the block (ours or huggingface_hub's) leaves as a one-line `HubError`.
    """
    token = require_token()
    with http_timeout(timeout), translate_errors(action):
        api = HfApi(token=token)
        role = api.whoami().get("auth", {}).get("accessToken", {}).get("role")
        if role == "read":
            raise HubError(f"{action}: the token is read-only: use a write token")
        yield api


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
    from .dataset import MANIFEST

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
    from .build import verify_manifest
    from .dataset import MANIFEST

    timeout = check_timeout(timeout)
    folder = Path(folder)
    if not folder.is_dir():
        raise UsageError(f"no such folder: {folder} (build one with `meditod build --out {folder}`)")
    manifest = verify_manifest(folder)
    synthetic, gated = manifest["synthetic"], manifest["gated"]
    if _card_kind(folder) != (synthetic, gated) or synthetic == gated:
        raise HubError(f"{folder}/README.md disagrees with {MANIFEST} (synthetic={synthetic}, "
                       f"gated={gated}): rebuild the folder with `meditod build`")
    kind = "synthetic" if synthetic else "licence-restricted"
    action = f"push {folder} to {repo}"
    files = sorted(manifest["files"]) + [MANIFEST]

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
            operations = ([CommitOperationAdd(name, str(folder / name)) for name in files]
                          + [CommitOperationDelete(name) for name in sorted(stale)])
            api.create_commit(repo, operations, repo_type="dataset",
                              commit_message=f"Upload MediTOD build ({kind} data)")
            return str(url)

    return deadline(timeout, action, work)


def main(argv: list[str]) -> int:
    from .cli import parse_args

    (args,) = parse_args((PushArguments,), argv, "meditod push", __doc__.split("\n\n")[0])
    url = push_dataset(args.folder, args.repo, args.public, args.timeout)
    print(f"pushed {args.folder} to {url}")
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
