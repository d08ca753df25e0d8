"""One deadline for every network wait of the kit: a whole answer (connection, first byte and
the whole body) within its budget, however slowly the peer sends it.

A per-read timeout (what httpx, huggingface_hub and pip give) never ends a peer that sends one
byte every few seconds, or a body that never ends: each read is quick. So every HTTP request of
the kit runs under a budget for the whole exchange, stamped when it starts:

* `bound(client)` wraps each transport of an httpx2 client (huggingface_hub's shared client,
  `hubclient.bound_hub_requests`; the OpenAI-compatible endpoint's, `endpoint.Endpoint`). Sync:
  every socket read, write and connect of the request is given at most what is left of its
  budget (a network backend under the connection pool), so a peer that drips its headers is cut
  too; async: the exchange and each chunk of the body run under `asyncio.timeout`. Past the
  budget the request fails with `NetworkTimeout`, one line naming the URL and how to allow more.
* `run(argv, ...)`: a subprocess that downloads (pip in `meditod pretrained`), killed past its
  budget, the download's progress read from its output.

The budget grows only with real progress: each MIN_RATE bytes (64 KiB) that a body of declared
length delivered (or that a request sent) adds one second, so a model download or an upload of
any size that moves at least that fast is never cut, while a drip (bytes per second) or a body
of no declared length that never ends (no earning) is cut at the budget.

The knob: MEDITOD_NETWORK_TIMEOUT (seconds, positive). Unset, each caller's default applies:
100 s for a Hub request and the Hub's silence across retries (`hubclient.HUB_SILENCE_S`), the
endpoint's silence deadline (`endpoint.SILENCE_S`, 110 s) for a batch, 100 s for pip. Set, it
replaces all of them: any single wait ends within it (plus the time to give up), with one line
that says what was waited for and to raise MEDITOD_NETWORK_TIMEOUT (or the command's --timeout,
where the command's own deadline was the shorter).
"""

from __future__ import annotations

import asyncio
import math
import os
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from urllib.parse import urlsplit

import httpcore2
import httpx2

from meditod_hub.errors import MeditodError, UsageError

ENV = "MEDITOD_NETWORK_TIMEOUT"
DEFAULT_S = 100.0
MIN_RATE = 64 * 1024  # bytes per second a body must move to earn more time
CLOSE_S = 0.1  # a read's own timeout this close to the budget's end counts as the budget's
BUDGET = "meditod_budget"  # request extension: (seconds, how to allow more), set by a hook
RAISE_IT = f"set {ENV}=SECONDS to wait longer"
PIP_PROGRESS = re.compile(r"^Progress (\d+) of (\d+)\s*$")  # pip's `--progress-bar raw`


class NetworkTimeout(httpx2.ReadTimeout, MeditodError):
    """A request (or download) that got no complete answer within its budget: one line.

    A `ReadTimeout` for the libraries in between (huggingface_hub falls back to its cache and
    retries timeouts under `hubclient`'s silence budget; openai retries under the endpoint's),
    and a `MeditodError` for the command, which prints it as it is."""


def limit(default: float = DEFAULT_S) -> float:
    """Seconds one network wait may take: MEDITOD_NETWORK_TIMEOUT when set, else `default`."""
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        return default
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise UsageError(f"{ENV}={raw!r}: give the seconds a network wait may take, a positive "
                         "number (unset: the defaults, 100 s for the Hub)")
    return seconds


def stamp(request: httpx2.Request, seconds: float, hint: str = RAISE_IT) -> None:
    """Give `request` its budget (a request hook's job); unstamped ones get `limit()`."""
    request.extensions[BUDGET] = (seconds, hint)


def shown(url) -> str:
    """A URL as errors name it: scheme, host, port and path (no user, password or query)."""
    parts = urlsplit(str(url))
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname or ''}{port}{parts.path}"


