"""Tiny random-weight models and offline-trained tokenizers, so every recipe path runs on a CPU.

    meditod tiny --data meditod --out build/tiny-models

Four folders, each loadable with `from_pretrained` (the `tiny-*` recipes point at them):
* `tiny-llama`  - Llama-shaped decoder, Llama-3 special tokens and chat template, pad distinct
  from the end-of-turn token;
* `tiny-biogpt` - BioGPT-shaped decoder (learned absolute positions; `</s>` opens every input
  and ends every target, as BioGPT's tokenizer does);
* `tiny-t5`     - Flan-T5-shaped encoder-decoder (gated-GELU feed-forward, untied head);
* `tiny-pptod`  - the same T5 plus the PPTOD span markers as single tokens.
Which stand-in plays which base model is the registry's (`data.base_models`).
`build_retriever` makes a fifth, a sentence-transformers retriever (a tiny BERT with a WordPiece
tokenizer, CLS pooling, normalised) standing in for `BAAI/bge-large-en-v1.5` in the few-shot
tests and benches.
Tokenizers are byte-level BPE trained with `tokenizers` on the dataset's own model inputs and
targets (every family's rendering), so no text is ever out of vocabulary and sequences stay
short. Nothing is downloaded. Sizes are ~0.5-0.9M parameters and dropout is off: a tiny model
trained on ALL its weights memorises the embedded sample in about a minute of CPU, which is what
the CPU tests and `make demo` need.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from tokenizers import (
    AddedToken,
    Tokenizer,
    decoders,
    models,
    normalizers,
    pre_tokenizers,
    processors,
    trainers,
)
from transformers import PreTrainedTokenizerFast

if TYPE_CHECKING:  # the models import torch: only once one is built (`meditod tiny -h` stays light)
    from transformers import BioGptForCausalLM, LlamaForCausalLM, T5ForConditionalGeneration

from meditod_hub.data.base_models import BASE_MODELS
from meditod_hub.data.dataset import load_split
from meditod_hub.data.tasks import TASKS, Task, spans
from meditod_hub.files import new_folder, output_folder, record_output
from meditod_hub.models.families import FAMILIES

DEFAULT_OUT = Path("build/tiny-models")  # where the tiny-* recipes look for their bases
PURPOSE = "tiny"  # the output guard's name for what this command writes (files.py)
# each stand-in's family, from the registry's models it plays (tiny-llama, tiny-biogpt, ...)
FAMILY_OF = {m.tiny: m.family for m in BASE_MODELS.values() if m.tiny}
VOCAB_SIZE = 1024
HIDDEN = dict(hidden=128, ffn=256, layers=2, heads=4)

# Meta-Llama-3-8B-Instruct's chat template (public): trims contents, ends every turn <|eot_id|>.
LLAMA3_CHAT_TEMPLATE = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}"
    "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'"
    " + message['content'] | trim + '<|eot_id|>' %}"
    "{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}"
    "{{ content }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}"
    "{% endif %}"
)
LLAMA3_SPECIALS = ("<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
                   "<|end_header_id|>", "<|eot_id|>", "<|finetune_right_pad_id|>")


def corpus(data: str | Path, split: str = "train") -> Iterator[str]:
    """Every family's source and target text for every row of every task in one split."""
    return texts_of({task: load_split(data, task.name, split) for task in TASKS.values()})


def texts_of(rows_by_task: dict[Task, Iterable[dict]]) -> Iterator[str]:
    for task, rows in rows_by_task.items():
        for row in rows:
            for family in FAMILIES.values():
                yield from family.texts(task, row)


def _byte_bpe(texts: Iterable[str], specials: Iterable[str], vocab_size: int) -> Tokenizer:
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(specials),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tokenizer.train_from_iterator(texts, trainer)
    return tokenizer


def _wrap(tokenizer: Tokenizer, template: str, **special) -> PreTrainedTokenizerFast:
    single = template.replace("$A", "$A:0")
    ids = [(tok, tokenizer.token_to_id(tok)) for tok in template.split() if tok != "$A"]
    tokenizer.post_processor = processors.TemplateProcessing(
        single=single, pair=f"{single} $B:1", special_tokens=ids)
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, **special)


