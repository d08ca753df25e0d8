"""End to end against a real OpenAI-compatible server: `transformers serve` (transformers' own
FastAPI server) started on 127.0.0.1 with tiny local models, torn down after.

* `predict --endpoint`: greedy predictions of a served checkpoint equal the local `predict` ones
  (Llama family through chat completions, BioGPT through plain completions); encoder-decoders
  are refused with one line.
* `fewshot` NLU / POL / NLG runs write predictions, results and fewshot_info; an interrupted run
  resumes without repeating a request and a rerun sends none.
Offline (HF_HUB_OFFLINE=1), CPU, one torch thread in the server.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request

import pytest
import torch
from helpers import stop_group, train_args

from meditod_hub.commands import predict as predict_cmd
from meditod_hub.commands import train as train_cmd
from meditod_hub.commands.fewshot import main as fewshot
from meditod_hub.endpoint import AnswerCache
from meditod_hub.errors import run_main
from meditod_hub.files import RECORD

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]
START_TIMEOUT_S = 240


@pytest.fixture(scope="session")
def transformers_serve(tmp_path_factory):
    """`transformers serve` on a free 127.0.0.1 port (it loads local model folders by path)."""
    pytest.importorskip("fastapi", reason="the serving extra (transformers[serving]) is missing")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1",
           "CUDA_VISIBLE_DEVICES": "", "TRANSFORMERS_VERBOSITY": "error"}
    with log.open("wb") as sink:
        server = subprocess.Popen(
            [sys.executable, "-m", "transformers.cli.transformers", "serve", "--host", "127.0.0.1",
             "--port", str(port), "--device", "cpu"],
            stdout=sink, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if server.poll() is not None:
                pytest.fail(f"transformers serve exited ({server.returncode}): "
                            f"{log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"transformers serve did not start in {START_TIMEOUT_S} s")
                time.sleep(0.5)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        stop_group(server)


@pytest.fixture(scope="session")
def nlu_run(tiny_models, embedded_build, tmp_path_factory):
    """A tiny Llama-shaped run trained briefly on NLU (full weights; enough for greedy tests)."""

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp("served-run") / "tiny-llama-nlu"
    train_cmd.main(train_args("tiny-llama/nlu.yaml", embedded_build, tiny_models / "tiny-llama", out,
                              "--max_steps=30", "--save_strategy=no", "--logging_steps=10"))
    torch.set_num_threads(threads)
    return out


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    """Run from tmp_path: the default answer cache (.cache/...) lands there, not in the repo."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # the server runs on CPU
    return tmp_path


def lines(path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


# --- predict --endpoint ---------------------------------------------------------------------

@pytest.mark.parametrize("family,task", [("chat", "nlu"), ("biogpt", "pol")])
def test_served_greedy_predictions_equal_local_ones(transformers_serve, nlu_run, tiny_models,
                                                    embedded_build, in_tmp, family, task):
    model = nlu_run if family == "chat" else tiny_models / "tiny-biogpt"
    common = ["--model_path", str(model), "--family", family, "--task", task,
              "--data", str(embedded_build), "--split", "test", "--limit", "6",
              "--max_new_tokens", "40"]
    assert predict_cmd.main(common + ["--out", "local.jsonl"]) == 0
    assert predict_cmd.main(common + ["--out", "served.jsonl", "--endpoint", transformers_serve]) == 0
    local, served = lines(in_tmp / "local.jsonl"), lines(in_tmp / "served.jsonl")
    assert len(local) == 6 and any(r["raw"] for r in local)
    assert served == local


def test_encoder_decoders_are_refused_with_one_line(transformers_serve, tiny_models,
                                                    embedded_build, in_tmp, capsys):
    code = run_main(predict_cmd.main, ["--model_path", str(tiny_models / "tiny-t5"), "--family", "flan-t5",
                                       "--task", "nlu", "--data", str(embedded_build), "--out", "p.jsonl",
                                       "--endpoint", transformers_serve])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0 and "encoder-decoder" in err
    assert "predict it locally" in err and not (in_tmp / "p.jsonl").exists()


# --- fewshot ----------------------------------------------------------------------------------

@pytest.fixture
def fewshot_argv(transformers_serve, nlu_run, embedded_build, tiny_retriever, in_tmp):
    def make(task: str, *extra: str) -> list[str]:
        return ["--model", str(nlu_run), "--task", task, "--endpoint", transformers_serve,
                "--data", str(embedded_build), "--shots", "2", "--limit", "5",
                "--out", str(in_tmp / task), "--retriever", tiny_retriever,
                "--context_window", "16384", "--max_tokens", "24",
                "--retrieval_cache", str(in_tmp / "retrieval"), *extra]
    return make


def cached_answers() -> int:
    with sqlite3.connect(".cache/endpoint_answers.sqlite") as db:
        return db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]


