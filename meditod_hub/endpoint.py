"""One client for every OpenAI-compatible endpoint: OpenAI, Azure OpenAI, vLLM, TGI, llama.cpp's
server, `transformers serve` and Hugging Face Inference Providers (`https://router.huggingface.co/v1`).

    endpoint = Endpoint("http://127.0.0.1:8000/v1", "meta-llama/Meta-Llama-3-8B-Instruct",
                        cache=".cache/endpoint_answers.sqlite")
    answers = endpoint.complete([Request("407-12", messages=[...])], Decoding(max_tokens=200))

Why the `openai` package (`AsyncOpenAI`) and not huggingface_hub's `AsyncInferenceClient`: every
server above speaks the OpenAI protocol, and `openai` is its reference client; it retries 408,
409, 429, 5xx, timeouts and dropped connections with exponential backoff and honours
`Retry-After`; it has the legacy `/v1/completions` route that plain-prompt (span-format) models
need and an Azure client for Azure's deployment URLs; and `transformers serve` already requires it.
Inference Providers are reached through their OpenAI-compatible router with `HF_TOKEN`.

What this module adds on top (written here, the client has no such thing):
* bounded concurrency (N requests in flight) over asyncio;
* one deadline (`timeout`, what every command's `--timeout` sets) over the whole batch, retries
  and backoff included, and the first request that fails for good stops the batch (the others
  are cancelled, not waited for); and a silence deadline: no complete answer from the server
  for `SILENCE_S` seconds (or MEDITOD_NETWORK_TIMEOUT, `netwait`) ends the batch too (a
  connection gets `CONNECT_TIMEOUT_S`); each attempt, connection, first byte and the whole body
  together, ends within its own deadline however slowly the server drips (`netwait.bound`);
* an on-disk answer cache (SQLite) keyed by (endpoint URL, model, messages or prompt, decoding
  settings, and a `cache_scope` the caller may add), written as each answer arrives: an
  interrupted batch resumes where it stopped, a rerun sends nothing, and two servers that serve
  the same model name never share answers. Every batch that took answers from it says so. It
  holds answers and token counts only, never the prompts;
* token usage, HTTP requests made (retries included), cache hits and estimated cost.
Keys come only from the environment, and `key_variable` alone decides which goes where: a
hosted API's own variable to its own host (`OPENAI_API_KEY` to api.openai.com,
`AZURE_OPENAI_API_KEY` to Azure, `HF_TOKEN` to the Hub's router), over https only; any other
endpoint gets a key only from the variable the user names (`--api_key_env`). Keys never appear
in messages, files or `describe()`, which names the endpoint by host alone.
"""

from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import json
import os
import sqlite3
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from tqdm.auto import tqdm

from meditod_hub.errors import MeditodError, UsageError, name_ids

DEFAULT_CACHE = ".cache/endpoint_answers.sqlite"
DEFAULT_TIMEOUT_S = 3600.0  # a whole batch, retries included; answers so far stay cached
REQUEST_TIMEOUT_S = 90.0    # one HTTP attempt's read and write deadline
CONNECT_TIMEOUT_S = 10.0    # opening a connection: a host that takes longer is not there
# The batch's silence deadline (at least one attempt's): a batch whose server sent no answer for
# this long ends, whatever its --timeout (retries would wait on the same silent server), so a
# server that accepts and never answers fails within two minutes; longer than one attempt, so
# a retry after one hung attempt still has its chance.
SILENCE_S = 110.0
OPENAI_HOST = "api.openai.com"
HF_HOSTS = ("router.huggingface.co", "api-inference.huggingface.co")
AZURE_SUFFIXES = (".openai.azure.com", ".cognitiveservices.azure.com")
AZURE_API_VERSION = "2024-10-21"
NO_KEY = "EMPTY"  # what keyless servers are sent; the client insists on a non-empty string


class EndpointError(MeditodError):
    """The endpoint cannot answer (unreachable, refused the key, unknown model, deadline)."""


@dataclass(frozen=True)
class Decoding:
    """Decoding settings, part of every cache key (the paper: greedy, 200 new tokens)."""

    max_tokens: int
    temperature: float = 0.0
    stop: tuple[str, ...] = ()
    # server-specific request fields as JSON text (`constrained.request.ServedConstraint.extra_body`)
    extra_body: str | None = None

    def body(self) -> dict:
        body = {"max_tokens": self.max_tokens, "temperature": self.temperature}
        if self.stop:
            body["stop"] = list(self.stop)
        return body


