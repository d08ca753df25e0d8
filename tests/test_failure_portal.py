"""The annotation portal and the app: hostile requests are refused, the portal stays well.

Part of the failure sweep (tests/test_failure_*.py): each case must end in a clear error
(non-zero exit, a one-line `error:` that is not an "unexpected" failure), never a traceback,
a silent success, a lost file or a secret in the output; helpers.py keeps the sweep table.
Offline, CPU.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import (
    digests,
    echo_assistant,
    record,
)

PROJECT = Path(__file__).resolve().parent.parent


# --- issue 26, the sweep's classes: lone surrogates in every portal and app request --------------
PORTAL_WRITES = [("post", "/api/dialogues/9001/states"), ("put", "/api/dialogues/9001"),
                 ("post", "/api/dialogues/9001/suggest"), ("post", "/api/import"),
                 ("post", "/api/vocabulary"), ("put", "/api/dialogues/9001/split")]
PORTAL_READS = ["/api/dialogues/%ED%A0%80", "/api/dialogues/9001?x=%ED%A0%80",
                "/api/values?q=%ED%A0%80", "/api/dialogues?q=%ED%A0%80"]


@pytest.mark.parametrize("route", [f"{m.upper()} {p}" for m, p in PORTAL_WRITES] + PORTAL_READS)
def test_a_lone_surrogate_in_any_portal_request_is_refused_and_the_portal_stays_well(
        route, embedded_release, release_copy):
    from fastapi.testclient import TestClient

    from meditod_hub.apps.annotate.server import LOOPBACK_HOSTS, PortalSettings, create_app

    release = release_copy(embedded_release)
    client = TestClient(create_app(PortalSettings(source=release, allowed_hosts=LOOPBACK_HOSTS)),
                        base_url="http://127.0.0.1", raise_server_exceptions=False)
    before = digests([release])
    method, path = route.split(" ") if " " in route else ("GET", route)
    body = r'{"text": "a \ud800", "labels": [["\ud800"]], "values": ["\ud800"], "split": "\ud800"}'
    answer = client.request(method, path, content=body if method != "GET" else None,
                            headers={"Content-Type": "application/json"})
    opened = client.get("/api/dialogues/9001")
    handled = (400, 404, 422) + ((200,) if method == "GET" else ())  # an unused query: ignored
    kind = "clear" if answer.status_code in handled and opened.status_code == 200 \
        else "traceback" if answer.status_code >= 500 or opened.status_code != 200 else "silent"
    if digests([release]) != before:
        kind = "data lost or exposed"
    record(f"annotate: a lone surrogate in {route}", kind)
    assert kind == "clear", (answer.status_code, answer.text[:300], opened.status_code)


@pytest.mark.parametrize("where", ["the message", "the chat history the browser sends"])
def test_a_lone_surrogate_in_an_app_request_is_no_turn_and_no_traceback(where, tmp_path):
    from meditod_hub.apps import webapp

    assistant = echo_assistant()
    history = webapp.opening_history()
    message = "a \ud800"
    if where != "the message":
        history = [*history, {"role": "user", "content": "a \ud800"}]
        message = "I cough."
    try:
        outputs = webapp.respond(assistant, tmp_path, message, history, None, True)
    except Exception as exc:  # noqa: BLE001 - what a user would see as a broken page
        record(f"app: a lone surrogate in {where}", "traceback")
        raise AssertionError(f"the handler raised {exc!r}") from None
    status = outputs[-1]
    if where == "the message":
        kind = "clear" if status.startswith("Nothing sent:") and "not UTF-8 text" in status \
            else "silent"
    else:  # the turn is the patient's new line; every saved transcript is UTF-8 text
        saved = [p.read_bytes().decode("utf-8") for p in tmp_path.rglob("*") if p.is_file()]
        kind = "clear" if all("\ud800" not in text for text in saved) else "data lost or exposed"
    record(f"app: a lone surrogate in {where}", kind)
    assert kind == "clear", status
