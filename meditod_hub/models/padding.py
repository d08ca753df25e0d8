"""How a training batch is padded: the tokenizer's pad token, never EOS nor the end-of-turn token
(`ensure_pad_token`), and padding-free batches where they are exact, length-grouped padded ones
everywhere else (`plan_batching`).

Apart from `train` because both are decisions about a tokenizer and a family that hold for every
run, made and checked without one (tests/test_train.py, tests/test_chat_family.py).
"""

from __future__ import annotations

import logging

import torch
from transformers.utils import is_flash_attn_2_available, is_flash_attn_3_available

from meditod_hub.errors import UsageError
from meditod_hub.models.families import Family

logger = logging.getLogger("meditod_hub.models.train")  # the training log `meditod train` shows

# Tokens a tokenizer may already hold that can serve as padding when its pad is missing or is
# EOS / end-of-turn (Llama-3 ships no pad; OpenBioLLM's pad is its EOS).
PAD_CANDIDATES = ("<|finetune_right_pad_id|>", "<|reserved_special_token_0|>", "<pad>")
ADDED_PAD = "<pad>"


def ensure_pad_token(tokenizer, family: Family) -> bool:
    """Give the tokenizer a pad token that is neither EOS nor the end-of-turn token; True when
    one had to be added (the model's embeddings are then resized: `train.run`).

    Upstream set pad = EOS and its collator masked every pad id out of the labels, so the model
    never learned to stop (docs/format.md, "Model formats"). Distinct ids keep every collator from
    confusing them. The choice, in order: a pad the tokenizer already has; a known padding token
    of the vocabulary (Llama 3's `<|finetune_right_pad_id|>`); another special token that a chat
    never renders (ChatML's `<|endoftext|>`, SmolLM2's); else a new `<pad>`.
    """
    stops = set(family.stop_token_ids(tokenizer))
    if tokenizer.pad_token_id is not None and tokenizer.pad_token_id not in stops:
        return False
    spare = spare_special_tokens(tokenizer, stops)
    known = [c for c in PAD_CANDIDATES if c in spare]
    if known or spare:
        tokenizer.pad_token = (known or spare)[0]
        return False
    tokenizer.add_special_tokens({"pad_token": ADDED_PAD})
    logger.warning("%s: no pad token distinct from EOS/end-of-turn in the vocabulary; added %s "
                   "(id %d) and resized the embeddings", tokenizer.name_or_path, ADDED_PAD,
                   tokenizer.pad_token_id)
    return True


def spare_special_tokens(tokenizer, stops: set[int]) -> list[str]:
    """Special tokens that can pad: not a stop, not BOS, and never rendered by the chat template
    (a pad id inside a real sequence would be masked out of its labels), in vocabulary order."""
    used = set(stops) | {tokenizer.bos_token_id}
    if tokenizer.chat_template:
        used |= set(tokenizer.apply_chat_template(
            [{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
             {"role": "assistant", "content": "a"}], tokenize=True, return_dict=True)["input_ids"])
    specials = {**{i: t.content for i, t in tokenizer.added_tokens_decoder.items() if t.special},
                **dict(zip(tokenizer.all_special_ids, tokenizer.all_special_tokens))}
    return [token for i, token in sorted(specials.items()) if i not in used]


def flash_varlen_available(attn_implementation: str | None) -> bool:
    return torch.cuda.is_available() and (
        (attn_implementation == "flash_attention_2" and is_flash_attn_2_available())
        or (attn_implementation == "flash_attention_3" and is_flash_attn_3_available()))


def plan_batching(family: Family, training, model_args) -> str:
    """Padding-free where it is exact, length-grouped padded batches everywhere else.

    Padding-free concatenates a batch into one row and relies on FlashAttention's varlen kernel
    plus position ids to keep examples apart. BioGPT's attention ignores position ids, so it
    would let packed examples see each other: never for BioGPT. Without CUDA FlashAttention
    (CPU, or the package missing) the request falls back to padded batches with
    `train_sampling_strategy` (group_by_length in the recipes).
    """
    if not getattr(training, "padding_free", False):
        return "padded"
    if not family.exact_padding_free:
        raise UsageError(f"padding_free is not exact for family {family.name!r}: its attention "
                         "ignores position ids, so examples in one batch would attend to each other")
    if flash_varlen_available(model_args.attn_implementation):
        training.max_length = None  # every example is already fitted; TRL refuses both together
        return "padding_free"
    logger.warning("padding_free needs CUDA FlashAttention varlen (attn_implementation=%s): "
                   "using padded batches with train_sampling_strategy=%s instead",
                   model_args.attn_implementation, training.train_sampling_strategy)
    training.padding_free = False
    model_args.attn_implementation = "sdpa"
    return "padded"
