"""`meditod fewshot --local_model`: the in-context baseline on a chat model in this process
(`meditod_hub.models.local_chat`). The shared prompt prefix's KV cache must not change a single
answer token: every answer is compared with a plain `model.generate` on the full prompt, on a
tiny random Llama (float32, CPU) whose answers differ from row to row, so a cache that lost a
row's own tokens would show."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import run_cli

from meditod_hub.commands.fewshot import main
from meditod_hub.data.dataset import load_split
from meditod_hub.data.tasks import TASKS
from meditod_hub.endpoint import Decoding, Request
from meditod_hub.evaluation.fewshot import prompts as P
from meditod_hub.models.local_chat import LocalChat, shared_prefix

ROWS, MAX_TOKENS = 4, 12


@pytest.fixture(scope="module")
def chat_model(embedded_build, tmp_path_factory, one_thread) -> Path:
    """A random 2-layer Llama with the Llama-3 chat template, its tokenizer trained on the sample
    and the few-shot system prompts (short sequences), saved to a folder. Its query and key
    weights are drawn wide so attention is sharp: each row's answer depends on the row (with the
    usual small init every row gets the same answer and equality would prove nothing)."""
    import torch

    from meditod_hub.models.tiny import corpus, llama_model, llama_tokenizer

    tokenizer = llama_tokenizer([*corpus(embedded_build),
                                 *(P.system_prompt(t) for t in ("nlu", "pol", "nlg"))])
    torch.manual_seed(0)
    model = llama_model(len(tokenizer), tokenizer)
    model.config.max_position_embeddings = 16384  # the prompts pass the tiny default's 4096
    with torch.no_grad():
        for name, weight in model.named_parameters():
            if weight.dim() == 2:
                weight.normal_(0, 0.3 if name.endswith(("q_proj.weight", "k_proj.weight")) else 0.1)
    folder = tmp_path_factory.mktemp("chat-model") / "tiny-chat"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def row_requests(data: Path, task: str) -> list[Request]:
    """The authors' messages for the first test rows, two exemplars each, different per row
    (as retrieval gives them): the rows share the system message and little else."""
    train = load_split(data, task, "train")
    return [Request(row["id"], messages=P.messages(task, row, train[i:i + 2]))
            for i, row in enumerate(load_split(data, task, "test")[:ROWS])]


def plain_generate(chat: LocalChat, requests: list[Request], max_tokens: int) -> dict[str, str]:
    """The uncached reference, written out here: one `generate` per full prompt."""
    import torch

    texts = {}
    for request in requests:
        ids = torch.tensor([chat.prompt_ids(request.messages)])
        out = chat.model.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                                  max_new_tokens=max_tokens, do_sample=False,
                                  eos_token_id=chat.stops, pad_token_id=chat.tokenizer.pad_token_id)
        texts[request.id] = chat.tokenizer.decode(out[0, ids.shape[1]:],
                                                  skip_special_tokens=True).strip()
    return texts


def test_shared_prefix_keeps_a_token_of_each_prompt_to_feed():
    assert shared_prefix([[1, 2, 3, 4], [1, 2, 3, 5], [1, 2, 9]]) == 2
    assert shared_prefix([[1, 2, 3], [1, 2, 3]]) == 2
    assert shared_prefix([[7, 1], [8, 1]]) == 0 and shared_prefix([]) == 0


def test_answers_with_the_shared_prefix_cached_are_those_of_plain_generate(chat_model,
                                                                          embedded_build):
    requests = row_requests(embedded_build, "nlu")
    cached = LocalChat.load(chat_model, cache=None)
    answers = cached.complete(requests, Decoding(max_tokens=MAX_TOKENS))
    system = len(cached.tokenizer.apply_chat_template(requests[0].messages[:1], tokenize=True,
                                                      return_dict=True)["input_ids"])
    assert cached.prefix_tokens >= system, "the whole system message comes from the cache"
    assert cached.prefix_tokens < min(a.prompt_tokens for a in answers.values())
    uncached = LocalChat(cached.model, cached.tokenizer, str(chat_model), cache=None,
                         reuse_prefix=False)
    baseline = uncached.complete(requests, Decoding(max_tokens=MAX_TOKENS))
    reference = plain_generate(cached, requests, MAX_TOKENS)
    texts = {i: a.text for i, a in answers.items()}
    assert texts == {i: a.text for i, a in baseline.items()} == reference
    assert len(set(texts.values())) > 1, "the rows' answers differ, so equality means something"
    assert all(a.completion_tokens == MAX_TOKENS or a.finish_reason == "stop"
               for a in answers.values())
    assert uncached.prefix_tokens == 0 and cached.stats.requests == ROWS


def test_constrained_answers_with_the_prefix_cached_equal_uncached_and_parse(chat_model,
                                                                            embedded_build):
    from meditod_hub.models.constrained.processor import constraint
    from meditod_hub.models.constrained.vocabulary import resolve_vocabulary

    grammar = constraint("fewshot", TASKS["pol"], resolve_vocabulary("train", str(embedded_build)))
    requests = row_requests(embedded_build, "pol")
    cached = LocalChat.load(chat_model, cache=None, constraint=grammar)
    uncached = LocalChat(cached.model, cached.tokenizer, str(chat_model), cache=None,
                         constraint=grammar, reuse_prefix=False)
    decoding = Decoding(max_tokens=48)
    answers = cached.complete(requests, decoding)
    assert {i: a.text for i, a in answers.items()} == \
        {i: a.text for i, a in uncached.complete(requests, decoding).items()}
    assert all(P.parse_answer("pol", a.text).ok for a in answers.values()), answers


@pytest.fixture
def argv(chat_model, embedded_build, tiny_retriever, tmp_path):
    def make(task: str, *extra: str) -> list[str]:
        return ["--local_model", str(chat_model), "--task", task, "--data", str(embedded_build),
                "--split", "test", "--shots", "2", "--limit", "3", "--max_tokens", "16",
                "--out", str(tmp_path / "out" / task), "--retriever", tiny_retriever,
                "--cache", str(tmp_path / "answers.sqlite"),
                "--retrieval_cache", str(tmp_path / "retrieval"), *extra]
    return make


def test_a_local_run_records_its_folder_and_reruns_from_the_answer_cache(argv, chat_model,
                                                                         tmp_path, capsys):
    out = tmp_path / "out" / "nlu"
    code, printed, _ = run_cli(main, argv("nlu"), capsys)
    assert code == 0 and "3 generated, 0 cached" in printed
    first = (out / "predictions.jsonl").read_text()
    info = json.loads((out / "fewshot_info.json").read_text())
    assert info["local_model"] == str(chat_model.resolve()) and "endpoint" not in info
    assert info["model"] == str(chat_model) and info["token_counter"] == str(chat_model)
    assert info["budget"]["context_window"] == 16384
    assert info["budget"]["window_from"] == f"reported by {chat_model}"
    assert info["shared_prefix_tokens"] > 0 and info["requests"] == 3
    assert info["dtype"] == "float32" and info["decoding"]["max_tokens"] == 16
    assert len(first.splitlines()) == 3
    code, printed, err = run_cli(main, argv("nlu"), capsys)
    assert code == 0 and "0 generated, 3 cached" in printed
    assert "3 of 3 answers from the answer cache" in err
    assert (out / "predictions.jsonl").read_text() == first
    assert json.loads((out / "fewshot_info.json").read_text())["cache_hits"] == 3


@pytest.mark.parametrize("task", ["nlu", "pol"])
def test_constrained_local_answers_always_parse(argv, task, tmp_path, capsys):
    out = tmp_path / "out" / f"{task}-constrained"
    code, _, err = run_cli(main, argv(task, "--constrained", "--max_tokens", "48", "--out", str(out)),
                           capsys)
    assert code == 0, err
    records = [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]
    assert len(records) == 3 and all(r["parse_ok"] and r["constrained"] for r in records)
    results = json.loads((out / "results.json").read_text())
    assert results["parse_failures"] == 0 and results["structure_violations"]["count"] == 0
    constraint = json.loads((out / "fewshot_info.json").read_text())["constraint"]
    assert constraint["decoder"] == "xgrammar, in this process" and constraint["grammar_sha256"]


def test_backends_are_one_or_the_other_and_a_dry_run_loads_no_weights(argv, chat_model, tmp_path,
                                                                      capsys):
    def error(args: list[str]) -> str:
        code, _, err = run_cli(main, args, capsys)
        lines = [x for x in err.splitlines() if x.startswith("error:")]
        assert code == 2 and len(lines) == 1, err
        return lines[0]

    assert "--endpoint and --local_model exclude each other" in \
        error(argv("nlu", "--endpoint", "http://127.0.0.1:9/v1"))
    assert "drop --server_kind" in error(argv("nlu", "--constrained", "--server_kind", "vllm"))
    assert "give --model" in error(["--task", "nlu"])
    assert "not a model folder" in error(argv("nlu", "--local_model", str(tmp_path)))
    (chat_model / "model.safetensors").rename(chat_model / "weights.away")
    try:
        code, printed, _ = run_cli(main, argv("nlu", "--dry_run", "--model", "tiny-chat"), capsys)
    finally:
        (chat_model / "weights.away").rename(chat_model / "model.safetensors")
    info = json.loads((tmp_path / "out" / "nlu" / "fewshot_info.json").read_text())
    assert code == 0 and "3 requests" in printed
    assert info["local_model"] == str(chat_model.resolve()) and info["model"] == "tiny-chat"
