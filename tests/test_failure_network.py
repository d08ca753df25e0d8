"""Deadlines: every command that talks to an endpoint or the Hub, at a server that accepts and
never answers, ends with one line at its timeout, never a hang.

Part of the failure sweep (tests/test_failure_*.py): each case must end in a clear error
(non-zero exit, a one-line `error:` that is not an "unexpected" failure), never a traceback,
a silent success, a lost file or a secret in the output; helpers.py keeps the sweep table.
Offline, CPU.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from helpers import (
    classify,
    evaluated_run,
    expect,
    meditod,
    offline_env,
    record,
    run_case,
    served_runs,
    write_run,
)

from meditod_hub.commands import evaluate as evaluate_cmd
from meditod_hub.commands import predict as predict_cmd

PROJECT = Path(__file__).resolve().parent.parent


# --- issue 26, the sweep's classes: dead servers -------------------------------------------------
# Every command that takes an endpoint or talks to the Hub, at a socket that accepts connections
# and never answers a byte, with a short --timeout: a one-line error within a minute, never a hang.
DEAD_DEADLINE_S = 90


def _dead_in_process(case, url, ctx):
    from meditod_hub.commands import chat, eval_cascade, fewshot

    fewshot_argv = ["--model", "stub", "--task", "nlu", "--data", ctx.build, "--shots", "1",
                    "--limit", "1", "--out", ctx.tmp / "fewshot", "--retriever", ctx.retriever,
                    "--tokenizer", ctx.tokenizer, "--max_tokens", "8", "--context_window",
                    "16384", "--cache", ctx.tmp / "answers.sqlite", "--retrieval_cache",
                    ctx.tmp / "retrieval", "--max_retries", "0"]
    served = served_runs(ctx.tmp / "served")
    return {
        "predict --endpoint": (predict_cmd.main, ["--model_path", ctx.model_run, "--task", "nlu", "--data",
                                                  ctx.build, "--limit", "1", "--endpoint", f"{url}/v1",
                                                  "--timeout", "2", "--out", ctx.tmp / "p.jsonl"]),
        "fewshot --endpoint": (fewshot.main, [*fewshot_argv, "--endpoint", f"{url}/v1",
                                              "--timeout", "2", "--request_timeout", "1"]),
        "chat --endpoint": (chat.main, [*served, "--endpoint", f"{url}/v1", "--timeout", "2"]),
        "eval-cascade --endpoint": (eval_cascade.main, [
            *served, "--endpoint", f"{url}/v1", "--timeout", "2", "--data", ctx.build,
            "--split", "train", "--limit", "1", "--out", ctx.tmp / "cascade"]),
    }[case]


@pytest.mark.parametrize("case", ["predict --endpoint", "fewshot --endpoint", "chat --endpoint",
                                  "eval-cascade --endpoint"])
def test_every_endpoint_flag_at_a_server_that_never_answers_stops_at_its_timeout(
        case, embedded_build, fake_model_run, tiny_models, tiny_retriever, tmp_path, capsys,
        monkeypatch):
    import io

    from hub_server import silent_endpoint

    monkeypatch.setattr(sys, "stdin", io.StringIO("I have a cough.\n"))
    ctx = SimpleNamespace(tmp=tmp_path, build=embedded_build, model_run=fake_model_run,
                          retriever=tiny_retriever, tokenizer=tiny_models / "tiny-llama")
    with silent_endpoint() as url:
        main, argv = _dead_in_process(case, url, ctx)
        outcome = run_case(f"{case}: a server that never answers", main, argv, capsys,
                           deadline=DEAD_DEADLINE_S)
    assert outcome.kind == "clear", (outcome.kind, outcome.err[-1500:])
    assert "timeout" in outcome.err or "did not answer" in outcome.err, outcome.err


# --- issue 36: the default deadlines; a silent server ends a batch at its silence deadline -----
def _without_timeout_flags(argv: list) -> list:
    """`argv` as a user who gives no deadline at all types it (the defaults: a 3600 s batch)."""
    cut = [i for i, a in enumerate(argv) if str(a) in ("--timeout", "--request_timeout")]
    return [a for i, a in enumerate(argv) if i not in cut and i - 1 not in cut]


@pytest.mark.parametrize("case", ["predict --endpoint", "fewshot --endpoint", "chat --endpoint",
                                  "eval-cascade --endpoint", "evaluate --judge llm"])
def test_a_server_that_never_answers_ends_at_the_silence_deadline_by_default(
        case, embedded_build, fake_model_run, tiny_models, tiny_retriever, tmp_path, capsys,
        monkeypatch):
    """Before: with no --timeout these waited 3600 s (five attempts of 120 s and the backoff,
    again and again) on a server that accepts and never answers. Now no answer for one
    SILENCE_S (110 s; 1 s here) ends the batch, whatever the batch's deadline and retries."""
    import io

    from hub_server import silent_endpoint

    from meditod_hub import endpoint

    monkeypatch.setattr(endpoint.Endpoint, "attempt_timeout", property(lambda self: 1.0))
    monkeypatch.setattr(endpoint, "SILENCE_S", 1.0)
    monkeypatch.setattr(sys, "stdin", io.StringIO("I have a cough.\n"))
    ctx = SimpleNamespace(tmp=tmp_path, build=embedded_build, model_run=fake_model_run,
                          retriever=tiny_retriever, tokenizer=tiny_models / "tiny-llama")
    with silent_endpoint() as url:
        if case == "evaluate --judge llm":
            main, argv = evaluate_cmd.main, [
                "--task", "nlu", "--data", embedded_build, "--predictions",
                _judged_predictions(embedded_build, tmp_path), "--out", tmp_path / "r.json",
                "--judge", "llm", "--judge_model", "m", "--judge_url", f"{url}/v1"]
        else:
            main, argv = _dead_in_process(case, url, ctx)
        argv = _without_timeout_flags(argv)
        outcome = run_case(f"{case}: a server that never answers, no --timeout given", main, argv,
                           capsys, deadline=DEAD_DEADLINE_S)
    assert outcome.kind == "clear", (outcome.kind, outcome.err[-1500:])
    assert "sent no complete answer for 1 s" in outcome.err, outcome.err


