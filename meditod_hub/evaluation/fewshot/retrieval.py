"""Exemplar retrieval as the authors ran it (docs/format.md, "In-context prompts and retrieval"):
`BAAI/bge-large-en-v1.5` through sentence-transformers, CLS vector, L2-normalised, inner
product; query and pool keys are the last turn only (two lines, no history, no bge query
instruction); the pool is the task's train rows; the top k, most similar first.

Two deliberate choices beyond the released code: a query never retrieves a row of its own
dialogue (it only matters when the queried split is the pool's, e.g. a train-split smoke run),
and equal scores are ordered by pool position (a stable sort; upstream's quicksort left ties in
an unspecified order). Pool embeddings are computed once and kept as `.npy` under the cache
folder, keyed by the retriever (its id and the exact files or Hub commit it loads), the task and
the pool's dataset fingerprint: a rerun, or another split against the same pool, encodes only
its queries.
"""

from __future__ import annotations

import hashlib
import io
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from meditod_hub.data.metrics.judges import JudgeError, bundled_minilm_path
from meditod_hub.errors import MeditodError
from meditod_hub.evaluation.fewshot.prompts import last_turn
from meditod_hub.files import atomic_write

DEFAULT_RETRIEVER = "BAAI/bge-large-en-v1.5"
DEFAULT_CACHE_DIR = ".cache/meditod/retrieval"
PAPER_POOLING = "cls"


def model_signature(model: str) -> str:
    """What identifies the weights behind a retriever name: a local folder's files (name, size,
    mtime) or the Hub commit cached for an id (offline: no request is made)."""
    path = Path(model)
    if path.is_dir():
        files = sorted((str(p.relative_to(path)), p.stat().st_size, p.stat().st_mtime_ns)
                       for p in path.rglob("*") if p.is_file())
        return hashlib.sha256(json.dumps(files).encode()).hexdigest()
    # deferred: huggingface_hub is slow to import
    from huggingface_hub import try_to_load_from_cache

    cached = try_to_load_from_cache(model, "config.json")
    return Path(cached).parent.name if isinstance(cached, str) else "not-cached"


def not_loadable(model: str, exc: Exception) -> MeditodError:
    """Why a retriever did not load, and the local one to pass instead."""
    try:
        local = (f", or pass --retriever {bundled_minilm_path()} (all-MiniLM-L6-v2, installed with "
                 "the kit; not the paper's retriever)")
    except JudgeError:
        local = ""
    if Path(model).is_dir():
        return MeditodError(f"cannot load the retriever {model} ({type(exc).__name__}): give a "
                            f"sentence-transformers model folder{local}")
    return MeditodError(f"the retriever {model} is not on this machine (runs download nothing): "
                        f"fetch it once with `hf download {model}`{local}")


class Retriever:
    """A sentence-transformers model that embeds last turns, normalised. Loaded from this
    machine only (a folder, or a Hub id already in the Hugging Face cache): offline, a missing
    model is one line at once, not minutes of retries."""

    def __init__(self, model: str = DEFAULT_RETRIEVER, device: str | None = None,
                 batch_size: int = 128):
        # deferred: sentence_transformers is an optional extra (meditod-hub[judge])
        from sentence_transformers import SentenceTransformer

        try:
            self.model = SentenceTransformer(model, device=device, local_files_only=True)
        except (OSError, ValueError) as exc:
            raise not_loadable(model, exc) from None
        self.name = model
        self.batch_size = batch_size
        self.pooling = self._pooling()
        if self.pooling != PAPER_POOLING:
            print(f"note: retriever {model} pools with {self.pooling}, not CLS as the paper's bge",
                  file=sys.stderr)

    def _pooling(self) -> str:
        modes = [getattr(m, "pooling_mode", None) for m in self.model.modules()]
        mode = next((m for m in modes if m is not None), "none")
        return mode if isinstance(mode, str) else "+".join(mode)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self.model.encode(list(texts), batch_size=self.batch_size, convert_to_numpy=True,
                                 normalize_embeddings=True, show_progress_bar=False)

    def describe(self) -> dict:
        return {"model": self.name, "pooling": self.pooling, "normalised": True,
                "similarity": "inner product", "key": "last turn"}


class ExemplarPool:
    """The task's train rows, their last-turn embeddings, and a top-k search over them."""

    def __init__(self, retriever: Retriever, task: str, rows: Sequence[dict], fingerprint: str,
                 cache_dir: str | Path | None = DEFAULT_CACHE_DIR):
        self.rows = list(rows)
        self.dialogue_ids = np.array([row["dialogue_id"] for row in self.rows])
        self.retriever = retriever
        self.cache_hit = False
        key = hashlib.sha256(json.dumps({
            "retriever": retriever.name, "weights": model_signature(retriever.name),
            "pooling": retriever.pooling, "task": task, "pool": fingerprint,
            "rows": len(self.rows)}).encode()).hexdigest()[:32]
        self.cache_file = Path(cache_dir) / f"{task}-{key}.npy" if cache_dir else None
        self.vectors = self._vectors()

    def _vectors(self) -> np.ndarray:
        if self.cache_file and self.cache_file.is_file():
            vectors = np.load(self.cache_file)
            if vectors.shape[0] == len(self.rows):
                self.cache_hit = True
                return vectors
        vectors = self.retriever.encode([last_turn(row) for row in self.rows])
        if self.cache_file:
            buffer = io.BytesIO()
            np.save(buffer, vectors)
            atomic_write(self.cache_file, buffer.getvalue())
        return vectors

    def search(self, queries: Sequence[dict], k: int) -> list[list[int]]:
        """Pool indices of the k most similar rows per query, most similar first."""
        if not queries:
            return []
        k = min(k, len(self.rows))
        scores = self.retriever.encode([last_turn(row) for row in queries]) @ self.vectors.T
        out = []
        for query, row_scores in zip(queries, scores):
            row_scores = np.where(self.dialogue_ids == query["dialogue_id"], -np.inf, row_scores)
            order = np.argsort(-row_scores, kind="stable")[:k]
            out.append([int(i) for i in order if np.isfinite(row_scores[i])])
        return out

    def describe(self) -> dict:
        return {**self.retriever.describe(), "pool_rows": len(self.rows),
                "pool_embeddings_cached": self.cache_hit,
                "cache_file": str(self.cache_file) if self.cache_file else None}
