"""`meditod fewshot` against the fault-injecting stub (tests/chat_server.py): dry runs, the token
budget, the output files, one-line errors for bad input, and the paper's in-context rows.
The end-to-end runs against a real `transformers serve` are in tests/test_served.py."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import pytest
from chat_server import ChatServer
from datasets import load_dataset
from helpers import run_cli

from meditod_hub.commands.fewshot import main
from meditod_hub.data.tasks import TASKS
from meditod_hub.evaluation.fewshot import prompts as P
from meditod_hub.evaluation.fewshot.run import TokenCounter


@pytest.fixture
def argv(embedded_build, tiny_models, tiny_retriever, tmp_path):
    """Arguments of a small run: 4 rows, 2 shots, the tiny llama's tokenizer counts tokens."""
    def make(task: str, endpoint: str, *extra: str) -> list[str]:
        return ["--model", "stub-model", "--task", task, "--endpoint", endpoint,
                "--data", str(embedded_build), "--split", "test", "--shots", "2", "--limit", "4",
                "--out", str(tmp_path / "out" / task), "--retriever", tiny_retriever,
                "--tokenizer", str(tiny_models / "tiny-llama"), "--context_window", "16384",
                "--max_tokens", "16", "--cache", str(tmp_path / "answers.sqlite"),
                "--retrieval_cache", str(tmp_path / "retrieval"), "--max_retries", "0", *extra]
    return make


def test_dry_run_writes_every_request_and_the_cost_and_sends_nothing(argv, embedded_build,
                                                                     tmp_path, capsys):
    with ChatServer() as server:
        code, out, _ = run_cli(main, argv("pol", server.url, "--dry_run", "--input_price", "1.5",
                                    "--output_price", "2"), capsys)
        assert code == 0 and server.received == []
    lines = [json.loads(x) for x in (tmp_path / "out" / "pol" / "requests.jsonl").read_text().splitlines()]
    test_rows = load_dataset(str(embedded_build), "pol", split="test")
    assert [r["id"] for r in lines] == test_rows["id"][:4]
    assert all(r["messages"][0]["content"] == P.system_prompt("pol") for r in lines)
    assert all(len(r["messages"]) == 1 + 2 * 2 + 1 for r in lines)
    total = sum(r["prompt_tokens"] for r in lines)
    cost = (total * 1.5 + 4 * 16 * 2) / 1e6
    assert f"4 requests, {total} prompt tokens (+ at most 64 answer tokens); estimated cost <= " \
           f"${cost:.2f}" in out
    info = json.loads((tmp_path / "out" / "pol" / "fewshot_info.json").read_text())
    assert info["dry_run"] and info["estimated_prompt_tokens"] == total
    assert not (tmp_path / "out" / "pol" / "predictions.jsonl").exists()


def test_exemplars_are_dropped_least_similar_first_to_fit_the_window_and_counted(
        argv, tiny_models, tmp_path, capsys):
    count = TokenCounter.for_model(str(tiny_models / "tiny-llama"))
    full = argv("nlu", "http://127.0.0.1:9/v1", "--dry_run", "--shots", "3")
    run_cli(main, full, capsys)
    wide = [json.loads(x) for x in (tmp_path / "out" / "nlu" / "requests.jsonl").read_text().splitlines()]
    one_shot = max(count(r["messages"][:1] + r["messages"][1:3] + r["messages"][-1:]) for r in wide)
    window = one_shot + 16
    narrow = full[:full.index("--context_window")] + ["--context_window", str(window)] + \
        full[full.index("--context_window") + 2:] + ["--out", str(tmp_path / "narrow")]
    assert run_cli(main, narrow, capsys)[0] == 0
    fitted = [json.loads(x) for x in (tmp_path / "narrow" / "requests.jsonl").read_text().splitlines()]
    info = json.loads((tmp_path / "narrow" / "fewshot_info.json").read_text())
    dropped = 0
    for before, after in zip(wide, fitted):
        assert after["prompt_tokens"] + 16 <= window
        shots = (len(after["messages"]) - 2) // 2
        assert 1 <= shots and after["messages"][:1 + 2 * shots] == before["messages"][:1 + 2 * shots]
        dropped += 3 - shots
    assert dropped > 0 and info["budget"]["exemplars_dropped"] == dropped