class Wait:
    """One wait: its start, budget and progress (bytes sent; bytes of a body whose length was
    declared, `bounded`), and what to call when it got its answer."""

    def __init__(self, what: str, budget: float, hint: str = RAISE_IT,
                 on_answer: Callable[[], None] | None = None):
        self.what, self.budget, self.hint, self.on_answer = what, budget, hint, on_answer
        self.start = time.monotonic()
        self.sent = self.received = 0
        self.bounded = False
        self.done = self.failed = False

    @classmethod
    def of(cls, request: httpx2.Request, on_answer=None) -> Wait:
        seconds, hint = request.extensions.get(BUDGET) or (limit(), RAISE_IT)
        return cls(f"{request.method} {shown(request.url)}", seconds, hint, on_answer)

    def earned(self) -> float:
        return (self.sent + (self.received if self.bounded else 0)) / MIN_RATE

    def left(self) -> float:
        return self.start + self.budget + self.earned() - time.monotonic()

    def expired(self) -> NetworkTimeout:
        so_far = f"{self.received} bytes of its answer" if self.received else "no answer"
        return NetworkTimeout(f"{self.what}: no complete answer within {round(self.budget, 1):g} "
                              f"s ({so_far} after {time.monotonic() - self.start:.0f} s); "
                              f"{self.hint}")

    def check(self) -> None:
        if self.left() <= 0:
            raise self.expired()

    def answered(self, complete: bool) -> None:
        """The exchange ended: an answer (read whole, or closed by its reader without a failure)
        or real progress (time earned) counts as the peer being heard; a body cut short, or one
        of no declared length however much of it came, does not."""
        if self.done:
            return
        self.done = True
        if self.on_answer and (complete or self.earned() >= 1):
            self.on_answer()


_CURRENT: ContextVar[Wait | None] = ContextVar("meditod_network_wait", default=None)


def _clamped(timeout: float | None) -> tuple[Wait | None, float | None, bool]:
    """(the current wait, `timeout` cut to what is left of it, whether the cut applies)."""
    wait = _CURRENT.get()
    if wait is None:
        return None, timeout, False
    left = wait.left()
    if left <= 0:
        raise wait.expired()
    if timeout is None or left < timeout + CLOSE_S:  # the budget bounds this wait (or ties)
        return wait, left, True
    return wait, timeout, False


class _Socket(httpcore2.NetworkStream):
    """A connection whose reads, writes and TLS handshake take at most the current request's
    remaining budget; bytes sent earn time."""

    def __init__(self, inner: httpcore2.NetworkStream):
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        wait, timeout, cut = _clamped(timeout)
        try:
            return self._inner.read(max_bytes, timeout)
        except httpcore2.ReadTimeout:
            if cut:
                raise wait.expired() from None
            raise

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        wait, timeout, cut = _clamped(timeout)
        try:
            self._inner.write(buffer, timeout)
        except httpcore2.WriteTimeout:
            if cut:
                raise wait.expired() from None
            raise
        if wait is not None:
            wait.sent += len(buffer)

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context, server_hostname=None, timeout=None):
        wait, timeout, cut = _clamped(timeout)
        try:
            return _Socket(self._inner.start_tls(ssl_context, server_hostname, timeout))
        except httpcore2.ConnectTimeout:
            if cut:
                raise wait.expired() from None
            raise

    def get_extra_info(self, info: str):
        return self._inner.get_extra_info(info)


class _Backend(httpcore2.NetworkBackend):
    """The connection pool's backend: connections open within the budget, as `_Socket`s."""

    def __init__(self, inner: httpcore2.NetworkBackend):
        self._inner = inner

    def _connect(self, connect: Callable, timeout: float | None):
        wait, timeout, cut = _clamped(timeout)
        try:
            return _Socket(connect(timeout))
        except httpcore2.ConnectTimeout:
            if cut:
                raise wait.expired() from None
            raise

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        return self._connect(lambda t: self._inner.connect_tcp(host, port, t, local_address,
                                                               socket_options), timeout)

    def connect_unix_socket(self, path, timeout=None, socket_options=None):
        return self._connect(lambda t: self._inner.connect_unix_socket(path, t, socket_options),
                             timeout)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class _Body(httpx2.SyncByteStream):
    """A response body read under its request's budget, checked on every chunk."""

    def __init__(self, inner: httpx2.SyncByteStream, wait: Wait):
        self._inner, self._wait = inner, wait

    def __iter__(self) -> Iterator[bytes]:
        chunks = iter(self._inner)
        while True:  # an endless body ends at its budget (`check`)
            token = _CURRENT.set(self._wait)
            try:
                chunk = next(chunks)
            except StopIteration:
                self._wait.answered(complete=True)
                return
            except BaseException:
                self._wait.failed = True
                raise
            finally:
                _CURRENT.reset(token)
            self._wait.received += len(chunk)
            self._wait.failed = self._wait.left() <= 0
            self._wait.check()
            yield chunk

    def close(self) -> None:
        self._wait.answered(complete=not self._wait.failed)
        self._inner.close()


