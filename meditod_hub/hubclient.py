"""The Hub client every Hub-facing command shares: a token checked up front, one deadline per
command, a timeout on each request, and failures as one line (`HubError`).

On the ground floor (`meditod_hub.layers`): `meditod push` and publishing, `meditod results`
(evaluation) reading Hub model cards, and the annotation portal's hosted store all reach the
Hub through it.

Every Hub request of the process also runs under `netwait`'s deadline for the whole exchange
(a Hub that drips its answer or sends one without end is cut, not only a silent one), and no
thread waits on the Hub longer than HUB_SILENCE_S without a complete answer, retries included,
in an `http_timeout` block (push, publish, space, leaderboard) as outside one.
MEDITOD_NETWORK_TIMEOUT replaces HUB_SILENCE_S (`netwait.limit`).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

import httpx2
from huggingface_hub import HfApi, constants, get_session, get_token, set_client_factory
from huggingface_hub.errors import (
    HfHubHTTPError,
    HFValidationError,
    LocalTokenNotFoundError,
    OfflineModeIsEnabled,
)
from huggingface_hub.utils import validate_repo_id
from huggingface_hub.utils._http import default_client_factory

from meditod_hub import netwait
from meditod_hub.errors import MeditodError, UsageError

T = TypeVar("T")
# Every Hub request of a command (a model's download, a repo listing, a card), not only those of
# an `http_timeout` block: huggingface_hub's shared client waits forever by default.
HUB_CONNECT_TIMEOUT_S = 10.0
HUB_READ_TIMEOUT_S = 60.0  # between two reads of one answer, a download's chunks included
# A Hub that answers none of a thread's requests for this long fails with one line, however
# many times huggingface_hub retries (`hf_hub_download` asks again with a 60 s deadline, up
# to 5 more times): a silent Hub ends within 2 minutes, not 7.
HUB_SILENCE_S = 100.0
RETRY_GAP_S = 10.0  # above huggingface_hub's longest wait between two tries (8 s)


class HubError(MeditodError):
    """A Hub operation that cannot go on; the CLI prints it as one line."""


class HubSilenceError(HubError):
    """The Hub sent no complete answer for HUB_SILENCE_S (`_silence_left`)."""


def check_timeout(seconds: float) -> float:
    if not (isinstance(seconds, (int, float)) and math.isfinite(seconds) and seconds > 0):
        raise UsageError(f"--timeout must be a positive number of seconds, got {seconds}")
    return float(seconds)


def check_repo_id(repo: str, flag: str) -> str:
    """`repo` as the Hub spells a repo id, ORG/NAME, before any work: a bad one would only fail
    at the Hub, or end up as a broken link in a card."""
    try:
        validate_repo_id(repo)
    except HFValidationError as exc:
        why = str(exc).split(":")[0]
    else:
        why = None if repo.count("/") == 1 else "it names no owner"
    if why:
        raise UsageError(f"{flag} {repo!r} is not a Hub repo id ({why}): give ORG/NAME")
    return repo


def deadline(seconds: float, action: str, work: Callable[[], T],
             sent: threading.Event | None = None, retry: str = "") -> T:
    """Run `work` and give up after `seconds`, retries and all (the library retries on its own).

    The work runs in a daemon thread; past the deadline it is abandoned (a Hub commit is atomic:
    it either landed whole or not at all) and the command ends with a one-line error. Once the
    work sets `sent` (its commit is on its way) the Hub may still apply it after we give up:
    the error says so, and `retry` says what the next run does about it.
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
    if worker.is_alive() and sent is not None and sent.is_set():
        raise HubError(f"{action}: the commit was sent but not confirmed within --timeout "
                       f"{seconds:g} s, so it may still land ({constants.ENDPOINT} applies a "
                       f"commit whole or not at all); {retry or 'check the repo before retrying'}")
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


def _client_with_deadlines() -> httpx2.Client:
    client = default_client_factory()
    client.event_hooks = {**client.event_hooks,
                          "request": [*client.event_hooks["request"], _timeout_of_this_call]}
    # the Hub is heard once an answer arrived whole (or moved), not at its headers: a Hub that
    # drips a body after quick headers is as silent as one that sends nothing
    return netwait.bound(client, on_answer=_answered)


def bound_hub_requests() -> None:
    """Give every huggingface_hub request of this process a connect and a read deadline, and a
    deadline for the whole answer (`netwait.bound`): the harness, a Space, the leaderboard, the
    portal's models, none waits forever on a silent or dripping Hub; an `http_timeout` block
    still sets its own. Every command calls it (`meditod_hub.commands` on import)."""
    set_client_factory(_client_with_deadlines)


_REQUEST_TIMEOUT: ContextVar[float | None] = ContextVar("meditod_hub_request_timeout",
                                                         default=None)


