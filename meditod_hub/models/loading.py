"""A model in this process, for inference: a model folder or an adapter (with the base its adapter
config names) becomes a model and its tokenizer, with the one set of `from_pretrained` settings
every inference load uses (a predictor's, a shared base's in `adapters`, the local chat model's).
"""

from __future__ import annotations

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