def test_fewshot_nlu_interrupted_then_resumed_without_repeating_a_request(
        fewshot_argv, transformers_serve, in_tmp, monkeypatch):
    put, stored = AnswerCache.put, []

    def put_then_interrupt(self, key, answer):
        put(self, key, answer)
        stored.append(key)
        if len(stored) == 2:
            raise KeyboardInterrupt  # Ctrl-C once two answers are on disk

    monkeypatch.setattr(AnswerCache, "put", put_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        fewshot(fewshot_argv("nlu", "--concurrency", "1", "--paper_model", "llama3-8b"))
    assert cached_answers() == 2 and not (in_tmp / "nlu" / "predictions.jsonl").exists()
    monkeypatch.setattr(AnswerCache, "put", put)

    assert fewshot(fewshot_argv("nlu", "--paper_model", "llama3-8b")) == 0
    info = json.loads((in_tmp / "nlu" / "fewshot_info.json").read_text())
    assert (info["requests"], info["answers"], info["cache_hits"]) == (3, 3, 2)
    assert info["endpoint"] == transformers_serve.split("/")[2] and info["prompt_tokens"] > 0
    first = (in_tmp / "nlu" / "predictions.jsonl").read_text()

    assert fewshot(fewshot_argv("nlu", "--paper_model", "llama3-8b")) == 0
    info = json.loads((in_tmp / "nlu" / "fewshot_info.json").read_text())
    assert (info["requests"], info["cache_hits"]) == (0, 5)
    assert (in_tmp / "nlu" / "predictions.jsonl").read_text() == first
    results = json.loads((in_tmp / "nlu" / "results.json").read_text())
    assert results["examples"] == 5 and 0.0 <= results["f1"] <= 1.0
    markdown = (in_tmp / "nlu" / "results.md").read_text()
    assert "| metric | this run | paper (in-context-llama3-8b) |" in markdown
    assert "| Overall F1 |" in markdown and "| 0.5251 |" in markdown


@pytest.mark.parametrize("task", ["pol", "nlg"])
def test_fewshot_pol_and_nlg_write_every_output(fewshot_argv, in_tmp, task):
    assert fewshot(fewshot_argv(task)) == 0
    folder = in_tmp / task
    assert {p.name for p in folder.iterdir()} == {"predictions.jsonl", "results.json",
                                                  "results.md", "results.png", "fewshot_info.json",
                                                  RECORD}  # the output guard's record
    records = lines(folder / "predictions.jsonl")
    assert len(records) == 5 and all(isinstance(r["raw"], str) for r in records)
    info = json.loads((folder / "fewshot_info.json").read_text())
    assert info["requests"] == info["answers"] == 5 and info["completion_tokens"] > 0
    assert json.loads((folder / "results.json").read_text())["task"] == task


def test_an_unknown_model_name_is_one_line_listing_the_served_ones(fewshot_argv, nlu_run,
                                                                   transformers_serve, capsys):
    from meditod_hub.endpoint import Decoding, Endpoint, Request

    loaded = Endpoint(transformers_serve, str(nlu_run), cache=None)  # so the server lists it
    loaded.complete([Request("warm-up", messages=[{"role": "user", "content": "hi"}])],
                    Decoding(max_tokens=1))
    code = run_main(fewshot, fewshot_argv("nlu", "--model", "no-such-org/no-such-model",
                                          "--tokenizer", str(nlu_run), "--max_retries", "0"))
    err = [x for x in capsys.readouterr().err.splitlines() if x.startswith("error:")]
    assert code == 1 and len(err) == 1  # (the rest of stderr is model-loading progress)
    assert "answered HTTP 500" in err[0] and str(nlu_run) in err[0]
    assert "if 'no-such-org/no-such-model' is not one of them, pass a served model name" in err[0]
