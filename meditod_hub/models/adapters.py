"""One base model for the three stages: adapters of one base share it, one folder loads once.

The paper's setting is a LoRA adapter per task on Llama-3-8B. Loaded as three models that is
three copies of the base (~48 GB in bf16, ~17 GB in 4-bit) where one base with three adapters
needs ~16 GB / ~6 GB. Here, stages whose runs are adapters of the same base (same base id, same
revision, same quantisation) share one copy: the first loads the base and its adapter
(`peft.PeftModel.from_pretrained(base, folder, adapter_name=task)`), the others attach theirs
(`load_adapter(folder, adapter_name=task)`), and each stage switches to its own adapter
(`set_adapter`) under a lock before it generates. The same folder named for several stages
(a multi-task run) is loaded once and serves them all. Anything else loads its own model, and
`SharedModels.notes` says why, in words, so the assistant can tell its user.

    models = SharedModels()
    nlu = models.load("runs/llama3-8b/nlu", family, quantized=True, task="nlu")
    pol = models.load("runs/llama3-8b/pol", family, quantized=True, task="pol")  # same base
    # `predictor.load_predictor(spec, task, models)` does this for every stage, and its
    # LocalPredictor switches to `pol.adapter` under `pol.lock` before it generates.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path

from meditod_hub.models import loading
from meditod_hub.models.families import Family

ADAPTER_CONFIG = "adapter_config.json"


@dataclass(frozen=True)
class BaseKey:
    """What must agree for two adapters to run on one copy of their base."""

    model: str            # base_model_name_or_path of the adapter config
    revision: str | None  # the base's Hub revision the adapter was trained on
    quantized: bool       # 4-bit NF4 base (QLoRA) or not

    def describe(self) -> str:
        return (f"{self.model}" + (f"@{self.revision}" if self.revision else "")
                + (", 4-bit" if self.quantized else ""))


def adapter_base(folder: str | Path, quantized: bool) -> BaseKey | None:
    """The base an adapter folder names (None: the folder holds full weights)."""
    config = Path(folder) / ADAPTER_CONFIG
    if not config.is_file():
        return None
    data = json.loads(config.read_text(encoding="utf-8"))
    return BaseKey(data["base_model_name_or_path"], data.get("revision"), quantized)


@dataclass
class StageModel:
    """One stage's model: a model object (maybe shared), its tokenizer, its adapter name and
    the lock every stage on that model object generates under."""

    model: object
    tokenizer: object
    adapter: str | None  # None: full weights, nothing to switch
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass
class _Base:
    model: object            # the PeftModel every adapter of this base is attached to
    first_task: str
    lock: threading.Lock


class SharedModels:
    """Loads stage models so that nothing is loaded twice; `notes` records every decision."""

    def __init__(self):
        self._bases: dict[BaseKey, _Base] = {}
        self._folders: dict[tuple[str, bool], tuple[str, StageModel]] = {}
        self.notes: list[str] = []

    def load(self, folder: str | Path, family: Family, quantized: bool, task: str) -> StageModel:
        # deferred: transformers is slow to import
        from transformers import AutoTokenizer

        key = (str(Path(folder).resolve()), quantized)
        if key in self._folders:
            first, stage = self._folders[key]
            self.notes.append(f"{task}: the same model as {first} (one folder, loaded once)")
            return stage
        base = adapter_base(folder, quantized)
        tokenizer = AutoTokenizer.from_pretrained(folder)
        shared = self._bases.get(base) if base else None
        if shared and _fits(shared.model, tokenizer):
            shared.model.load_adapter(str(folder), adapter_name=task)
            shared.model.eval()
            stage = StageModel(shared.model, tokenizer, task, shared.lock)
            self.notes.append(f"{task}: adapter attached to the base loaded for "
                              f"{shared.first_task} ({base.describe()})")
        elif base and not shared:
            # deferred: peft is slow to import
            from peft import PeftModel

            model = family.auto_model().from_pretrained(base.model, revision=base.revision,
                                                        **loading.load_kwargs(quantized))
            if not _fits(model, tokenizer):  # as AutoPeftModel does for a run that added tokens
                model.resize_token_embeddings(len(tokenizer))
            model = PeftModel.from_pretrained(model, str(folder), adapter_name=task)
            model.eval()
            self._bases[base] = _Base(model, task, threading.Lock())
            stage = StageModel(model, tokenizer, task, self._bases[base].lock)
            others = [f"{b.first_task}'s ({k.describe()})" for k, b in self._bases.items()
                      if k != base]
            self.notes.append(f"{task}: base {base.describe()} loaded with its adapter"
                              + (f"; not shared with {', '.join(others)}: another base, revision "
                                 "or quantisation" if others else ""))
        else:
            model, tokenizer = loading.load_model(str(folder), family, quantized)
            stage = StageModel(model, tokenizer, None)
            self.notes.append(f"{task}: its own model (" + (
                "full weights, not an adapter" if base is None else
                "its tokenizer is larger than the shared base's embeddings") + ")")
        self._folders[key] = (task, stage)
        return stage

    @property
    def base_models(self) -> int:
        """How many distinct model objects are loaded (the figure the sharing saves)."""
        return len({id(stage.model) for _, stage in self._folders.values()})


def _fits(model, tokenizer) -> bool:
    """Whether the base's embeddings cover the tokenizer (else AutoPeft would resize them)."""
    embeddings = model.get_input_embeddings()
    return embeddings is None or len(tokenizer) <= embeddings.weight.shape[0]