def llama_tokenizer(texts: Iterable[str]) -> PreTrainedTokenizerFast:
    tok = _wrap(_byte_bpe(texts, LLAMA3_SPECIALS, VOCAB_SIZE), "<|begin_of_text|> $A",
                bos_token="<|begin_of_text|>", eos_token="<|eot_id|>",
                pad_token="<|finetune_right_pad_id|>")
    tok.chat_template = LLAMA3_CHAT_TEMPLATE
    return tok


def biogpt_tokenizer(texts: Iterable[str]) -> PreTrainedTokenizerFast:
    # BioGPT's ids: <s>=0, <pad>=1, </s>=2, <unk>=3; its tokenizer *prepends* </s>.
    return _wrap(_byte_bpe(texts, ("<s>", "<pad>", "</s>", "<unk>"), VOCAB_SIZE), "</s> $A",
                 bos_token="<s>", eos_token="</s>", pad_token="<pad>", unk_token="<unk>")


def t5_tokenizer(texts: Iterable[str], markers: Iterable[str] = ()) -> PreTrainedTokenizerFast:
    # T5's ids: <pad>=0 (also the decoder start), </s>=1, <unk>=2; inputs end with </s>.
    tok = _wrap(_byte_bpe(texts, ("<pad>", "</s>", "<unk>"), VOCAB_SIZE), "$A </s>",
                eos_token="</s>", pad_token="<pad>", unk_token="<unk>")
    # Markers are whole tokens but not "special": decoding with skip_special_tokens keeps them.
    tok.add_tokens([AddedToken(m, special=False, normalized=False) for m in markers])
    return tok


def llama_model(vocab_size: int, tok: PreTrainedTokenizerFast) -> LlamaForCausalLM:
    # deferred: transformers' model classes import torch (slow); `meditod tiny -h` stays light
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=vocab_size, hidden_size=HIDDEN["hidden"],
                         intermediate_size=HIDDEN["ffn"], num_hidden_layers=HIDDEN["layers"],
                         num_attention_heads=HIDDEN["heads"], num_key_value_heads=2,
                         max_position_embeddings=4096, rope_theta=500000.0,
                         tie_word_embeddings=False, bos_token_id=tok.bos_token_id,
                         eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    return LlamaForCausalLM(config)


def biogpt_model(vocab_size: int, tok: PreTrainedTokenizerFast) -> BioGptForCausalLM:
    # deferred: transformers' model classes import torch (slow); `meditod tiny -h` stays light
    from transformers import BioGptConfig, BioGptForCausalLM

    config = BioGptConfig(vocab_size=vocab_size, hidden_size=HIDDEN["hidden"],
                          intermediate_size=HIDDEN["ffn"], num_hidden_layers=HIDDEN["layers"],
                          num_attention_heads=HIDDEN["heads"], max_position_embeddings=2048,
                          hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                          bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                          pad_token_id=tok.pad_token_id)
    return BioGptForCausalLM(config)


def t5_model(vocab_size: int, tok: PreTrainedTokenizerFast) -> T5ForConditionalGeneration:
    # deferred: torch is slow to import, and transformers' model classes import it
    import torch
    from transformers import T5Config, T5ForConditionalGeneration

    config = T5Config(vocab_size=vocab_size, d_model=HIDDEN["hidden"], d_kv=32,
                      d_ff=HIDDEN["ffn"], num_layers=HIDDEN["layers"],
                      num_heads=HIDDEN["heads"], feed_forward_proj="gated-gelu", dropout_rate=0.0,
                      tie_word_embeddings=False, pad_token_id=tok.pad_token_id,
                      eos_token_id=tok.eos_token_id, decoder_start_token_id=tok.pad_token_id)
    model = T5ForConditionalGeneration(config)
    # T5 initialises an untied head with std 1, i.e. logits of std ~sqrt(d_model): a random
    # model starts at loss ~16 and trains slowly. Scale it like a tied head (d_model ** -0.5).
    torch.nn.init.normal_(model.lm_head.weight, std=config.d_model ** -0.5)
    return model