def _timeout_of_this_call(request: httpx2.Request) -> None:
    """Request hook: the timeout of the `http_timeout` block this request was made in, if any;
    else the request's own, each deadline it left unset (huggingface_hub passes `timeout=None`
    down from most `HfApi` methods) filled in with HUB_CONNECT_TIMEOUT_S / HUB_READ_TIMEOUT_S;
    either way none beyond what is left of HUB_SILENCE_S (`_silence_left`), which also bounds
    the whole answer (`netwait.stamp`). (Before, a block's --timeout, 600 s for publish and a
    Space, replaced the silence budget: a silent Hub held them for the whole --timeout.)"""
    seconds = _REQUEST_TIMEOUT.get()
    left = _silence_left(str(request.url.join("/")).rstrip("/"))
    if seconds is not None:
        budget = min(seconds, left)
        request.extensions["timeout"] = {phase: budget
                                         for phase in ("connect", "read", "write", "pool")}
        netwait.stamp(request, budget, "allow a longer --timeout" if seconds < left
                      else netwait.RAISE_IT)
    else:
        given = request.extensions.get("timeout") or {}
        request.extensions["timeout"] = {
            phase: min(given.get(phase) or (HUB_CONNECT_TIMEOUT_S if phase == "connect"
                                            else HUB_READ_TIMEOUT_S), left)
            for phase in ("connect", "read", "write", "pool")}
        budget = left
        netwait.stamp(request, budget)
    _SILENCE.ends = time.monotonic() + budget


class _Silence(threading.local):
    """How long this thread's Hub requests have gone unanswered: `since` the first of them
    (None after an answer), each one given up by `ends`. A request more than RETRY_GAP_S after
    the last one gave up is a new wait, not a retry."""

    since: float | None = None
    ends: float = 0.0


_SILENCE = _Silence()


def _silence_left(hub: str) -> float:
    """Seconds this thread may still wait on the Hub: what is left of HUB_SILENCE_S (or
    MEDITOD_NETWORK_TIMEOUT) since its unanswered requests began; none left is a one-line
    HubError, not another try."""
    silence = netwait.limit(HUB_SILENCE_S)
    now = time.monotonic()
    if _SILENCE.since is None or now > _SILENCE.ends + RETRY_GAP_S:
        _SILENCE.since = now
    left = silence - (now - _SILENCE.since)
    if left <= 0:
        _SILENCE.since = None
        raise HubSilenceError(f"{hub} sent no complete answer for {silence:g} s, retries "
                              "included: it is down, unreachable or too slow; retry later (check "
                              f"HF_ENDPOINT), or {netwait.RAISE_IT}")
    return left


def _answered() -> None:
    """The Hub answered this thread whole, or its answer moved (its silence ends)."""
    _SILENCE.since = None


@contextmanager
def http_timeout(seconds: float) -> Iterator[None]:
    """Give each huggingface_hub request made in the block a `seconds` connect/read/write timeout.

    Most `HfApi` methods take no timeout, and huggingface_hub shares one httpx client
    (`get_session`, created without one) across the process. The timeout is therefore set per
    request, by a hook that reads it from a context variable of this block: requests of other
    threads and of code outside the block keep theirs. `deadline` bounds the whole.
    """
    session = get_session()
    if _timeout_of_this_call not in session.event_hooks["request"]:
        hooks = session.event_hooks
        session.event_hooks = {**hooks, "request": [*hooks["request"], _timeout_of_this_call]}
    if not netwait.is_bound(session):  # a client of another factory than ours
        netwait.bound(session, on_answer=_answered)
    token = _REQUEST_TIMEOUT.set(seconds)
    try:
        yield
    finally:
        _REQUEST_TIMEOUT.reset(token)


@contextmanager
def translate_errors(action: str) -> Iterator[None]:
    """Turn transport, token and HTTP failures into a one-line `HubError` that says what to do."""
    endpoint = constants.ENDPOINT
    try:
        yield
    except (netwait.NetworkTimeout, HubSilenceError) as exc:
        raise HubError(f"{action}: {exc}") from None
    except httpx2.TimeoutException:
        raise HubError(f"{action}: {endpoint} did not answer in time "
                       "(retry later, or allow a longer --timeout)") from None
    except httpx2.ConnectError:
        raise HubError(f"{action}: cannot connect to {endpoint} "
                       "(down, or no network; check HF_ENDPOINT)") from None
    except httpx2.TransportError as exc:
        raise HubError(f"{action}: network error talking to {endpoint}: {type(exc).__name__}") from None
    except OfflineModeIsEnabled:
        raise HubError(f"{action}: HF_HUB_OFFLINE is set, so the Hub cannot be reached: unset it "
                       "to go online") from None
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
