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

from meditod_hub import paper_results
from meditod_hub.errors import run_main
from meditod_hub.fewshot import prompts as P
from meditod_hub.fewshot.run import TokenCounter, main

PAPER_TEX = Path(__file__).resolve().parent.parent.parent / "shared" / "paper" / \
    "meditod-arxiv-2410.14204.tex"


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


def run_cli(args: list[str], capsys) -> tuple[int, str, str]:
    code = run_main(main, args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_dry_run_writes_every_request_and_the_cost_and_sends_nothing(argv, embedded_build,
                                                                     tmp_path, capsys):
    with ChatServer() as server:
        code, out, _ = run_cli(argv("pol", server.url, "--dry_run", "--input_price", "1.5",
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
    info = json.loads((tmp_path / "out" / "pol" / "run_info.json").read_text())
    assert info["dry_run"] and info["estimated_prompt_tokens"] == total
    assert not (tmp_path / "out" / "pol" / "predictions.jsonl").exists()


def test_exemplars_are_dropped_least_similar_first_to_fit_the_window_and_counted(
        argv, tiny_models, tmp_path, capsys):
    count = TokenCounter(str(tiny_models / "tiny-llama"))
    full = argv("nlu", "http://127.0.0.1:9/v1", "--dry_run", "--shots", "3")
    run_cli(full, capsys)
    wide = [json.loads(x) for x in (tmp_path / "out" / "nlu" / "requests.jsonl").read_text().splitlines()]
    one_shot = max(count(r["messages"][:1] + r["messages"][1:3] + r["messages"][-1:]) for r in wide)
    window = one_shot + 16
    narrow = full[:full.index("--context_window")] + ["--context_window", str(window)] + \
        full[full.index("--context_window") + 2:] + ["--out", str(tmp_path / "narrow")]
    assert run_cli(narrow, capsys)[0] == 0
    fitted = [json.loads(x) for x in (tmp_path / "narrow" / "requests.jsonl").read_text().splitlines()]
    info = json.loads((tmp_path / "narrow" / "run_info.json").read_text())
    dropped = 0
    for before, after in zip(wide, fitted):
        assert after["prompt_tokens"] + 16 <= window
        shots = (len(after["messages"]) - 2) // 2
        assert 1 <= shots and after["messages"][:1 + 2 * shots] == before["messages"][:1 + 2 * shots]
        dropped += 3 - shots
    assert dropped > 0 and info["budget"]["exemplars_dropped"] == dropped


def test_a_run_writes_predictions_results_and_run_info_then_reruns_from_the_cache(
        argv, tmp_path, capsys):
    out = tmp_path / "out" / "nlg"
    with ChatServer() as server:
        code, printed, _ = run_cli(argv("nlg", server.url, "--paper_model", "gpt-4-turbo"), capsys)
        assert code == 0 and len(server.received) == 4
        sent = server.received[0]
        assert (sent["temperature"], sent["max_tokens"]) == (0.0, 16)
        first = (out / "predictions.jsonl").read_text()
        assert run_cli(argv("nlg", server.url, "--paper_model", "gpt-4-turbo"), capsys)[0] == 0
        assert len(server.received) == 4, "the rerun sent nothing"
    assert (out / "predictions.jsonl").read_text() == first
    records = [json.loads(x) for x in first.splitlines()]
    assert all(set(r) == {"id", "prediction", "raw", "parse_ok", "constrained"}
               and r["raw"].startswith("echo ") for r in records)
    info = json.loads((out / "run_info.json").read_text())
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
        assert run_cli(argv("pol", server.url), capsys)[0] == 0
    results = json.loads((tmp_path / "out" / "pol" / "results.json").read_text())
    assert results["parse_failures"] == 4  # the stub's echoes are not JSON
    assert results["structure_violations"] == {"count": 4, "share": 1.0}
    assert "100.00% of the answers break the CMAS structure" in \
        (tmp_path / "out" / "pol" / "results.md").read_text()


def test_constrained_is_its_own_setting_and_the_server_receives_the_grammar(argv, embedded_build,
                                                                           tmp_path, capsys):
    from meditod_hub import constrained as C

    out = tmp_path / "out" / "nlu-constrained"
    with ChatServer() as server:
        assert run_cli(argv("nlu", server.url), capsys)[0] == 0
        free = list(server.received)
        assert run_cli(argv("nlu", server.url, "--constrained", "--server_kind", "vllm",
                            "--out", str(out)), capsys)[0] == 0
        held = server.received[len(free):]
        code, _, err = run_cli(argv("nlu", server.url, "--out", str(out)), capsys)
    assert len(held) == 4, "constrained answers are asked for, not taken from the free ones' cache"
    grammar = C.grammar("fewshot", "nlu", C.resolve_vocabulary("train", str(embedded_build)))
    assert all(body["structured_outputs"] == {"grammar": grammar} for body in held)
    assert not any("structured_outputs" in body for body in free)
    free_results = json.loads((tmp_path / "out" / "nlu" / "results.json").read_text())
    results = json.loads((out / "results.json").read_text())
    assert results["constrained"] is True and free_results["constrained"] is False
    assert "free decoding" in (tmp_path / "out" / "nlu" / "results.md").read_text()
    assert "constrained to the CMAS grammar" in (out / "results.md").read_text()
    info = json.loads((out / "run_info.json").read_text())
    assert info["constrained"] and info["constraint"]["server_kind"] == "vllm"
    assert grammar not in json.dumps(info), "run_info holds a hash of the grammar, not the grammar"
    assert code == 2 and "holds another few-shot run" in _one_line_error(code, err)
    line = _one_line_error(*run_cli(argv("pol", "http://127.0.0.1:9/v1", "--constrained"),
                                    capsys)[::2])
    assert "needs --server_kind" in line


def _one_line_error(code: int, err: str) -> str:
    lines = [x for x in err.splitlines() if x.startswith("error:")]
    assert code in (1, 2) and len(lines) == 1, err
    return lines[0]


def test_bad_input_is_one_line_that_says_what_to_do(argv, tmp_path, capsys, monkeypatch):
    with ChatServer(faults=["401"]) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-key-000")
        line = _one_line_error(*run_cli(argv("nlu", server.url), capsys)[::2])
        assert "refused the API key (HTTP 401): set OPENAI_API_KEY" in line
        assert "sk-wrong-key-000" not in line
        line = _one_line_error(*run_cli(argv("nlu", server.url, "--model", "gpt-9") , capsys)[::2])
        assert "does not serve model 'gpt-9'" in line and "it serves: stub-model" in line
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    line = _one_line_error(*run_cli(argv("nlu", dead, "--out", str(tmp_path / "d")), capsys)[::2])
    assert "cannot reach 127.0.0.1" in line and "start the server" in line
    code, _, err = run_cli(argv("nlu", dead, "--context_window", "300", "--out",
                                str(tmp_path / "w")), capsys)
    line = _one_line_error(code, err)
    assert code == 2 and "context window of 300 tokens is smaller than one exemplar" in line
    assert "raise --context_window" in line
    code, _, err = run_cli(argv("nlu", dead, "--tokenizer", str(tmp_path / "nothing"),
                                "--out", str(tmp_path / "t")), capsys)
    assert "pass --tokenizer" in _one_line_error(code, err)


def test_out_never_takes_over_another_runs_folder(argv, tmp_path, capsys):
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    code, _, err = run_cli(argv("nlu", "http://127.0.0.1:9/v1", "--dry_run", "--out", str(other)),
                           capsys)
    assert "not empty and holds no few-shot run" in _one_line_error(code, err)
    assert (other / "notes.txt").read_text() == "mine" and len(list(other.iterdir())) == 1


# --- the paper's in-context rows ----------------------------------------------------------------

TEX_MODELS = {"OpenBioLLM 8B": "openbiollm-8b", "OpenBioLLM 70B": "openbiollm-70b",
              "Llama3 8B": "llama3-8b", "Llama3 70B": "llama3-70b", "ChatGPT": "chatgpt",
              "GPT-4": "gpt-4", "GPT-4-Turbo": "gpt-4-turbo"}
F1_KEYS = ("f1", "medical.f1", "non_medical.f1")
NLG_KEYS = ("bleu2", "bleu4", "rouge1", "rougeL", "bertscore.f1")
TEX_PAK = tuple(f"precision_at_k.{k}" for k in ("1", "4", "8", "inf"))
TEX_TABLES = {  # LaTeX label -> (task, split, results.json keys of its numeric columns)
    "tab:nlu_results": ("nlu", "test", F1_KEYS), "tab:pol_results": ("pol", "test", F1_KEYS),
    "tab:pol_results2": ("pol", "test", TEX_PAK),
    "tab:nlg_results": ("nlg", "test", NLG_KEYS), "tab:ood_nlu": ("nlu", "test_ood", F1_KEYS),
    "tab:ood_pol": ("pol", "test_ood", F1_KEYS), "tab:ood_nlg": ("nlg", "test_ood", NLG_KEYS),
    # appendix: P / R / F1 overall, medical, non-medical (+ P@K); the kit keeps overall P and R
    "tab:nlu_results_ext": ("nlu", "test", ("precision", "recall", "f1", None, None, "medical.f1",
                                            None, None, "non_medical.f1")),
    "tab:pol_results_ext": ("pol", "test", (None, None, "f1", None, None, "medical.f1", None, None,
                                            "non_medical.f1") + TEX_PAK),
}


def _in_context_rows(tex: str, label: str) -> dict[str, list[float]]:
    table = tex[:re.search(rf"^\\label\{{{label}\}}", tex, re.M).start()]  # not a commented copy
    table = table[table.rindex("\\begin{table"):]
    rows, in_context = {}, False
    for line in table.splitlines():
        if line.lstrip().startswith("%"):
            continue
        in_context = in_context or "In-context" in line or "In-Context" in line
        cells = line.split("&")
        if in_context and len(cells) > 2 and cells[1].strip() in TEX_MODELS:
            rows[TEX_MODELS[cells[1].strip()]] = [
                float(re.findall(r"\d+(?:\.\d+)?", c)[-1]) for c in cells[2:]]
    return rows


def test_paper_results_hold_every_in_context_number_of_the_paper():
    if not PAPER_TEX.is_file():
        pytest.skip(f"the paper's LaTeX is not at {PAPER_TEX}")
    tex = PAPER_TEX.read_text(encoding="utf-8")
    seen = 0
    for label, (task, split, keys) in TEX_TABLES.items():
        rows = _in_context_rows(tex, label)
        assert rows, label
        for model, values in rows.items():
            row = paper_results.paper_row(f"in-context-{model}", task, split)
            printed = {k: v for k, v in zip(keys, values) if k}
            assert {k: row.get(k) for k in printed} == printed, (label, model)
            seen += 1
    # 7 models in 6 in-domain tables, ChatGPT and GPT-4-Turbo in 3 OOD ones
    assert seen == 7 * 6 + 2 * 3


def test_a_model_without_a_hugging_face_tokenizer_gets_an_estimate(argv, tmp_path, capsys):
    args = argv("nlg", "http://127.0.0.1:9/v1", "--dry_run")
    at = args.index("--tokenizer")
    args = args[:at] + args[at + 2:] + ["--model", str(tmp_path / "no-tokenizer-here")]
    code, out, err = run_cli(args, capsys)
    assert code == 0 and "prompt tokens are estimated at 4 characters each" in err
    lines = [json.loads(x) for x in (tmp_path / "out" / "nlg" / "requests.jsonl").read_text().splitlines()]
    chars = sum(len(m["content"]) for m in lines[0]["messages"])
    assert chars // 4 <= lines[0]["prompt_tokens"] <= chars // 4 + 40
    info = json.loads((tmp_path / "out" / "nlg" / "run_info.json").read_text())
    assert info["token_counter"].startswith("estimate")