def test_a_run_writes_predictions_results_and_its_info_then_reruns_from_the_cache(
        argv, tmp_path, capsys):
    out = tmp_path / "out" / "nlg"
    with ChatServer() as server:
        code, printed, _ = run_cli(main, argv("nlg", server.url, "--paper_model", "gpt-4-turbo"), capsys)
        assert code == 0 and len(server.received) == 4
        sent = server.received[0]
        assert (sent["temperature"], sent["max_tokens"]) == (0.0, 16)
        first = (out / "predictions.jsonl").read_text()
        assert run_cli(main, argv("nlg", server.url, "--paper_model", "gpt-4-turbo"), capsys)[0] == 0
        assert len(server.received) == 4, "the rerun sent nothing"
    assert (out / "predictions.jsonl").read_text() == first
    records = [json.loads(x) for x in first.splitlines()]
    assert all(set(r) == {"id", "prediction", "raw", "parse_ok", "constrained"}
               and r["raw"].startswith("echo ") for r in records)
    info = json.loads((out / "fewshot_info.json").read_text())
    assert info["endpoint"] == server.url.split("/")[2] and info["requests"] == 0
    assert info["cache_hits"] == 4 and info["shots"] == 2 and info["paper_row"] == "in-context-gpt-4-turbo"
    assert re.fullmatch(r"[0-9a-f]{64}", info["system_prompt_sha256"])
    assert info["retriever"]["pooling"] == "cls" and "EMPTY" not in json.dumps(info)
    results = json.loads((out / "results.json").read_text())
    assert results["examples"] == 4 and (out / "results.png").is_file()
    markdown = (out / "results.md").read_text()
    assert "| BLEU-4 (NLTK, x100) |" in markdown and "| 8.10 |" in markdown  # the paper's 8.1
    assert "of the answers break the CMAS structure" in markdown


def test_unparsable_answers_are_counted_as_structure_violations(argv, tmp_path, capsys):
    with ChatServer() as server:
        assert run_cli(main, argv("pol", server.url), capsys)[0] == 0
    results = json.loads((tmp_path / "out" / "pol" / "results.json").read_text())
    assert results["parse_failures"] == 4  # the stub's echoes are not JSON
    assert results["structure_violations"] == {"count": 4, "share": 1.0}
    assert "100.00% of the answers break the CMAS structure" in \
        (tmp_path / "out" / "pol" / "results.md").read_text()


def test_constrained_is_its_own_setting_and_the_server_receives_the_grammar(argv, embedded_build,
                                                                           tmp_path, capsys):
    from meditod_hub.models.constrained import grammars
    from meditod_hub.models.constrained.vocabulary import resolve_vocabulary

    out = tmp_path / "out" / "nlu-constrained"
    with ChatServer() as server:
        assert run_cli(main, argv("nlu", server.url), capsys)[0] == 0
        free = list(server.received)
        assert run_cli(main, argv("nlu", server.url, "--constrained", "--server_kind", "vllm",
                            "--out", str(out)), capsys)[0] == 0
        held = server.received[len(free):]
        code, _, err = run_cli(main, argv("nlu", server.url, "--out", str(out)), capsys)
    assert len(held) == 4, "constrained answers are asked for, not taken from the free ones' cache"
    grammar = grammars.grammar("fewshot", TASKS["nlu"], resolve_vocabulary("train", str(embedded_build)))
    assert all(body["structured_outputs"] == {"grammar": grammar} for body in held)
    assert not any("structured_outputs" in body for body in free)
    free_results = json.loads((tmp_path / "out" / "nlu" / "results.json").read_text())
    results = json.loads((out / "results.json").read_text())
    assert results["constrained"] is True and free_results["constrained"] is False
    assert "free decoding" in (tmp_path / "out" / "nlu" / "results.md").read_text()
    assert "constrained to the CMAS grammar" in (out / "results.md").read_text()
    info = json.loads((out / "fewshot_info.json").read_text())
    assert info["constrained"] and info["constraint"]["server_kind"] == "vllm"
    assert grammar not in json.dumps(info), "run_info holds a hash of the grammar, not the grammar"
    assert code == 2 and "holds another few-shot run" in _one_line_error(code, err)
    line = _one_line_error(*run_cli(main, argv("pol", "http://127.0.0.1:9/v1", "--constrained"),
                                    capsys)[::2])
    assert "needs --server_kind" in line


