"""The one endpoint client: concurrency, retries, timeouts, the deadline, the answer cache, keys
and the one-line errors, against the fault-injecting server of tests/chat_server.py (127.0.0.1).
"""

from __future__ import annotations

import socket

import pytest
from chat_server import ChatServer, answer_for

from meditod_hub.endpoint import (
    AnswerCache,
    Decoding,
    Endpoint,
    EndpointError,
    Prices,
    Request,
    endpoint_host,
    key_variable,
)

GREEDY = Decoding(max_tokens=8)


def chat_requests(n: int, tag: str = "q") -> list[Request]:
    return [Request(f"row-{i}", messages=[{"role": "system", "content": "s"},
                                          {"role": "user", "content": f"{tag}{i}"}])
            for i in range(n)]


def expected(requests: list[Request]) -> dict[str, str]:
    return {r.id: answer_for({"messages": r.messages}) for r in requests}


def endpoint(server: ChatServer, tmp_path, **kwargs) -> Endpoint:
    settings = {"cache": tmp_path / "answers.sqlite", "request_timeout": 5.0, "max_retries": 2,
                **kwargs}
    return Endpoint(server.url, "stub-model", **settings)


def port_of(server: ChatServer) -> int:
    return int(server.url.split(":")[2].split("/")[0])


def texts(answers) -> dict[str, str]:
    return {i: a.text for i, a in answers.items()}


def test_answers_arrive_with_bounded_concurrency_and_usage(tmp_path):
    requests = chat_requests(6)
    with ChatServer(delay=0.2) as server:
        client = endpoint(server, tmp_path, concurrency=2, prices=Prices(1.0, 2.0))
        answers = client.complete(requests, GREEDY)
        assert server.max_in_flight == 2, "never more requests in flight than asked"
    assert texts(answers) == expected(requests)
    stats = client.stats
    assert (stats.requests, stats.answers, stats.cache_hits, stats.retries) == (6, 6, 0, 0)
    assert (stats.prompt_tokens, stats.completion_tokens) == (60, 12)
    assert stats.cost_usd == pytest.approx((60 * 1.0 + 12 * 2.0) / 1e6)
    assert server.received[0]["max_tokens"] == 8 and server.received[0]["temperature"] == 0.0


def test_a_rerun_sends_nothing_and_the_key_covers_model_messages_and_decoding(tmp_path):
    requests = chat_requests(4)
    with ChatServer(models=["stub-model", "other"]) as server:
        endpoint(server, tmp_path).complete(requests, GREEDY)
        again = endpoint(server, tmp_path)
        answers = again.complete(requests, GREEDY)
        assert len(server.received) == 4, "every answer came from the cache"
        assert again.stats.cache_hits == 4 and again.stats.requests == 0
        assert all(a.cached for a in answers.values()) and texts(answers) == expected(requests)
        endpoint(server, tmp_path).complete(requests, Decoding(max_tokens=9))
        Endpoint(server.url, "other", cache=tmp_path / "answers.sqlite").complete(requests, GREEDY)
        endpoint(server, tmp_path).complete(chat_requests(4, tag="other question "), GREEDY)
        assert len(server.received) == 16


def test_completions_route_for_plain_prompts(tmp_path):
    requests = [Request("a", prompt="convert dialog to dialog state: patient: hi")]
    with ChatServer() as server:
        answers = endpoint(server, tmp_path).complete(requests, GREEDY)
        assert "messages" not in server.received[0]
    assert answers["a"].text == answer_for({"prompt": requests[0].prompt})


@pytest.mark.parametrize("fault", ["429", "500", "truncated", "hang"])
def test_transient_faults_are_retried(tmp_path, fault):
    requests = chat_requests(3)
    with ChatServer(faults=[fault], retry_after="0") as server:
        client = endpoint(server, tmp_path, concurrency=1, request_timeout=1.0)
        answers = client.complete(requests, GREEDY)
        retried = [h.get("x-stainless-retry-count") for h in server.headers]
    assert texts(answers) == expected(requests)
    assert client.stats.requests == 4 and client.stats.retries == 1
    assert retried.count("1") == 1, "the failed request was sent again"


