"""A transformers causal LM in this process that answers chat requests the way
`endpoint.Endpoint` does, so `meditod fewshot --local_model PATH` runs the paper's in-context
baseline without a server.

    chat = LocalChat.load("build/tiny-models/tiny-llama", cache=".cache/endpoint_answers.sqlite")
    answers = chat.complete([Request("407-12", messages=[...])], Decoding(max_tokens=200))

The contract is Endpoint's: `complete(requests, decoding, desc)` returns an `Answer` per request
id, answers go through the same on-disk `AnswerCache` (keyed by this folder, its files, the
device and dtype, and the grammar: a retrained model or a bf16 GPU run is never answered from
an fp32 CPU run's entries), `stats` counts them and `describe()` is what fewshot_info.json
records (the model folder, never a host). Decoding is greedy (`do_sample=False`) up to
`decoding.max_tokens` new tokens, stopping at EOS or the chat template's end-of-turn token
(`Family.stop_token_ids`), the answer decoded without special tokens and stripped, as
`predictor.generate_texts` does for a fine-tuned model.

Why a prefix cache: the authors' prompts all open with the task's system message (~2.5k Llama-3
tokens of intents, slots and rules) and differ only after it, so a plain `generate` per row
spends most of its prefill on the same tokens. `complete` tokenises every prompt with the chat
template, takes the longest token prefix they all share (the system message, and whatever of the
first exemplar's header follows it; found on tokens, so a template that folds the system message
into the first user turn is handled the same way), runs the model once over it into a
`DynamicCache`, and for each row continues a copy of that cache with the row's remaining tokens
only. Each row keeps at least its last token to feed, so the first answer token has logits.

Why it is exact: the prefix's keys and values are what the full prefill computes for those
positions (causal attention: later tokens never change them), and a row's suffix attends to the
same keys at the same positions. On CPU in float32 the answers are token for token those of a
plain `model.generate` on the full prompt (tests/test_fewshot_local.py), under the CMAS grammar
too; `reuse_prefix=False` is that plain path, the baseline the test and
bench/bench_fewshot_cache.py compare with.

Why one row at a time: a batch would pad each row between the shared prefix and its suffix and
change the shapes every matmul reduces over, so its answers could differ from the unbatched
ones in near-tied greedy steps; the saving that matters here, the repeated prefill, is what the
prefix cache removes.
"""

from __future__ import annotations

import copy
import hashlib
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm.auto import tqdm

from meditod_hub.endpoint import DEFAULT_CACHE, Answer, AnswerCache, Decoding, Request, Stats
from meditod_hub.errors import UsageError
from meditod_hub.models import loading
from meditod_hub.models.families import get_family
from meditod_hub.models.served import checkpoint_scope

if TYPE_CHECKING:
    from meditod_hub.models.constrained.processor import Constraint


def shared_prefix(prompts: Sequence[Sequence[int]]) -> int:
    """The length of the longest token prefix every prompt shares, leaving each at least one
    token of its own to feed (0 for no prompts)."""
    if not prompts:
        return 0
    limit = min(map(len, prompts)) - 1
    first = prompts[0]
    n = 0
    while n < limit and all(p[n] == first[n] for p in prompts):
        n += 1
    return n


def describe_constraint(constraint: Constraint) -> dict:
    """fewshot_info.json's `constraint` for a grammar enforced in this process: the setting and a
    hash of the grammar (not the grammar itself), as `ServedConstraint.describe` records a
    server's."""
    text = constraint.grammar
    return {"constrained": True, "format": constraint.fmt, "decoder": "xgrammar, in this process",
            "vocabulary_values": constraint.vocabulary_size,
            "grammar_sha256": hashlib.sha256(text.encode()).hexdigest() if text else None}


