"""`meditod predict --endpoint` against the fault-injecting stub (tests/chat_server.py): its
`--timeout`, its key rule and its answers kept per served checkpoint (issue 15). The end-to-end
equality with local predictions is in tests/test_served.py."""

from __future__ import annotations

import json

from chat_server import ChatServer

from meditod_hub.commands.predict import main
from meditod_hub.errors import run_main


def predict(embedded_build, url: str, out, *extra: str) -> list[str]:
    return ["--model_path", "my-org/meditod-llama3-nlu", "--family", "chat", "--task", "nlu",
            "--data", str(embedded_build), "--limit", "3", "--endpoint", url,
            "--served_model", "stub-model", "--out", str(out), "--cache",
            str(out.parent / "answers.sqlite"), *extra]


def test_a_hung_server_ends_at_timeout_and_the_hint_names_the_flag(embedded_build, tmp_path,
                                                                  capsys):
    with ChatServer(faults=["hang"] * 3) as server:
        code = run_main(main, predict(embedded_build, server.url, tmp_path / "p.jsonl",
                                      "--timeout", "1"))
    err = capsys.readouterr().err
    assert code == 1 and "not done within --timeout 1 s, retries included: 0 of 3 answers" in err
    assert "allow a longer --timeout" in err and not (tmp_path / "p.jsonl").exists()


def test_no_environment_key_goes_to_the_server_unless_named(embedded_build, tmp_path, capsys,
                                                            monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-secret")
    monkeypatch.setenv("MY_VLLM_KEY", "vllm-secret")
    with ChatServer() as server:
        assert run_main(main, predict(embedded_build, server.url, tmp_path / "a.jsonl")) == 0
        assert run_main(main, predict(embedded_build, server.url, tmp_path / "b.jsonl",
                                      "--api_key_env", "MY_VLLM_KEY", "--cache", "")) == 0
    sent = [{k.lower(): v for k, v in h.items()}["authorization"] for h in server.headers]
    assert sent == ["Bearer EMPTY"] * 3 + ["Bearer vllm-secret"] * 3


def test_two_checkpoints_served_under_one_name_at_one_url_never_share_answers(
        embedded_build, tmp_path, capsys):
    """The README serves every run as SERVED_MODEL=meditod at :8000: the run folder given as
    --model_path keeps their answers apart; the same run again is answered from the cache."""
    runs = {}
    for name in ("a", "b"):
        runs[name] = tmp_path / "runs" / name
        runs[name].mkdir(parents=True)
        (runs[name] / "adapter_config.json").write_text(json.dumps({"run": name}))
    with ChatServer() as server:
        for name in ("a", "b", "a"):
            args = predict(embedded_build, server.url, tmp_path / f"{name}.jsonl")
            args[1] = str(runs[name])
            assert run_main(main, args) == 0
        assert len(server.received) == 6
    assert "3 of 3 answers from the answer cache" in capsys.readouterr().err


def test_timeout_must_be_a_positive_number_of_seconds(embedded_build, tmp_path, capsys):
    for bad in ("0", "-1", "nan", "inf"):
        code = run_main(main, predict(embedded_build, "http://127.0.0.1:9/v1",
                                      tmp_path / "p.jsonl", "--timeout", bad))
        err = capsys.readouterr().err
        assert code == 2 and "argument --timeout: must be" in err, bad