@dataclass(frozen=True)
class Request:
    """One chat request (`messages`) or one plain completion (`prompt`), with its row id."""

    id: str
    messages: tuple | list | None = None
    prompt: str | None = None

    def key(self, endpoint: str, model: str, decoding: Decoding, scope: str = "") -> str:
        """The cache key: which server (`cache_address`), which model there, what was asked."""
        content = ({"messages": list(self.messages)} if self.messages is not None
                   else {"prompt": self.prompt})
        blob = json.dumps({"endpoint": endpoint, "model": model, "scope": scope, **content,
                           "decoding": asdict(decoding)}, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()


@dataclass(frozen=True)
class Answer:
    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str | None
    cached: bool = False


@dataclass(frozen=True)
class Prices:
    """USD per million tokens (input, output); 0 for a model you serve yourself."""

    input: float = 0.0
    output: float = 0.0

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input + completion_tokens * self.output) / 1e6


# The paper's OpenAI models at OpenAI's list prices when the paper ran them (USD / 1M tokens);
# anything else costs what `Prices` says (default 0: a server of your own).
PAPER_PRICES = {"gpt-3.5-turbo-0125": Prices(0.5, 1.5), "gpt-4-1106-preview": Prices(10.0, 30.0),
                "gpt-4-turbo-2024-04-09": Prices(10.0, 30.0)}


@dataclass
class Stats:
    """What one `Endpoint` did, summed over its batches."""

    requests: int = 0          # HTTP requests sent, retries included
    answers: int = 0           # answers received from the endpoint
    cache_hits: int = 0
    prompt_tokens: int = 0     # as the endpoint reported them (cached answers included)
    completion_tokens: int = 0
    wall_clock_s: float = 0.0
    cost_usd: float = 0.0

    @property
    def retries(self) -> int:
        return max(0, self.requests - self.answers)


def check_url(base_url: str, flag: str = "endpoint") -> str:
    """`base_url` if it is an http(s) URL with a host, the only kind an OpenAI-compatible server
    answers (ftp://, file:// or a bare host would fail at the first request, or never); else one
    line naming `flag`."""
    parts = urlsplit(base_url)
    if parts.scheme and parts.scheme.lower() not in ("http", "https"):
        raise EndpointError(f"{flag} {base_url!r} is not an http:// or https:// URL, the only "
                            "ones an OpenAI-compatible server answers: give e.g. "
                            "http://127.0.0.1:8000/v1")
    if not parts.scheme or not parts.hostname:
        raise EndpointError(f"{flag} {base_url!r} is not a URL: give the server's base URL, e.g. "
                            "http://127.0.0.1:8000/v1")
    return base_url


def endpoint_host(base_url: str) -> str:
    """`host[:port]` of a URL: what logs and run_info name (no scheme path, user or password)."""
    parts = urlsplit(base_url)
    return parts.hostname + (f":{parts.port}" if parts.port else "") if parts.hostname else base_url


def cache_address(base_url: str) -> str:
    """The endpoint as the answer cache tells servers apart: scheme, host, port and path, without
    the URL's user, password, query or a trailing slash."""
    parts = urlsplit(base_url)
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme.lower()}://{(parts.hostname or '').lower()}{port}{parts.path.rstrip('/')}"