def _one_line_error(code: int, err: str) -> str:
    lines = [x for x in err.splitlines() if x.startswith("error:")]
    assert code in (1, 2) and len(lines) == 1, err
    return lines[0]


def test_bad_input_is_one_line_that_says_what_to_do(argv, tmp_path, capsys, monkeypatch):
    with ChatServer(faults=["401"]) as server:
        monkeypatch.setenv("MY_SERVER_KEY", "sk-wrong-key-000")
        line = _one_line_error(*run_cli(main, argv("nlu", server.url, "--api_key_env", "MY_SERVER_KEY"),
                                        capsys)[::2])
        assert "refused the API key (HTTP 401): set MY_SERVER_KEY" in line
        assert "sk-wrong-key-000" not in line
        line = _one_line_error(*run_cli(main, argv("nlu", server.url, "--model", "gpt-9") , capsys)[::2])
        assert "does not serve model 'gpt-9'" in line and "it serves: stub-model" in line
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    line = _one_line_error(*run_cli(main, argv("nlu", dead, "--out", str(tmp_path / "d" / "e")),
                                    capsys)[::2])
    assert "cannot reach 127.0.0.1" in line and "start the server" in line
    assert not (tmp_path / "d").exists(), "a failed run leaves no empty folders"
    code, _, err = run_cli(main, argv("nlu", dead, "--context_window", "300", "--out",
                                str(tmp_path / "w")), capsys)
    line = _one_line_error(code, err)
    assert code == 2 and "context window of 300 tokens (--context_window) is smaller than one " \
        "exemplar" in line
    assert "raise --context_window" in line
    code, _, err = run_cli(main, argv("nlu", dead, "--tokenizer", str(tmp_path / "nothing"),
                                "--out", str(tmp_path / "t")), capsys)
    assert "pass --tokenizer" in _one_line_error(code, err)


def test_more_shots_than_the_train_split_holds_are_refused(argv, embedded_build, tmp_path,
                                                            capsys):
    """(before: `--shots 1000` was recorded as given, and fewer were sent)"""
    train = len(load_dataset(str(embedded_build), "nlu", split="train"))
    code, _, err = run_cli(main, argv("nlu", "http://127.0.0.1:9/v1", "--dry_run", "--shots", "1000"),
                           capsys)
    assert code == 2 and _one_line_error(code, err) == (
        f"error: --shots 1000: the train split of {embedded_build} has {train} nlu rows to "
        f"retrieve exemplars from: give at most --shots {train}")
    assert not (tmp_path / "out").exists()


def test_out_never_takes_over_another_runs_folder(argv, tmp_path, capsys):
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    code, _, err = run_cli(main, argv("nlu", "http://127.0.0.1:9/v1", "--dry_run", "--out", str(other)),
                           capsys)
    assert "not empty and holds no few-shot run" in _one_line_error(code, err)
    assert (other / "notes.txt").read_text() == "mine" and len(list(other.iterdir())) == 1


def test_a_model_without_a_tokenizer_is_sent_unchanged_and_priced_by_an_estimate(
        argv, tmp_path, capsys):
    args = argv("nlg", "http://127.0.0.1:9/v1", "--dry_run")
    args = without(without(args, "--tokenizer"), "--context_window")
    args += ["--model", str(tmp_path / "no-tokenizer-here")]
    code, out, err = run_cli(main, args, capsys)
    assert code == 0 and " prompt tokens (estimated) " in out
    lines = [json.loads(x) for x in (tmp_path / "out" / "nlg" / "requests.jsonl").read_text().splitlines()]
    assert all(len(r["messages"]) == 1 + 2 * 2 + 1 and r["prompt_tokens"] is None for r in lines)
    info = json.loads((tmp_path / "out" / "nlg" / "fewshot_info.json").read_text())
    assert info["token_counter"].startswith("none") and info["budget"]["context_window"] is None
    code, _, err = run_cli(main, args + ["--context_window", "4096", "--out", str(tmp_path / "w")],
                           capsys)
    assert "needs a tokenizer to count prompt tokens" in _one_line_error(code, err)