def test_retry_after_is_honoured(tmp_path):
    """A 429 asking for 30 s is waited on, so a 2 s deadline ends the batch (a default backoff
    of ~0.5 s would have answered in time)."""
    with ChatServer(faults=["429"], retry_after="30") as server:
        client = endpoint(server, tmp_path, timeout=2.0)
        with pytest.raises(EndpointError, match="not done within --timeout 2 s, retries included: "
                                                "0 of 1 answers .*allow a longer --timeout"):
            client.complete(chat_requests(1), GREEDY)
        assert len(server.received) == 1


@pytest.mark.parametrize("fault,message", [
    ("hang", r"did not answer within 1 s, 0 retries included: check that the server is up "
             r"and not overloaded \(--timeout bounds the whole run\)"),
    ("truncated", r"cut its answer short \(RemoteProtocolError, 0 retries\): the server or a "
                  r"proxy in front of it closed the connection mid-answer"),
    ("nonjson", r"sent a response that is not a completion"),
    ("500", r"answered HTTP 500 after 0 retries"),
])
def test_a_fault_that_persists_is_one_line_naming_the_endpoint(tmp_path, fault, message):
    with ChatServer(faults=[fault]) as server:
        client = endpoint(server, tmp_path, request_timeout=1.0, max_retries=0)
        with pytest.raises(EndpointError, match=message) as failure:
            client.complete(chat_requests(1), GREEDY)
    text = str(failure.value)
    assert text.startswith(endpoint_host(server.url)) and "\n" not in text


@pytest.mark.parametrize("fault", ["nonjson", "hang"])
def test_the_cache_keeps_every_answer_received_before_a_failure(tmp_path, fault):
    requests = chat_requests(5)
    with ChatServer(faults=["ok", "ok", fault]) as server:
        client = endpoint(server, tmp_path, concurrency=1, request_timeout=30.0, max_retries=0,
                          timeout=2.0)
        with pytest.raises(EndpointError):
            client.complete(requests, GREEDY)
        assert len(server.received) == 3, "the first dead request stops the batch"
    with ChatServer(port=port_of(server)) as healthy:  # the server restarted at the same URL
        resumed = endpoint(healthy, tmp_path)
        answers = resumed.complete(requests, GREEDY)
        assert len(healthy.received) == 3, "only the unanswered requests are sent again"
    assert resumed.stats.cache_hits == 2 and texts(answers) == expected(requests)


def test_the_first_dead_request_cancels_the_queued_ones(tmp_path):
    with ChatServer(faults=["401"]) as server:
        client = endpoint(server, tmp_path, concurrency=1)
        with pytest.raises(EndpointError, match=r"wants an API key \(HTTP 401\)"):
            client.complete(chat_requests(6), GREEDY)
        assert len(server.received) == 1


def test_a_wrong_key_names_its_variable_and_never_the_key(tmp_path, monkeypatch):
    secret = "sk-local-test-0123456789abcdef"
    monkeypatch.setenv("MEDITOD_TEST_KEY", secret)
    with ChatServer(faults=["401"]) as server:
        client = endpoint(server, tmp_path, api_key_env="MEDITOD_TEST_KEY")
        with pytest.raises(EndpointError) as failure:
            client.complete(chat_requests(1), GREEDY)
        assert {k.lower(): v for k, v in server.headers[0].items()}["authorization"] == f"Bearer {secret}"
    message = str(failure.value)
    assert "set MEDITOD_TEST_KEY to a valid key" in message and secret not in message
    assert secret not in repr(client.describe())
    assert not any(secret.encode() in p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())