@dataclass
class LocalChat:
    """A chat model loaded from `folder`, answering as an `Endpoint` (module docstring).

    `name`: the model name the answers are recorded under (default: the folder); `cache`: the
    answer cache file (None: no cache); `constraint` (`constrained.processor.Constraint`): every answer
    decodes under its grammar; `reuse_prefix`: compute the shared prompt prefix once (False: a
    plain `generate` per row, the baseline)."""

    model: Any
    tokenizer: Any
    folder: str
    name: str | None = None
    cache: str | Path | None = DEFAULT_CACHE
    constraint: Constraint | None = None
    reuse_prefix: bool = True
    progress: bool = False
    stats: Stats = field(default_factory=Stats)
    prefix_tokens: int = field(default=0, init=False)  # of the last batch generated

    def __post_init__(self):
        if not getattr(self.tokenizer, "chat_template", None):
            raise UsageError(f"{self.folder}: the tokenizer has no chat template, so the authors' "
                             "chat messages cannot be rendered: give a chat (instruct) model folder")
        self.name = self.name or self.folder
        self.stops = get_family("chat").stop_token_ids(self.tokenizer)

    @classmethod
    def load(cls, folder: str | Path, **kwargs) -> LocalChat:
        """Model and tokenizer from a local folder (an adapter brings its base), loaded as every
        inference load of the kit (`loading.load_model`: bf16 on a GPU; on CPU the dtype
        transformers picks, the checkpoint's own for a bf16 checkpoint)."""
        path = Path(folder)
        if not any((path / f).is_file() for f in ("config.json", "adapter_config.json")):
            raise UsageError(f"--local_model {folder}: not a model folder (no config.json or "
                             "adapter_config.json): give a Hugging Face causal LM folder with its "
                             "tokenizer")
        model, tokenizer = loading.load_model(str(path), get_family("chat"))
        return cls(model, tokenizer, str(path), **kwargs)

    @property
    def host(self) -> str:
        """What messages name this backend by (an Endpoint's host): the model folder."""
        return self.folder

    def context_length(self) -> int | None:
        """The window the model's config states (as vLLM reports `max_model_len` from it)."""
        length = getattr(self.model.config.get_text_config(), "max_position_embeddings", None)
        return length if isinstance(length, int) and length > 0 else None

    def scope(self) -> str:
        """What tells this model's answers apart in the answer cache beyond folder and name:
        the folder's files, where and at which precision it runs, and the grammar."""
        grammar = self.constraint.grammar if self.constraint else None
        return json.dumps({"files": checkpoint_scope(self.folder), "device": self.model.device.type,
                           "dtype": str(self.model.dtype), "grammar": grammar and hashlib.sha256(
                               grammar.encode()).hexdigest()}, sort_keys=True)

    def describe(self) -> dict:
        """Settings and counts for fewshot_info.json: the model folder, device, dtype, prefix
        reuse, and Endpoint's counts (`requests`: generate calls)."""
        return {"local_model": str(Path(self.folder).resolve()), "model": self.name,
                "device": str(self.model.device), "dtype": str(self.model.dtype).removeprefix("torch."),
                "reuse_prefix": self.reuse_prefix, "shared_prefix_tokens": self.prefix_tokens,
                **asdict(self.stats)}

    def prompt_ids(self, messages: Sequence[dict]) -> list[int]:
        return self.tokenizer.apply_chat_template(list(messages), add_generation_prompt=True,
                                                  tokenize=True, return_dict=True)["input_ids"]

    def complete(self, requests: Sequence[Request], decoding: Decoding,
                 desc: str = "requests") -> dict[str, Answer]:
        """Answers by request id: cached ones first, the rest generated here."""
        if decoding.temperature != 0 or decoding.stop or decoding.extra_body:
            raise ValueError("a local model decodes greedily to its stop tokens: no temperature, "
                             "stop strings or server fields (give `constraint` for a grammar)")
        start = time.perf_counter()
        store = AnswerCache(self.cache) if self.cache else None
        address, scope = f"local://{Path(self.folder).resolve()}", self.scope()
        answers: dict[str, Answer] = {}
        missing: list[tuple[Request, str]] = []
        try:
            for request in requests:
                if request.messages is None:
                    raise ValueError(f"request {request.id}: a local chat model takes messages")
                key = request.key(address, self.name, decoding, scope)
                hit = store.get(key) if store else None
                if hit is None:
                    missing.append((request, key))
                else:
                    answers[request.id] = hit
                    self._count(hit)
            self.stats.cache_hits += len(answers)
            if answers:
                print(f"{desc}: {len(answers)} of {len(requests)} answers from the answer cache "
                      f"{self.cache} (earlier answers of {self.folder}); --cache '' generates "
                      "them again", file=sys.stderr)
            if missing:
                self._generate(missing, decoding.max_tokens, answers, store, desc)
        finally:
            if store:
                store.close()
            self.stats.wall_clock_s += time.perf_counter() - start
        return answers

    def _count(self, answer: Answer) -> None:
        self.stats.prompt_tokens += answer.prompt_tokens
        self.stats.completion_tokens += answer.completion_tokens
        if not answer.cached:
            self.stats.requests += 1
            self.stats.answers += 1

    def _generate(self, missing, max_tokens: int, answers, store, desc) -> None:
        # deferred: torch is slow to import
        import torch

        prompts = [self.prompt_ids(request.messages) for request, _ in missing]
        self.prefix_tokens = shared_prefix(prompts) if self.reuse_prefix else 0
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                prefix = self._prefill(prompts[0][:self.prefix_tokens]) if self.prefix_tokens \
                    else None
                for (request, key), ids in zip(tqdm(missing, desc=desc, unit="row",
                                                    disable=not self.progress), prompts):
                    answer = self._answer(ids, prefix, max_tokens)
                    if store:
                        store.put(key, answer)
                    answers[request.id] = answer
                    self._count(answer)
        finally:
            self.model.train(was_training)

    def _prefill(self, ids: list[int]):
        """The KV cache of the shared prefix, computed once (logits of its last token only: over
        a 128k vocabulary, all of them would cost more than the prefix itself)."""
        # deferred: torch and transformers are slow to import
        import torch
        from transformers import DynamicCache

        cache = DynamicCache(config=self.model.config)
        self.model(input_ids=torch.tensor([ids], device=self.model.device), cache=cache,
                   use_cache=True, logits_to_keep=1)
        return cache

    def _answer(self, ids: list[int], prefix, max_tokens: int) -> Answer:
        """One row: a copy of the prefix cache (generation extends it) continued with the row's
        own tokens; without a prefix, a plain `generate` on the whole prompt."""
        # deferred: torch is slow to import
        import torch

        inputs = torch.tensor([ids], device=self.model.device)
        processor = self.constraint and self.constraint.logits_processor(
            self.tokenizer, self.model.config.vocab_size, self.stops, max_tokens)
        out = self.model.generate(
            input_ids=inputs, attention_mask=torch.ones_like(inputs),
            cache=copy.deepcopy(prefix) if prefix is not None else None,
            max_new_tokens=max_tokens, do_sample=False, num_beams=1, eos_token_id=self.stops,
            pad_token_id=self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None
            else self.stops[0],
            logits_processor=[processor] if processor else None)
        new = out[0, len(ids):].tolist()
        finish = "stop" if new and new[-1] in self.stops else "length"
        return Answer(self.tokenizer.decode(new, skip_special_tokens=True).strip(), len(ids),
                      len(new), finish)