# --- issue 15 and 17: fidelity, keys, answers and OUT ------------------------------------------

def without(args: list[str], flag: str) -> list[str]:
    at = args.index(flag)
    return args[:at] + args[at + 2:]


def test_the_authors_prompts_go_unchanged_unless_a_window_is_known(argv, tmp_path, capsys):
    """No window known (the tiny tokenizer states none, the stub reports none): every prompt
    keeps its exemplars; a window the server reports trims, and the run says what it trimmed."""
    with ChatServer() as server:
        args = without(argv("nlu", server.url, "--shots", "3"), "--context_window")
        assert run_cli(main, args, capsys)[0] == 0
        wide = server.received[:]
    assert all(len(body["messages"]) == 1 + 2 * 3 + 1 for body in wide)
    info = json.loads((tmp_path / "out" / "nlu" / "fewshot_info.json").read_text())
    assert info["budget"]["context_window"] is None and info["budget"]["exemplars_dropped"] == 0
    count = TokenCounter.for_model(argv("nlu", "x")[argv("nlu", "x").index("--tokenizer") + 1])
    one_shot = max(count(b["messages"][:3] + b["messages"][-1:]) for b in wide)
    with ChatServer(max_model_len=one_shot + 16) as small:
        args = without(argv("nlu", small.url, "--shots", "3", "--out", str(tmp_path / "small")),
                       "--context_window")
        code, _, err = run_cli(main, args, capsys)
        assert code == 0
        sent = small.received[:]
    info = json.loads((tmp_path / "small" / "fewshot_info.json").read_text())
    budget = info["budget"]
    assert budget["context_window"] == one_shot + 16
    assert budget["window_from"] == f"reported by {small.url.split('/')[2]}"
    dropped = sum(3 - (len(b["messages"]) - 2) // 2 for b in sent)
    assert dropped > 0 and budget["exemplars_dropped"] == dropped
    assert sum(budget["trimmed"].values()) == dropped
    assert f"{budget['rows_with_fewer_exemplars']} of 4 prompts left out {dropped} exemplar(s) " \
           f"to fit the {one_shot + 16}-token window (reported by" in err


def test_llama3_models_are_counted_with_the_packaged_llama3_tokenizer(argv, tmp_path, capsys):
    from meditod_hub.models.llama3 import NAME, llama3_tokenizer

    args = without(without(argv("nlu", "http://127.0.0.1:9/v1", "--dry_run"), "--tokenizer"),
                   "--context_window")
    args += ["--model", "aaditya/Llama3-OpenBioLLM-8B"]
    assert run_cli(main, args, capsys)[0] == 0
    info = json.loads((tmp_path / "out" / "nlu" / "fewshot_info.json").read_text())
    assert info["token_counter"] == NAME and info["budget"]["context_window"] is None
    first = json.loads((tmp_path / "out" / "nlu" / "requests.jsonl").read_text().splitlines()[0])
    ids = llama3_tokenizer().apply_chat_template(first["messages"], add_generation_prompt=True,
                                                 tokenize=True, return_dict=True)["input_ids"]
    assert first["prompt_tokens"] == len(ids) and ids[0] == 128000  # <|begin_of_text|>


def test_no_key_of_the_environment_goes_to_a_local_server_nor_into_the_run_record(
        argv, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-secret")
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    with ChatServer() as server:
        assert run_cli(main, argv("nlg", server.url), capsys)[0] == 0
    sent = {{k.lower(): v for k, v in h.items()}["authorization"] for h in server.headers}
    assert sent == {"Bearer EMPTY"}
    info = json.loads((tmp_path / "out" / "nlg" / "fewshot_info.json").read_text())
    assert info["key_variable"] is None


def test_the_run_record_names_the_endpoint_whose_answers_it_holds(argv, tmp_path, capsys):
    with ChatServer(reply="A") as a, ChatServer(reply="B") as b:
        assert run_cli(main, argv("nlg", a.url), capsys)[0] == 0
        assert run_cli(main, argv("nlg", b.url), capsys)[0] == 0
        assert len(b.received) == 4, "B was asked, not answered from A's cache"
        code, _, err = run_cli(main, argv("nlg", b.url), capsys)
        assert code == 0
    out = tmp_path / "out" / "nlg"
    info = json.loads((out / "fewshot_info.json").read_text())
    assert info["endpoint_url"] == b.url and info["cache_hits"] == 4
    assert "4 of 4 answers from the answer cache" in err and b.url.split("/")[2] in err
    raws = [json.loads(x)["raw"] for x in (out / "predictions.jsonl").read_text().splitlines()]
    assert raws and all(r.startswith("B ") for r in raws)


def test_a_dry_runs_requests_never_sit_beside_real_results(argv, tmp_path, capsys):
    out = tmp_path / "out" / "pol"
    with ChatServer() as server:
        assert run_cli(main, argv("pol", server.url, "--dry_run"), capsys)[0] == 0
        assert (out / "requests.jsonl").is_file()
        assert run_cli(main, argv("pol", server.url), capsys)[0] == 0
        assert not (out / "requests.jsonl").exists() and (out / "predictions.jsonl").is_file()
        code, _, err = run_cli(main, argv("pol", server.url, "--dry_run"), capsys)
    assert "holds this run's results: dry-run into another --out" in _one_line_error(code, err)
    assert not (out / "requests.jsonl").exists()
    assert "dry_run" not in json.loads((out / "fewshot_info.json").read_text())


def test_the_default_out_of_a_served_folder_is_its_last_two_names(tmp_path, monkeypatch):
    from meditod_hub.evaluation.fewshot.run import FewshotArguments

    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs" / "tiny-llama" / "nlu").mkdir(parents=True)
    for model, out in (("runs/tiny-llama/nlu", "runs/fewshot/tiny-llama-nlu/pol"),
                       (str(tmp_path / "runs" / "tiny-llama" / "nlu"),
                        "runs/fewshot/tiny-llama-nlu/pol"),
                       ("meta-llama/Meta-Llama-3-8B-Instruct",
                        "runs/fewshot/meta-llama/Meta-Llama-3-8B-Instruct/pol"),
                       ("gpt-4-turbo-2024-04-09", "runs/fewshot/gpt-4-turbo-2024-04-09/pol")):
        assert FewshotArguments(model=model, task="pol").out_dir() == Path(out)


def test_a_retriever_that_is_not_on_this_machine_fails_at_once_naming_the_local_one():
    from meditod_hub.data.metrics.judges import bundled_minilm_path
    from meditod_hub.errors import MeditodError
    from meditod_hub.evaluation.fewshot.retrieval import Retriever

    with pytest.raises(MeditodError) as failure:
        Retriever("meditod-tests/a-retriever-nobody-has")
    message = str(failure.value)
    assert "meditod-tests/a-retriever-nobody-has is not on this machine (runs download nothing)" \
        in message and "hf download meditod-tests/a-retriever-nobody-has" in message
    assert f"--retriever {bundled_minilm_path()}" in message


@pytest.mark.parametrize("content", [b"{truncated", b"\xff\xfe garbage", b"[1, 2]"])
def test_an_unreadable_run_record_in_out_is_one_line(argv, tmp_path, capsys, content):
    out = tmp_path / "out" / "nlu"
    out.mkdir(parents=True)
    (out / "fewshot_info.json").write_bytes(content)
    code, _, err = run_cli(main, argv("nlu", "http://127.0.0.1:9/v1", "--dry_run"), capsys)
    line = _one_line_error(code, err)
    assert "fewshot_info.json" in line and "choose another" in line
    assert (out / "fewshot_info.json").read_bytes() == content