def test_every_endpoint_call_has_a_connect_and_a_read_deadline_by_default():
    """The defaults the test above shrinks: a connection within CONNECT_TIMEOUT_S, an answer
    within REQUEST_TIMEOUT_S, silence ending a batch within the two minutes the battery allows."""
    from meditod_hub import endpoint

    ask = endpoint.Endpoint("http://127.0.0.1:9/v1", "m", cache=None)
    client = ask._client()
    assert client.timeout.connect == endpoint.CONNECT_TIMEOUT_S <= 30
    assert client.timeout.read == ask.attempt_timeout == endpoint.REQUEST_TIMEOUT_S
    assert endpoint.REQUEST_TIMEOUT_S < endpoint.SILENCE_S < 120


HUB_COMMANDS = ["push", "publish", "space", "leaderboard", "results --hub_dataset",
                "predict a Hub model", "chat with Hub models", "evaluate --judge_url"]


def _hub_argv(case: str, embedded_build: Path, tmp_path: Path) -> list:
    """`meditod` argv of a Hub command (`{url}` stands for the endpoint's URL)."""
    run = evaluated_run(tmp_path / "run")
    whole = write_run(tmp_path / "whole", adapter=False)  # a full model, as a Space serves one
    (whole / "model.safetensors").write_bytes(b"x")
    (whole / "config.json").write_text('{"model_type": "llama"}')
    return {
        "push": ["push", "--folder", embedded_build, "--repo", "org/x"],
        "publish": ["publish", "--run", run, "--repo", "org/x"],
        "space": ["space", "--repo", "org/x-space", "--nlu", whole, "--pol", whole, "--nlg",
                  whole],
        "leaderboard": ["leaderboard", "--repo", "org/board", "--dataset", "org/data"],
        "results --hub_dataset": ["results", "--hub_dataset", "org/data", "--out",
                                  tmp_path / "results"],
        "predict a Hub model": ["predict", "--model_path", "org/model", "--task", "nlu",
                                "--data", embedded_build, "--limit", "1", "--out",
                                tmp_path / "p.jsonl"],
        "chat with Hub models": ["chat", "--nlu", "org/a", "--pol", "org/b", "--nlg", "org/c"],
        "evaluate --judge_url": ["evaluate", "--task", "nlu", "--data", embedded_build,
                                 "--predictions", _judged_predictions(embedded_build, tmp_path),
                                 "--out", tmp_path / "r.json", "--judge", "llm", "--judge_model",
                                 "m", "--judge_url", "{url}/v1"],
    }[case]