def test_an_unknown_model_lists_the_served_ones(tmp_path):
    with ChatServer(models=["tiny-a", "tiny-b"]) as server:
        client = Endpoint(server.url, "llama-9000", cache=None)
        with pytest.raises(EndpointError, match=r"does not serve model 'llama-9000' \(HTTP 404\); "
                                                 r"it serves: tiny-a, tiny-b: pass a served"):
            client.complete(chat_requests(1), GREEDY)


def test_a_dead_endpoint_says_start_the_server(tmp_path):
    url = dead_url()
    client = Endpoint(url, "m", cache=None, max_retries=1)
    with pytest.raises(EndpointError, match=rf"cannot reach {endpoint_host(url)} .*start the server"):
        client.complete(chat_requests(1), GREEDY)


def test_hosted_endpoints_need_a_key_before_anything_is_sent(tmp_path, monkeypatch):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # no stored `hf auth login` token
    with pytest.raises(EndpointError, match="router.huggingface.co needs an API key: set HF_TOKEN"):
        Endpoint("https://router.huggingface.co/v1", "meta-llama/Llama-3.3-70B-Instruct")
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "azure-test")
    azure = Endpoint("https://mine.openai.azure.com", "gpt-4-deployment", cache=None)
    assert type(azure._client()).__name__ == "AsyncAzureOpenAI"
    assert azure.describe()["key_variable"] == "AZURE_OPENAI_API_KEY"


def test_describe_names_the_host_only():
    client = Endpoint("http://user:pa55word@127.0.0.1:8123/v1", "m", cache=None)
    info = client.describe()
    assert info["endpoint"] == "127.0.0.1:8123" and "pa55word" not in repr(info)


def test_the_cache_file_holds_answers_not_prompts(tmp_path):
    cache = AnswerCache(tmp_path / "c.sqlite")
    request = chat_requests(1, tag="a private dialogue line ")[0]
    from meditod_hub.endpoint import Answer

    cache.put(request.key("http://127.0.0.1:8000/v1", "m", GREEDY), Answer("an answer", 3, 1, "stop"))
    cache.close()
    blob = (tmp_path / "c.sqlite").read_bytes()
    assert b"an answer" in blob and b"private dialogue" not in blob


@pytest.mark.parametrize("damage", ["garbage", "truncated", "folder", "schema"])
def test_an_unusable_answer_cache_is_one_line_naming_it(tmp_path, damage):
    path = tmp_path / "answers.sqlite"
    if damage == "folder":
        path.mkdir()
    elif damage == "schema":
        import sqlite3

        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE answers (key TEXT, something_else TEXT)")
    else:
        with ChatServer() as server:
            endpoint(server, tmp_path).complete(chat_requests(3), GREEDY)
        data = path.read_bytes()
        path.write_bytes(b"not a database at all" * 50 if damage == "garbage"
                         else data[:len(data) // 3])
    with ChatServer() as server:
        with pytest.raises(EndpointError) as failure:
            endpoint(server, tmp_path).complete(chat_requests(3), GREEDY)
        assert server.received == []
    message = str(failure.value)
    assert message.startswith((f"{path} is not a usable answer cache",
                               f"{path} is a folder, not an answer cache")), message
    assert "\n" not in message
    assert "give --cache another file" in message


def test_a_database_of_the_users_own_is_never_used_as_the_cache(tmp_path):
    """(before: the kit's table was added to it)"""
    import sqlite3

    path = tmp_path / "mine.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE patients (id INTEGER)")
    before = path.read_bytes()
    with ChatServer() as server:
        with pytest.raises(EndpointError) as failure:
            endpoint(server, tmp_path, cache=path).complete(chat_requests(1), GREEDY)
        assert server.received == []
    assert str(failure.value) == (f"{path} is a database with other tables than an answer "
                                  "cache's (patients): give --cache a file of its own")
    assert path.read_bytes() == before


# --- answers stay with the server that gave them ----------------------------------------------

def dead_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}/v1"