def is_local_host(host: str) -> bool:
    """localhost or a loopback address: a plain-http request to it stays on this machine."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def key_variable(base_url: str, api_key_env: str | None = None) -> str | None:
    """The one rule that decides which key an endpoint gets: the environment variable to read,
    or None (no key is sent).

    A variable the user names (`--api_key_env`) goes to the endpoint it is named for; otherwise
    only a hosted API gets its own key (OpenAI's to api.openai.com, Azure's to Azure, the Hub's
    token to its router), over https only, and every other endpoint gets none.
    """
    if api_key_env:
        return api_key_env
    parts = urlsplit(base_url)
    host = (parts.hostname or "").lower()
    if host == OPENAI_HOST:
        variable = "OPENAI_API_KEY"
    elif host.endswith(AZURE_SUFFIXES):
        variable = "AZURE_OPENAI_API_KEY"
    elif host in HF_HOSTS:
        variable = "HF_TOKEN"
    else:
        return None
    if parts.scheme != "https":
        raise EndpointError(f"{host} takes its key over https only: use "
                            f"https://{endpoint_host(base_url)}{parts.path}")
    return variable


def _api_key(base_url: str, variable: str | None, named_by: str | None) -> str:
    """The key read from `variable` (checked present), or NO_KEY when no key is to be sent.
    `named_by`: the flag the user named the variable with (None: the host's own variable)."""
    if variable is None:
        return NO_KEY
    parts = urlsplit(base_url)
    key = os.environ.get(variable)
    if not key and variable == "HF_TOKEN":
        from huggingface_hub import get_token  # also the token of `hf auth login`

        key = get_token()
    if not key:
        named = f" (named by {named_by})" if named_by else ""
        raise EndpointError(f"{endpoint_host(base_url)} needs an API key: set {variable} in the "
                            f"environment{named}")
    if parts.scheme != "https" and not is_local_host(parts.hostname or ""):
        print(f"warning: the key in {variable} goes to {endpoint_host(base_url)} over plain http, "
              f"as {named_by} asks: anyone on the way can read it", file=sys.stderr)
    return key


class AnswerCache:
    """SQLite: key -> answer text and token counts. Committed answer by answer."""

    def __init__(self, path: str | Path, flag: str = "--cache"):
        self.path = Path(path)
        self.flag = flag  # the command's flag that names the cache, for the hint
        if self.path.is_dir():
            raise EndpointError(f"{self.path} is a folder, not an answer cache: give {flag} "
                                "another file")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path)
            others = sorted(name for (name,) in self._db.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")
                if name != "answers" and not name.startswith("sqlite_"))
            if others:  # someone's own database: the kit adds no table to it
                self._db.close()
                raise EndpointError(f"{self.path} is a database with other tables than an answer "
                                    f"cache's ({name_ids(others, 5)}): give {flag} a file of its "
                                    "own")
            self._db.execute("CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, text "
                             "TEXT, prompt_tokens INTEGER, completion_tokens INTEGER, "
                             "finish_reason TEXT)")
            self._db.execute("SELECT key, text, prompt_tokens, completion_tokens, finish_reason "
                             "FROM answers LIMIT 1").fetchall()
            self._db.commit()
        except (OSError, sqlite3.Error) as exc:
            raise self._unusable(exc) from None

    def _unusable(self, exc: Exception) -> EndpointError:
        return EndpointError(f"{self.path} is not a usable answer cache ({type(exc).__name__}: "
                             f"{exc}): move it away, or give {self.flag} another file")

    def get(self, key: str) -> Answer | None:
        try:
            row = self._db.execute("SELECT text, prompt_tokens, completion_tokens, finish_reason "
                                   "FROM answers WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error as exc:
            raise self._unusable(exc) from None
        return Answer(*row, cached=True) if row else None

    def put(self, key: str, answer: Answer) -> None:
        try:
            self._db.execute("INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?)",
                             (key, answer.text, answer.prompt_tokens, answer.completion_tokens,
                              answer.finish_reason))
            self._db.commit()
        except sqlite3.Error as exc:
            raise self._unusable(exc) from None

    def close(self) -> None:
        self._db.close()


@dataclass
class Endpoint:
    """An OpenAI-compatible endpoint serving `model`, with the limits one batch runs under.

    `timeout`: seconds for a whole `complete` call, retries included (None: no limit), what the
    commands' `--timeout` sets; `request_timeout`: seconds for one HTTP attempt (connect, read,
    write each; never more than `timeout`); `max_retries`: retries of one request (429/5xx/
    timeouts/dropped connections, `Retry-After` honoured). `cache_scope`: what else tells the
    answers apart beyond endpoint and model name (predict: the checkpoint the server was
    started from). `flag_prefix`: the command's prefix of `--timeout`/`--api_key_env`/`--cache`,
    which the hints name (the LLM judge's are `--judge_timeout`, ...).
    """

    base_url: str
    model: str
    api_key_env: str | None = None
    concurrency: int = 8
    timeout: float | None = DEFAULT_TIMEOUT_S
    request_timeout: float = REQUEST_TIMEOUT_S
    max_retries: int = 4
    cache: str | Path | None = DEFAULT_CACHE
    cache_scope: str = ""
    prices: Prices = field(default_factory=Prices)
    progress: bool = False
    flag_prefix: str = ""
    stats: Stats = field(default_factory=Stats)

    def __post_init__(self):
        if self.concurrency < 1:
            raise EndpointError(f"concurrency must be at least 1, got {self.concurrency}")
        if self.timeout is not None and not 0 < self.timeout < float("inf"):
            raise UsageError(f"{self.flag('timeout')} must be a positive number of seconds, "
                             f"got {self.timeout}")
        check_url(self.base_url)
        self.key_variable = key_variable(self.base_url, self.api_key_env)
        self._heard = lambda: None  # a batch in flight restarts its silence deadline here
        self._key = _api_key(self.base_url, self.key_variable,
                             self.flag("api_key_env") if self.api_key_env else None)

    def flag(self, name: str) -> str:
        """The command-line flag that sets `name` for this endpoint's command."""
        return f"--{self.flag_prefix}{name}"

    @property
    def host(self) -> str:
        return endpoint_host(self.base_url)

    @property
    def attempt_timeout(self) -> float:
        return min(self.request_timeout, self.timeout or self.request_timeout)

    def silence_s(self) -> float:
        """How long a batch waits without a complete answer: MEDITOD_NETWORK_TIMEOUT when set,
        else SILENCE_S (at least one attempt's deadline)."""
        # deferred: netwait loads httpx2, which only a batch that sends requests needs
        from meditod_hub import netwait

        return netwait.limit(max(SILENCE_S, self.attempt_timeout))

    def attempt_budget(self) -> float:
        """One attempt's deadline for connection, first byte and whole answer together."""
        return min(self.attempt_timeout, self.silence_s())

    def describe(self) -> dict:
        """Settings and counts for run_info.json: the endpoint without the URL's user, never the
        key; `cache_hits` of the answers came from this endpoint's cache entries."""
        return {"endpoint": self.host, "endpoint_url": cache_address(self.base_url),
                "model": self.model, "key_variable": self.key_variable,
                "concurrency": self.concurrency, "timeout_s": self.timeout,
                "request_timeout_s": self.attempt_timeout, "max_retries": self.max_retries,
                "prices_usd_per_million": asdict(self.prices),
                **{k: v for k, v in asdict(self.stats).items()}, "retries": self.stats.retries}

    def complete(self, requests: Sequence[Request], decoding: Decoding,
                 desc: str = "requests") -> dict[str, Answer]:
        """Answers by request id: cached ones first, the rest from the endpoint."""
        return asyncio.run(self.acomplete(requests, decoding, desc))

    async def acomplete(self, requests: Sequence[Request], decoding: Decoding,
                        desc: str = "requests") -> dict[str, Answer]:
        start = time.perf_counter()
        cache = AnswerCache(self.cache, self.flag("cache")) if self.cache else None
        answers: dict[str, Answer] = {}
        missing: list[tuple[Request, str]] = []
        address = cache_address(self.base_url)
        try:
            for request in requests:
                key = request.key(address, self.model, decoding, self.cache_scope)
                hit = cache.get(key) if cache else None
                if hit is None:
                    missing.append((request, key))
                else:
                    answers[request.id] = hit
                    self._count(hit)
            self.stats.cache_hits += len(answers)
            if answers:
                print(f"{desc}: {len(answers)} of {len(requests)} answers from the answer cache "
                      f"{self.cache} (earlier answers of {self.host}, model {self.model}); "
                      f"{self.flag('cache')} '' asks the server again", file=sys.stderr)
            if missing:
                await self._fetch(missing, decoding, answers, cache, desc)
        finally:
            if cache:
                cache.close()
            self.stats.wall_clock_s += time.perf_counter() - start
        return answers

    def _count(self, answer: Answer) -> None:
        self.stats.prompt_tokens += answer.prompt_tokens
        self.stats.completion_tokens += answer.completion_tokens
        if not answer.cached:
            self.stats.answers += 1
            self.stats.cost_usd += self.prices.cost(answer.prompt_tokens, answer.completion_tokens)

    async def _fetch(self, missing, decoding, answers, cache, desc) -> None:
        client = self._client()
        slots = asyncio.Semaphore(self.concurrency)
        bar = tqdm(total=len(missing), desc=desc, unit="req", disable=not self.progress)

        async def one(request: Request, key: str) -> None:
            async with slots:
                answer = await self._ask(client, request, decoding)
            if cache:
                cache.put(key, answer)
            answers[request.id] = answer
            self._count(answer)
            bar.update(1)
            bar.set_postfix(tokens=self.stats.prompt_tokens + self.stats.completion_tokens,
                            cost=f"${self.stats.cost_usd:.4f}", refresh=False)

        loop = asyncio.get_running_loop()
        batch_end = loop.time() + self.timeout if self.timeout else float("inf")

        silence = self.silence_s()

        def next_deadline() -> float:
            return min(batch_end, loop.time() + silence)

        try:
            async with asyncio.timeout_at(next_deadline()) as deadline:
                self._heard = lambda: deadline.expired() or deadline.reschedule(next_deadline())
                await self._all(one, missing)
        except TimeoutError:
            done = sum(1 for r, _ in missing if r.id in answers)
            resume = "(kept in the cache): rerun the same command to resume, or" if cache \
                else "(not cached):"
            if loop.time() < batch_end:
                kept = " (kept in the cache: rerun the same command to resume)" if cache else ""
                raise EndpointError(
                    f"{self.host} sent no complete answer for {silence:g} s, retries "
                    f"included: {done} of {len(missing)} answers{kept}; check that the server "
                    "is up and not overloaded, or set MEDITOD_NETWORK_TIMEOUT=SECONDS to wait "
                    "longer") from None
            raise EndpointError(
                f"{self.host}: not done within {self.flag('timeout')} {self.timeout:g} s, retries "
                f"included: {done} of {len(missing)} answers {resume} allow a longer "
                f"{self.flag('timeout')}") from None
        finally:
            bar.close()
            await client.close()

    @staticmethod
    async def _all(one, missing) -> None:
        """Run every request; the first failure cancels the rest and is raised alone."""
        try:
            async with asyncio.TaskGroup() as group:
                for request, key in missing:
                    group.create_task(one(request, key))
        except* Exception as failed:
            raise failed.exceptions[0] from None

    def _client(self):
        # deferred: openai is an optional extra (meditod-hub[endpoint]); netwait loads httpx2
        import openai

        from meditod_hub import netwait

        def count(_request):
            self.stats.requests += 1

        async def count_async(request):
            count(request)

        def heard():  # an answer arrived whole: the silence deadline starts again
            self._heard()

        http = netwait.bound(openai.DefaultAsyncHttpxClient(event_hooks={"request": [count_async]}),
                             budget=self.attempt_budget(), on_answer=heard)
        timeout = openai.Timeout(self.attempt_timeout,
                                 connect=min(CONNECT_TIMEOUT_S, self.attempt_timeout))
        common = {"api_key": self._key, "max_retries": self.max_retries,
                  "timeout": timeout, "http_client": http}
        if (urlsplit(self.base_url).hostname or "").endswith(AZURE_SUFFIXES):
            return openai.AsyncAzureOpenAI(
                azure_endpoint=self.base_url,
                api_version=os.environ.get("AZURE_OPENAI_API_VERSION", AZURE_API_VERSION), **common)
        return openai.AsyncOpenAI(base_url=self.base_url, **common)

    async def _ask(self, client, request: Request, decoding: Decoding) -> Answer:
        # deferred: openai is an optional extra (meditod-hub[endpoint])
        import openai

        try:
            extra = {"extra_body": json.loads(decoding.extra_body)} if decoding.extra_body else {}
            if request.messages is not None:
                raw = await client.chat.completions.with_raw_response.create(
                    model=self.model, messages=list(request.messages), **decoding.body(), **extra)
            else:
                raw = await client.completions.with_raw_response.create(
                    model=self.model, prompt=request.prompt, **decoding.body(), **extra)
            response = raw.parse()
        except openai.AuthenticationError:
            if self.key_variable is None:
                raise EndpointError(
                    f"{self.host} wants an API key (HTTP 401) and no key goes to it unless you "
                    f"name the variable that holds it: {self.flag('api_key_env')} VAR") from None
            raise EndpointError(f"{self.host} refused the API key (HTTP 401): set "
                                f"{self.key_variable} to a valid key for this endpoint") from None
        except openai.PermissionDeniedError:
            raise EndpointError(f"{self.host} denied access to model {self.model!r} (HTTP 403): "
                                f"check the key in {self.key_variable} may use it") from None
        except (openai.NotFoundError, openai.BadRequestError) as exc:
            raise self._status_error(exc) from None
        except openai.APITimeoutError:
            budget = self.attempt_budget()
            knob = ("; set MEDITOD_NETWORK_TIMEOUT=SECONDS to wait longer"
                    if budget < self.attempt_timeout else "")
            raise EndpointError(
                f"{self.host} did not answer within {budget:g} s, "
                f"{self.max_retries} retries included: check that the server is up and not "
                f"overloaded ({self.flag('timeout')} bounds the whole run){knob}") from None
        except openai.APIConnectionError as exc:
            raise self._connection_error(exc) from None
        except openai.APIStatusError as exc:
            served = self.served_models()
            hint = (f"; it serves {name_ids(served, 10)}: if {self.model!r} is not one of them, "
                    "pass a served model name" if served and self.model not in served else "")
            raise EndpointError(f"{self.host} answered HTTP {exc.status_code} after "
                                f"{self.max_retries} retries: {self._server_says(exc)}{hint}") from None
        return self._answer(response, request)

    def _connection_error(self, exc) -> EndpointError:
        """No connection, or a connection the server dropped mid-answer: different fixes. (By
        the transport's error name: the client's HTTP library is httpx or its fork httpx2.)"""
        cause = exc.__cause__
        if type(cause).__name__ in ("RemoteProtocolError", "ReadError"):
            return EndpointError(
                f"{self.host} cut its answer short ({type(cause).__name__}, {self.max_retries} "
                "retries): the server or a proxy in front of it closed the connection mid-answer; "
                "check the server's log, or its limits on response size and time")
        what = type(cause).__name__ if cause else "connection error"
        return EndpointError(f"cannot reach {self.host} ({what}, {self.max_retries} retries): "
                             "start the server or fix the endpoint URL")

    def _answer(self, response, request: Request) -> Answer:
        try:
            choice = response.choices[0]
            text = (choice.message.content if request.messages is not None else choice.text)
        except (AttributeError, IndexError, TypeError):
            raise EndpointError(f"{self.host} sent a response that is not a completion (a proxy "
                                "error page?): check the endpoint URL ends with /v1") from None
        usage = getattr(response, "usage", None)
        return Answer(text or "", getattr(usage, "prompt_tokens", 0) or 0,
                      getattr(usage, "completion_tokens", 0) or 0, choice.finish_reason)

    def _status_error(self, exc) -> EndpointError:
        said = self._server_says(exc)
        if exc.status_code == 404 or "model" in said.lower():
            served = self.served_models()
            listing = f"; it serves: {name_ids(served, 10)}" if served else ""
            return EndpointError(f"{self.host} does not serve model {self.model!r} (HTTP "
                                 f"{exc.status_code}){listing}: pass a served model name")
        return EndpointError(f"{self.host} rejected the request (HTTP {exc.status_code}): {said}")

    def _server_says(self, exc) -> str:
        """The server's own message, on one line, short, with the key scrubbed out."""
        body = getattr(exc, "body", None)
        message = body.get("message") if isinstance(body, dict) else None
        text = " ".join(str(message or getattr(exc, "message", "") or exc).split())[:200]
        return text.replace(self._key, "***") if self._key != NO_KEY else text

    def _listed_models(self) -> list:
        """The entries of GET /models ([] when the server does not list them)."""
        # deferred: openai is an optional extra (meditod-hub[endpoint]); netwait loads httpx2
        import openai

        from meditod_hub import netwait

        seconds = min(self.attempt_budget(), 10.0)
        try:
            with openai.OpenAI(base_url=self.base_url, api_key=self._key, max_retries=0,
                               timeout=seconds, http_client=netwait.bound(
                                   openai.DefaultHttpxClient(), budget=seconds)) as client:
                return list(client.models.list())
        except (openai.OpenAIError, AttributeError, TypeError):
            return []

    def served_models(self) -> list[str]:
        """Model names from GET /models ([] when the server does not list them)."""
        return sorted(m.id for m in self._listed_models())

    def context_length(self) -> int | None:
        """The context window the server reports for `model` (vLLM's `max_model_len` in GET
        /models), or None when it reports none."""
        for entry in self._listed_models():
            if entry.id == self.model:
                length = (entry.model_extra or {}).get("max_model_len")
                return length if isinstance(length, int) and length > 0 else None
        return None