@pytest.mark.parametrize("case", HUB_COMMANDS)
def test_every_hub_command_at_a_hub_that_never_answers_stops_at_its_timeout(
        case, embedded_build, tmp_path):
    """HF_ENDPOINT is read when huggingface_hub is imported: each case is a `meditod` process."""
    from hub_server import silent_endpoint

    argv = _hub_argv(case, embedded_build, tmp_path)
    flag = "--judge_timeout" if case == "evaluate --judge_url" else "--timeout"
    with silent_endpoint() as url:
        argv = [str(a).format(url=url) for a in argv] + [flag, "2"]
        env = {**offline_env(tmp_path), "HF_ENDPOINT": url, "HF_TOKEN": "hf_sweep_token_0123456789"}
        try:
            done = meditod(env, *argv, timeout=DEAD_DEADLINE_S)
        except subprocess.TimeoutExpired:
            record(f"{case}: a Hub that never answers", "hangs")
            raise
    kind = classify(done.returncode, done.stdout, done.stderr, False, False)
    record(f"{case}: a Hub that never answers", kind)
    assert kind == "clear", (done.returncode, done.stderr[-1500:])
    assert flag in done.stderr or "did not answer" in done.stderr, done.stderr


# --- issue 46, item 4: one deadline per wait, whatever the peer drips; the knob a user sets ----
# The battery's rows: with no --timeout at all (publish's and a Space's default: 600 s), a Hub
# that never answers held `space`, `leaderboard` and `publish` for the whole 600 s (the
# `http_timeout` block replaced the Hub's silence budget), and a Hub or endpoint that drips a
# byte every few seconds, or sends a body without end, held every command past 330 s.
# MEDITOD_NETWORK_TIMEOUT=3 here; before, each of these ran into DEAD_DEADLINE_S.
KNOB_S = "3"
SILENT_HUB_ROWS = [(case, "never answers") for case in ("publish", "space", "leaderboard")]
DRIP_ROWS = [(case, "drips") for case in HUB_COMMANDS if case != "push"]
# models.predictor words a failed Hub download its own way ("cannot download ORG/NAME (HubError):
# check the id ..."), without the kit's line that names the knob
RELABELLED = ("predict a Hub model", "chat with Hub models")


@pytest.mark.parametrize("case,peer", SILENT_HUB_ROWS + DRIP_ROWS)
def test_every_hub_command_at_a_slow_hub_ends_at_the_network_timeout_without_any_flag(
        case, peer, embedded_build, tmp_path):
    from hub_server import silent_endpoint
    from slow_server import Shape, SlowPeer

    from meditod_hub.netwait import ENV

    argv = _hub_argv(case, embedded_build, tmp_path)
    server = silent_endpoint() if peer == "never answers" else SlowPeer(Shape(drip_s=0.2))
    with server as answering:
        url = answering if isinstance(answering, str) else answering.url
        env = {**offline_env(tmp_path), "HF_ENDPOINT": url, ENV: KNOB_S,
               "HF_TOKEN": "hf_sweep_token_0123456789"}
        try:
            done = meditod(env, *[str(a).format(url=url) for a in argv], timeout=DEAD_DEADLINE_S)
        except subprocess.TimeoutExpired:
            record(f"{case}: a Hub that {peer}, no --timeout", "hangs")
            raise
    kind = classify(done.returncode, done.stdout, done.stderr, False, False)
    record(f"{case}: a Hub that {peer}, no --timeout", kind)
    assert kind == "clear", (done.returncode, done.stderr[-1500:])
    said = done.stderr.strip().splitlines()[-1]
    if case not in RELABELLED:
        assert ENV in said or "--timeout" in said or "--judge_timeout" in said, said


@pytest.mark.parametrize("case", ["predict --endpoint", "fewshot --endpoint", "chat --endpoint",
                                  "eval-cascade --endpoint"])