def test_two_servers_serving_one_model_name_never_share_answers(tmp_path, capsys):
    """The README serves every checkpoint as `meditod`: each server still gets asked, and a
    dead one fails instead of answering from another's cache."""
    requests = chat_requests(3)
    cache = tmp_path / "answers.sqlite"
    with ChatServer(models=["meditod"], reply="A") as a, ChatServer(models=["meditod"],
                                                                     reply="B") as b:
        first = Endpoint(a.url, "meditod", cache=cache).complete(requests, GREEDY)
        other = Endpoint(b.url, "meditod", cache=cache)
        second = other.complete(requests, GREEDY)
        assert len(b.received) == 3 and other.stats.cache_hits == 0
        assert "from the answer cache" not in capsys.readouterr().err
        again = Endpoint(a.url + "/", "meditod", cache=cache)  # the same server, spelt with a /
        assert texts(again.complete(requests, GREEDY)) == texts(first)
        assert len(a.received) == 3 and again.stats.cache_hits == 3
    assert {t.split()[0] for t in texts(first).values()} == {"A"}
    assert {t.split()[0] for t in texts(second).values()} == {"B"}
    report = capsys.readouterr().err
    assert f"3 of 3 answers from the answer cache {cache} (earlier answers of " \
           f"{endpoint_host(a.url)}, model meditod); --cache '' asks the server again" in report
    with pytest.raises(EndpointError, match="cannot reach"):
        Endpoint(dead_url(), "meditod", cache=cache, max_retries=0).complete(requests, GREEDY)


def test_a_cache_scope_tells_two_checkpoints_at_one_url_apart(tmp_path):
    requests = chat_requests(2)
    with ChatServer() as server:
        endpoint(server, tmp_path, cache_scope="runs/a").complete(requests, GREEDY)
        endpoint(server, tmp_path, cache_scope="runs/b").complete(requests, GREEDY)
        endpoint(server, tmp_path, cache_scope="runs/a").complete(requests, GREEDY)
        assert len(server.received) == 4


def test_describe_names_the_endpoint_url_without_its_user_or_query():
    client = Endpoint("http://user:pw@LOCALHOST:8123/v1/?x=1", "m", cache=None)
    assert client.describe()["endpoint_url"] == "http://localhost:8123/v1"


# --- a key goes only to the host it belongs to ----------------------------------------------

def authorization(server: ChatServer) -> list[str]:
    return [{k.lower(): v for k, v in h.items()}.get("authorization") for h in server.headers]


@pytest.mark.parametrize("url,variable", [
    ("https://api.openai.com/v1", "OPENAI_API_KEY"),
    ("https://mine.openai.azure.com", "AZURE_OPENAI_API_KEY"),
    ("https://router.huggingface.co/v1", "HF_TOKEN"),
    ("http://127.0.0.1:8000/v1", None),
    ("http://10.1.2.3:8000/v1", None),
    ("https://api.openai.com.evil.example/v1", None),
    ("https://my-vllm.example/v1", None),
])
def test_one_rule_picks_the_key_by_host(url, variable):
    assert key_variable(url) == variable
    assert key_variable(url, "MY_SERVER_KEY") == "MY_SERVER_KEY"


def test_a_hosted_apis_key_goes_over_https_only():
    with pytest.raises(EndpointError, match="api.openai.com takes its key over https only: use "
                                            "https://api.openai.com/v1"):
        key_variable("http://api.openai.com/v1")


def test_no_key_of_the_environment_reaches_a_server_it_does_not_belong_to(tmp_path, monkeypatch):
    for name, secret in (("OPENAI_API_KEY", "sk-openai-secret"), ("HF_TOKEN", "hf_secret"),
                         ("AZURE_OPENAI_API_KEY", "azure-secret")):
        monkeypatch.setenv(name, secret)
    with ChatServer() as server:
        client = endpoint(server, tmp_path)
        client.complete(chat_requests(2), GREEDY)
        assert client.served_models() == ["stub-model"]
    assert set(authorization(server)) == {"Bearer EMPTY"}
    assert client.describe()["key_variable"] is None


