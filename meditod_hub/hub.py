"""Push a built dataset folder to the Hub: private by default, gated unless synthetic, one-line errors.

`hub_session` (a write token checked up front, one HTTP timeout, failures as `HubError`) is what the
model-publishing code reuses. Gating: a non-synthetic card carries `extra_gated_*` fields (the
request form) and the push switches the repo to *manual* approval; approve each request by hand
on the Hub (dataset Settings -> gated access -> manual approval -> review requests).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import httpx2
import yaml
from huggingface_hub import DatasetCard, HfApi, constants, get_token, set_client_factory
from huggingface_hub.errors import HfHubHTTPError, HFValidationError, LocalTokenNotFoundError
from huggingface_hub.utils._http import default_client_factory

if TYPE_CHECKING:
    from meditod import PushArguments

# What `meditod.py build` writes; anything else in the folder stays local.
BUILD_FILES = ["README.md", "dataset_infos.json", "*/*.parquet"]


class HubError(Exception):
    """A Hub operation that cannot go on; the CLI prints it as one line and exits with code 2."""


def require_token() -> str:
    """The token huggingface_hub will send (HF_TOKEN, else `hf auth login`'s), before any request."""
    token = get_token()
    if not token:
        raise HubError("no Hugging Face token: run `hf auth login` or set HF_TOKEN to a write token")
    return token


@contextmanager
def http_timeout(seconds: float) -> Iterator[None]:
    """Give every huggingface_hub API call in the block a `seconds` connect/read/write timeout.

    huggingface_hub shares one httpx client created without a timeout; `set_client_factory` is its
    hook to configure it. Downloads pass their own timeout (`etag_timeout=`, HF_HUB_DOWNLOAD_TIMEOUT).
    """
    def client() -> httpx2.Client:
        session = default_client_factory()  # keeps the library's request hooks
        session.timeout = httpx2.Timeout(seconds)
        return session

    set_client_factory(client)
    try:
        yield
    finally:
        set_client_factory(default_client_factory)


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


def read_card(folder: Path) -> DatasetCard:
    card = folder / "README.md"
    if not card.is_file():
        raise HubError(f"{folder} holds no built dataset (no README.md): run "
                       f"`python meditod.py build --out {folder}` first")
    try:
        return DatasetCard.load(card)
    except (ValueError, yaml.YAMLError) as exc:
        raise HubError(f"{card}: unreadable card metadata ({exc}): rebuild the folder") from None


def push_dataset(args: PushArguments) -> str:
    """Upload a `meditod.py build` folder in one commit; return the dataset URL.

    A new repo is private unless `--public`; an existing repo keeps its visibility, and a public one
    only takes non-synthetic data with `--public`. Parquet files the build no longer writes are deleted
    in the same commit, so the repo mirrors the folder.
    """
    folder = Path(args.folder)
    card = read_card(folder)
    synthetic = "synthetic" in (card.data.tags or [])
    gated = any(key.startswith("extra_gated_") for key in card.data.to_dict())
    if not synthetic and not gated:
        raise HubError(f"{folder}/README.md is neither tagged synthetic nor gated (extra_gated_*): "
                       "real MediTOD data only goes out gated; rebuild with `meditod.py build`")
    kind = "synthetic" if synthetic else "licence-restricted"
    with hub_session(f"push {folder} to {args.repo}", args.timeout) as api:
        url = api.create_repo(args.repo, repo_type="dataset", private=not args.public, exist_ok=True)
        public = not api.dataset_info(args.repo, timeout=args.timeout).private
        if public and not synthetic and not args.public:
            raise HubError(f"{args.repo} is public and {folder} is not tagged synthetic: pass --public "
                           "to publish it, or make the repo private first")
        if gated:  # before the upload, so the data is never readable ungated
            api.update_repo_settings(args.repo, repo_type="dataset", gated="manual")
        api.upload_folder(repo_id=args.repo, repo_type="dataset", folder_path=folder,
                          allow_patterns=BUILD_FILES, delete_patterns=["*/*.parquet"],
                          commit_message=f"Upload MediTOD build ({kind} data)")
    return str(url)