def test_every_endpoint_command_at_a_server_that_drips_ends_at_the_network_timeout(
        case, embedded_build, fake_model_run, tiny_models, tiny_retriever, tmp_path, capsys,
        monkeypatch):
    """Before: the silence deadline restarted at each answer's headers, so a server that sent
    quick headers and then a byte every 0.2 s held predict, chat and eval-cascade for good."""
    import io

    from slow_server import Shape, SlowPeer

    from meditod_hub.netwait import ENV

    monkeypatch.setenv(ENV, "2")
    monkeypatch.setattr(sys, "stdin", io.StringIO("I have a cough.\n"))
    ctx = SimpleNamespace(tmp=tmp_path, build=embedded_build, model_run=fake_model_run,
                          retriever=tiny_retriever, tokenizer=tiny_models / "tiny-llama")
    with SlowPeer(Shape(drip_s=0.2, fast_head=True, length=1 << 20)) as peer:
        main, argv = _dead_in_process(case, peer.url, ctx)
        outcome = run_case(f"{case}: a server that drips, no --timeout",
                           main, _without_timeout_flags(argv), capsys, deadline=DEAD_DEADLINE_S)
    assert outcome.kind == "clear", (outcome.kind, outcome.err[-1500:])
    assert "sent no complete answer for 2 s" in outcome.err and ENV in outcome.err, outcome.err


def _judged_predictions(build: Path, tmp_path: Path) -> Path:
    """NLU predictions whose every value differs from the gold one: the judge is asked."""
    from meditod_hub.data.dataset import load_split

    path = tmp_path / "judged.jsonl"
    path.write_text("".join(json.dumps({"id": r["id"], "prediction": json.loads(json.dumps(
        r["nlu"]).replace('"value": "', '"value": "x')), "raw": "", "parse_ok": True}) + "\n"
        for r in load_split(build, "nlu", "test")))
    return path


def test_the_app_at_a_server_that_never_answers_ends_the_turn_at_its_timeout(tmp_path):
    """(before: a turn at MEDITOD_ENDPOINT waited an hour, the endpoint's own default)"""
    from hub_server import silent_endpoint

    from meditod_hub.apps import webapp

    flags = served_runs(tmp_path / "runs")
    environ = {f"MEDITOD_{t.upper()}": flags[i * 2 + 1] for i, t in enumerate(("nlu", "pol", "nlg"))}
    assert webapp.settings({**environ, "MEDITOD_TIMEOUT": "2"}, tmp_path).specs["nlu"] \
        .endpoint_options["timeout"] == 2
    with silent_endpoint() as url:
        settings = webapp.settings({**environ, "MEDITOD_ENDPOINT": f"{url}/v1",
                                    "MEDITOD_TIMEOUT": "2"}, tmp_path)
        start = time.monotonic()
        outcome: dict = {}

        def turn():
            try:
                assistant = webapp.Assistant.load(settings.specs)
                outcome["status"] = webapp.respond(assistant, None, "I cough.",
                                                   webapp.opening_history(), None, False)[-1]
            except Exception as exc:  # noqa: BLE001 - a one-line failure is what is expected
                outcome["error"] = str(exc)
        import threading

        worker = threading.Thread(target=turn, daemon=True)
        worker.start()
        worker.join(DEAD_DEADLINE_S)
    seconds = time.monotonic() - start
    kind = "hangs" if worker.is_alive() else "clear" if "2 s" in str(outcome) else "silent"
    record("app: MEDITOD_ENDPOINT at a server that never answers", kind)
    assert kind == "clear", (seconds, outcome)
    with pytest.raises(webapp.UsageError, match="MEDITOD_TIMEOUT=0: give the seconds"):
        webapp.settings({**environ, "MEDITOD_TIMEOUT": "0"}, tmp_path)


# --- issue 36: a deadline on every Hub request, not only those of push, publish and results ------
def test_every_command_gives_each_hub_request_a_connect_and_a_read_deadline():
    """Before: harness, space, leaderboard and `annotate --nlu_model` read models and repos
    through huggingface_hub's shared client, which waits forever by default."""
    from huggingface_hub import get_session

    import meditod_hub.commands  # noqa: F401 - what every command imports first
    from meditod_hub import hubclient

    request = get_session().build_request("GET", "http://127.0.0.1:9/api/models/org/m",
                                          timeout=None)  # as HfApi.model_info sends it
    assert hubclient._timeout_of_this_call in get_session().event_hooks["request"]
    # in a thread of its own: the silence budget is per thread, and an earlier test's silent Hub
    # in this worker's main thread may have spent part of it
    hook = threading.Thread(target=hubclient._timeout_of_this_call, args=(request,))
    hook.start()
    hook.join()
    timeout = request.extensions["timeout"]
    assert (timeout["connect"], timeout["read"]) == (hubclient.HUB_CONNECT_TIMEOUT_S,
                                                     hubclient.HUB_READ_TIMEOUT_S)
    assert hubclient.HUB_CONNECT_TIMEOUT_S + hubclient.HUB_READ_TIMEOUT_S <= 120