class _Transport(httpx2.BaseTransport):
    def __init__(self, inner: httpx2.BaseTransport, on_answer):
        self._inner, self._on_answer = inner, on_answer
        pool = getattr(inner, "_pool", None)  # httpx2.HTTPTransport's httpcore2 pool (or proxy)
        backend = getattr(pool, "_network_backend", None)
        self.clamps = backend is not None
        if self.clamps and not isinstance(backend, _Backend):
            pool._network_backend = _Backend(backend)

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        wait = Wait.of(request, self._on_answer)
        token = _CURRENT.set(wait)
        try:
            response = self._inner.handle_request(request)
        finally:
            _CURRENT.reset(token)
        wait.bounded = "content-length" in response.headers
        response.stream = _Body(response.stream, wait)
        return response

    def close(self) -> None:
        self._inner.close()

    def __enter__(self):
        self._inner.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._inner.__exit__(*exc)


class _AsyncBody(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, wait: Wait):
        self._inner, self._wait = inner, wait

    async def __aiter__(self):
        chunks = self._inner.__aiter__()
        while True:  # each chunk waits at most what is left; an endless body ends at `check`
            try:
                async with asyncio.timeout(max(self._wait.left(), 0)) as scope:
                    chunk = await anext(chunks)
            except StopAsyncIteration:
                self._wait.answered(complete=True)
                return
            except BaseException as exc:
                self._wait.failed = True
                if isinstance(exc, TimeoutError) and scope.expired():
                    raise self._wait.expired() from None
                raise
            self._wait.received += len(chunk)
            self._wait.failed = self._wait.left() <= 0
            self._wait.check()
            yield chunk

    async def aclose(self) -> None:
        self._wait.answered(complete=not self._wait.failed)
        await self._inner.aclose()


class _AsyncTransport(httpx2.AsyncBaseTransport):
    clamps = True

    def __init__(self, inner: httpx2.AsyncBaseTransport, on_answer):
        self._inner, self._on_answer = inner, on_answer

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        wait = Wait.of(request, self._on_answer)
        try:
            async with asyncio.timeout(max(wait.left(), 0)) as scope:
                response = await self._inner.handle_async_request(request)
        except TimeoutError:
            if scope.expired():
                raise wait.expired() from None
            raise
        wait.bounded = "content-length" in response.headers
        response.stream = _AsyncBody(response.stream, wait)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self):
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc) -> None:
        await self._inner.__aexit__(*exc)


def bound(client: httpx2.Client | httpx2.AsyncClient, budget: float | None = None,
          hint: str = RAISE_IT, on_answer: Callable[[], None] | None = None):
    """Put every request of `client` (its transports, proxies' included) under one deadline for
    the whole exchange: `budget` seconds (else the request's stamp, else `limit()`). `on_answer`
    is called when a body arrived whole (or earned time): the peer is not silent.
    Wrapping twice is a no-op. Returns `client`."""
    wrapper = _AsyncTransport if isinstance(client, httpx2.AsyncClient) else _Transport
    wrap = (lambda t: t if t is None or isinstance(t, wrapper) else wrapper(t, on_answer))
    client._transport = wrap(client._transport)
    client._mounts = {pattern: wrap(t) for pattern, t in client._mounts.items()}
    if budget is not None:
        hooks = client.event_hooks

        def stamped(request):
            if BUDGET not in request.extensions:
                stamp(request, budget, hint)

        async def stamped_async(request):
            stamped(request)

        hook = stamped_async if wrapper is _AsyncTransport else stamped
        client.event_hooks = {**hooks, "request": [*hooks["request"], hook]}
    return client


def is_bound(client: httpx2.Client | httpx2.AsyncClient) -> bool:
    return isinstance(client._transport, (_Transport, _AsyncTransport))


def run(argv: Sequence[str], what: str, budget: float, hint: str = RAISE_IT,
        env: dict | None = None) -> tuple[int, list[str]]:
    """Run a command that downloads (pip with `--progress-bar raw`), killed once it has taken
    `budget` seconds plus what its progress earned; (exit code, its last output lines).
    Past the budget: `NetworkTimeout`, one line."""
    wait = Wait(what, budget, hint)
    wait.bounded = True  # pip's progress counts bytes of a file of known length
    lines: list[str] = []
    proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, text=True, errors="replace", env=env)

    def read() -> None:
        for line in proc.stdout:  # ends when the process closes its output (or is killed)
            progress = PIP_PROGRESS.match(line)
            if progress:
                wait.received = int(progress.group(1))
            elif line.strip():
                lines.append(line.rstrip())
                del lines[:-50]

    reader = threading.Thread(target=read, daemon=True, name="meditod-netwait")
    reader.start()
    try:
        while True:  # each turn waits at most a second, and the budget ends the loop
            left = wait.left()
            if left <= 0:
                proc.kill()
                raise wait.expired()
            try:
                proc.wait(timeout=min(left, 1.0))
                break
            except subprocess.TimeoutExpired:
                continue
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        reader.join(5)
        proc.stdout.close()
    return proc.returncode, lines
