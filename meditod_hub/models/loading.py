"""A model in this process. For inference: a model folder or an adapter (with the base its adapter
config names) becomes a model and its tokenizer, with the one set of `from_pretrained` settings
every inference load uses (a predictor's, a shared base's in `adapters`, the local chat model's).
For training: a recipe's base model, 4-bit and ready for LoRA when the recipe says so
(`load_trainable_model`, what `train.run` trains).
"""

from __future__ import annotations

import os
from pathlib import Path

from meditod_hub.data.dataset import hub_shaped
from meditod_hub.errors import MeditodError, UsageError, load_failure
from meditod_hub.models.families import Family
from meditod_hub.models.runs import CHECKPOINTS


def model_source(source: str, flag: str = "") -> Path | None:
    """A model as a command names it: a local model folder (returned) or a Hub id (None, for
    the caller to download or pass on); a file, a URL, a trainer's checkpoints folder, a folder
    without a model or a missing path is refused in one line (naming `flag`, when given)."""
    path, named = Path(source), f"{flag} {source}" if flag else source
    if path.is_dir():
        if path.name == CHECKPOINTS:
            raise UsageError(f"{named} holds trainer checkpoints: give the run folder "
                             f"{path.parent} (or one checkpoint-N folder inside it)")
        if not any((path / f).is_file() for f in ("config.json", "adapter_config.json")):
            raise UsageError(f"{named} is not a model folder (no config.json or "
                             "adapter_config.json): give a run folder or a Hub model id")
        return path
    if path.exists():
        raise UsageError(f"{named} is a file: give a run folder, a model folder or a Hub id")
    if source.startswith(("http://", "https://")):
        raise UsageError(f"{named} is a URL: give the run folder or Hub id as the model "
                         "and the URL as its endpoint (--endpoint)")
    if not hub_shaped(source):
        raise UsageError(f"{flag + ': ' if flag else ''}no such folder: {source} (and not a Hub "
                         "id, ORG/NAME)")
    return None


def is_adapter(folder: str) -> bool:
    return (Path(folder) / "adapter_config.json").is_file()


def load_model(folder: str, family: Family, load_in_4bit: bool = False):
    """Model and tokenizer of a local model folder for inference; an adapter brings its base
    model (named in its adapter config). PEFT is imported only for an adapter, bitsandbytes
    only for a 4-bit base."""
    # deferred: transformers is slow to import
    from transformers import AutoTokenizer

    try:
        model = family.auto_model(is_adapter(folder)).from_pretrained(folder,
                                                                      **load_kwargs(load_in_4bit))
        tokenizer = AutoTokenizer.from_pretrained(folder)
    except MeditodError:
        raise
    except Exception as exc:  # noqa: BLE001 - safetensors, pickle, JSON, config: one message
        raise MeditodError(f"{folder}: cannot load the model or tokenizer "
                           f"({load_failure(exc)}): its files are damaged or incomplete; retrain "
                           "or download it again") from None
    return model, tokenizer


def load_kwargs(load_in_4bit: bool = False) -> dict:
    """`from_pretrained` settings of every inference load (also a shared base's,
    `adapters.SharedModels`): bf16 on a GPU, float32 on a CPU (transformers would keep a bf16
    checkpoint's dtype there: slower on most CPUs, and not what CPU training used), NF4 4-bit for
    a run trained on a 4-bit base."""
    # deferred: torch is slow to import
    import torch

    cuda = torch.cuda.is_available()
    kwargs = {"device_map": "auto"} if cuda else {}
    if load_in_4bit:
        # deferred: transformers is slow to import
        from transformers import BitsAndBytesConfig

        kwargs["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4",
            bnb_4bit_compute_dtype=torch.bfloat16 if cuda else torch.float32)
    else:
        kwargs["dtype"] = torch.bfloat16 if cuda else torch.float32
    return kwargs


def load_trainable_model(family: Family, model_args, training):
    """The base model (4-bit when the recipe says so), ready for LoRA on a quantized base."""
    # deferred: torch, PEFT and TRL are slow to import
    import torch
    from peft import prepare_model_for_kbit_training
    from trl import get_quantization_config

    quantization = get_quantization_config(model_args)
    sharded = _sharded(training)
    dtype = model_args.dtype
    model = family.auto_model().from_pretrained(
        model_args.model_name_or_path, revision=model_args.model_revision,
        dtype=getattr(torch, dtype) if dtype in ("bfloat16", "float16", "float32") else dtype,
        attn_implementation=model_args.attn_implementation, quantization_config=quantization,
        device_map=_device_map(quantization, sharded))
    if quantization is not None and not sharded:
        model = prepare_model_for_kbit_training(
            model, use_gradient_checkpointing=training.gradient_checkpointing,
            gradient_checkpointing_kwargs=training.gradient_checkpointing_kwargs)
    return model


def _sharded(training) -> bool:
    """Whether FSDP / ZeRO-3 shard the base themselves (a training's or accelerate's setting)."""
    return bool(training.fsdp or training.deepspeed) or any(
        os.environ.get(f"ACCELERATE_USE_{name}") == "true" for name in ("FSDP", "DEEPSPEED"))


def _device_map(quantization, sharded: bool) -> dict | None:
    """A 4-bit base under DDP: one full copy on each process's GPU (sharding places it itself)."""
    # deferred: torch and accelerate are slow to import
    import torch
    from accelerate import PartialState

    if quantization is None or sharded or not torch.cuda.is_available():
        return None
    return {"": PartialState().local_process_index}