@pytest.mark.parametrize("call", ["model_info", "list_repo_files"])
def test_a_hub_request_at_a_hub_that_never_answers_ends_at_its_read_deadline(call, tmp_path,
                                                                           monkeypatch):
    """The deadline set by `bound_hub_requests` (1 s here) ends a request the Hub never answers,
    whatever huggingface_hub method makes it."""
    import threading

    import httpx2
    from hub_server import silent_endpoint
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    from meditod_hub import hubclient

    monkeypatch.setattr(hubclient, "HUB_READ_TIMEOUT_S", 1.0)
    hubclient.bound_hub_requests()
    outcome: dict = {}
    with silent_endpoint() as url:
        api = HfApi(endpoint=url, token=False)
        work = {"model_info": lambda: api.model_info("org/m"),
                "list_repo_files": lambda: api.list_repo_files("org/m")}[call]

        def target():
            try:
                work()
            except (httpx2.TimeoutException, LocalEntryNotFoundError, HfHubHTTPError) as exc:
                outcome["error"] = type(exc).__name__
        worker = threading.Thread(target=target, daemon=True)
        worker.start()
        worker.join(DEAD_DEADLINE_S)
    kind = "hangs" if worker.is_alive() else "clear" if "error" in outcome else "silent"
    record(f"hub: {call} at a Hub that never answers", kind)
    assert kind == "clear", outcome


def test_a_download_at_a_hub_that_never_answers_ends_at_the_silence_deadline(tmp_path,
                                                                               monkeypatch):
    """`hf_hub_download` sets its own 10 s and then 60 s deadlines and retries up to 5 times:
    about 7 minutes at a silent Hub. HUB_SILENCE_S (100 s; 2 s here) ends the wait, retries
    included, with one line."""
    import threading

    from hub_server import silent_endpoint
    from huggingface_hub import hf_hub_download

    from meditod_hub import hubclient

    assert hubclient.HUB_SILENCE_S + 8 < 120  # the default, and the last retry's wait at most
    monkeypatch.setattr(hubclient, "HUB_SILENCE_S", 2.0)
    hubclient.bound_hub_requests()
    outcome: dict = {}
    with silent_endpoint() as url:
        def target():
            try:
                hf_hub_download("org/m", "config.json", endpoint=url, token=False,
                                cache_dir=tmp_path / "cache")
            except hubclient.HubError as exc:
                outcome["error"] = str(exc)
        worker = threading.Thread(target=target, daemon=True)
        worker.start()
        worker.join(DEAD_DEADLINE_S)
    kind = "hangs" if worker.is_alive() else "clear" if "error" in outcome else "silent"
    record("hub: hf_hub_download at a Hub that never answers", kind)
    assert kind == "clear", outcome
    assert outcome["error"] == (f"{url} sent no complete answer for 2 s, retries included: it is "
                                "down, unreachable or too slow; retry later (check HF_ENDPOINT), "
                                "or set MEDITOD_NETWORK_TIMEOUT=SECONDS to wait longer")


# --- issue 36, the battery's silent endpoints: a scheme no OpenAI-compatible server speaks ---------
@pytest.mark.parametrize("case", ["predict --endpoint", "chat --endpoint"])
@pytest.mark.parametrize("url", ["ftp://127.0.0.1:9", "file:///tmp"])
def test_an_endpoint_that_is_no_http_url_is_refused_before_any_work(
        case, url, embedded_build, fake_model_run, tiny_models, tiny_retriever, tmp_path, capsys,
        monkeypatch):
    """Before: an ftp:// endpoint started the app, which then failed on every turn."""
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO("I have a cough.\n"))
    ctx = SimpleNamespace(tmp=tmp_path, build=embedded_build, model_run=fake_model_run,
                          retriever=tiny_retriever, tokenizer=tiny_models / "tiny-llama")
    main, argv = _dead_in_process(case, url, ctx)
    outcome = run_case(f"{case}: {url.split(':')[0]}:// endpoint", main, argv, capsys,
                       deadline=DEAD_DEADLINE_S)
    expect(outcome, "is not an http:// or https:// URL")