def test_a_named_variable_is_sent_and_a_missing_one_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-secret")
    monkeypatch.setenv("MY_VLLM_KEY", "vllm-secret")
    with ChatServer() as server:
        endpoint(server, tmp_path, api_key_env="MY_VLLM_KEY").complete(chat_requests(1), GREEDY)
    assert authorization(server) == ["Bearer vllm-secret"]
    monkeypatch.delenv("MY_VLLM_KEY")
    with pytest.raises(EndpointError, match=r"needs an API key: set MY_VLLM_KEY in the "
                                            r"environment \(named by --judge_api_key_env\)"):
        Endpoint("http://127.0.0.1:9/v1", "m", api_key_env="MY_VLLM_KEY", flag_prefix="judge_")


def test_a_server_that_wants_a_key_says_how_to_name_one(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-secret")
    with ChatServer(faults=["401"]) as server:
        with pytest.raises(EndpointError, match=r"wants an API key \(HTTP 401\) and no key goes "
                                                r"to it unless you name the variable that holds "
                                                r"it: --api_key_env VAR"):
            endpoint(server, tmp_path).complete(chat_requests(1), GREEDY)


def test_a_key_over_plain_http_to_another_machine_only_when_named_and_with_a_warning(
        monkeypatch, capsys):
    monkeypatch.setenv("MY_KEY", "k-secret")
    Endpoint("http://10.1.2.3:8000/v1", "m", api_key_env="MY_KEY", cache=None)
    warning = capsys.readouterr().err
    assert "the key in MY_KEY goes to 10.1.2.3:8000 over plain http, as --api_key_env asks" \
        in warning and "k-secret" not in warning
    Endpoint("http://127.0.0.1:8000/v1", "m", api_key_env="MY_KEY", cache=None)
    assert capsys.readouterr().err == ""


# --- the LLM judge runs on this client ------------------------------------------------------

def judge_pairs(n: int) -> list[tuple[str, str]]:
    return [(f"{i} days ago", f"day {i}") for i in range(n)]


def test_one_deadline_bounds_the_whole_judging(tmp_path):
    from meditod_hub.data.metrics import JudgeError, LLMJudge

    with ChatServer(faults=["hang"] * 20) as server:
        judge = LLMJudge(server.url, "stub-model", tmp_path / "judge.sqlite", timeout=1.5,
                         workers=4)
        with pytest.raises(JudgeError, match=r"LLM judge: 127.0.0.1:\d+: not done within "
                                             r"--judge_timeout 1.5 s, retries included: 0 of 8 "
                                             r"answers .*allow a longer --judge_timeout"):
            judge.equivalent(judge_pairs(8))
        assert len(server.received) == 4, "only the requests in flight were sent"


def test_the_judge_stops_at_the_first_dead_request_and_keeps_its_judgements(tmp_path):
    from meditod_hub.data.metrics import JudgeError, LLMJudge

    cache = tmp_path / "judge.sqlite"
    with ChatServer(faults=["ok", "ok", "500"]) as server:
        judge = LLMJudge(server.url, "stub-model", cache, workers=1, max_retries=0)
        with pytest.raises(JudgeError, match="answered HTTP 500 after 0 retries"):
            judge.equivalent(judge_pairs(6))
        assert len(server.received) == 3, "the queued pairs were not sent"
    with ChatServer(port=port_of(server)) as healthy:
        again = LLMJudge(healthy.url, "stub-model", cache, workers=1)
        assert again.equivalent(judge_pairs(6)) == [False] * 6
        assert len(healthy.received) == 4 and again.describe()["cache_hits"] == 2
    assert again.describe()["endpoint"] == endpoint_host(healthy.url)