def model_folder(out: str | Path, name: str) -> Path:
    """`out/name`, checked by the output guard: new, empty, or an earlier `meditod tiny`'s (the
    command owns it whole and replaces it, so it never replaces a folder it did not write)."""
    return output_folder(Path(out) / name, purpose=PURPOSE)


def is_built(path: Path) -> bool:
    """Whether `path` is a finished tiny base: `tiny.json` is written last and renamed in with
    the rest, while a build that failed early leaves its folder holding only the output guard's
    record (which a later use must build over, not take for a model)."""
    return (path / "tiny.json").is_file()


def build(name: str, texts: list[str], out: Path, seed: int = 0) -> Path:
    """Train the tokenizer, initialise the model with `seed`, save both under `out/name`."""
    # deferred: torch is slow to import
    import torch

    path = model_folder(out, name)
    tokenizer, make_model = {
        "tiny-llama": (llama_tokenizer, llama_model),
        "tiny-biogpt": (biogpt_tokenizer, biogpt_model),
        "tiny-t5": (t5_tokenizer, t5_model),
        "tiny-pptod": (lambda t: t5_tokenizer(t, spans.MARKERS), t5_model),
    }[name]
    tok = tokenizer(texts)
    torch.manual_seed(seed)
    model = make_model(len(tok), tok)
    # Saved beside `path`, then renamed: a half-written base is never taken for a finished one.
    with new_folder(path, prefix=f".{name}.") as partial:
        model.save_pretrained(partial)
        tok.save_pretrained(partial)
        params = sum(p.numel() for p in model.parameters())
        (partial / "tiny.json").write_text(json.dumps({"family": FAMILY_OF[name], "seed": seed,
                                                       "parameters": params}) + "\n")
        record_output(partial, PURPOSE)  # renamed with it
    return path


def build_retriever(texts: Iterable[str], out: Path, seed: int = 0) -> Path:
    """A tiny BERT sentence embedder (CLS pooling + Normalize, like bge) saved under `out`."""
    # deferred: torch is slow to import; sentence_transformers is an optional extra (meditod-hub[judge])
    import torch
    from sentence_transformers import SentenceTransformer
    try:
        from sentence_transformers.sentence_transformer import modules as st_models  # >= 6
    except ImportError:
        # deferred: sentence_transformers is an optional extra (meditod-hub[judge])
        from sentence_transformers import models as st_models
    # deferred: transformers' model classes import torch (slow)
    from transformers import BertConfig, BertModel, BertTokenizerFast

    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokenizer.train_from_iterator(texts, trainers.WordPieceTrainer(
        vocab_size=VOCAB_SIZE, special_tokens=specials, show_progress=False))
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[(t, tokenizer.token_to_id(t)) for t in ("[CLS]", "[SEP]")])
    tokenizer.decoder = decoders.WordPiece()
    bert = out / "bert"
    BertTokenizerFast(tokenizer_object=tokenizer, model_max_length=512).save_pretrained(bert)
    torch.manual_seed(seed)
    # BERT's usual init (std 0.02) gives a random model whose CLS vectors all point the same way
    # (cosine ~1.000); std 0.5 lets the tokens move it, so similar turns rank first.
    BertModel(BertConfig(vocab_size=tokenizer.get_vocab_size(), hidden_size=HIDDEN["hidden"],
                         intermediate_size=HIDDEN["ffn"], num_hidden_layers=HIDDEN["layers"],
                         num_attention_heads=HIDDEN["heads"], max_position_embeddings=512,
                         hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                         initializer_range=0.5)).save_pretrained(bert)
    transformer = st_models.Transformer(str(bert))
    pooling = st_models.Pooling(HIDDEN["hidden"], "cls")
    embedder = SentenceTransformer(modules=[transformer, pooling, st_models.Normalize()],
                                   device="cpu")
    path = out / "tiny-retriever"
    embedder.save(str(path))
    return path


def build_all(data: str | Path, out: str | Path, names: Iterable[str] = FAMILY_OF) -> dict:
    names = list(names)
    for name in names:  # every folder checked before any work
        model_folder(out, name)
    texts = list(corpus(data))
    return {name: build(name, texts, Path(out)) for name in names}
