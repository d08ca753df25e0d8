"""The annotation portal and the app: hostile requests are refused, the portal stays well.

Part of the failure sweep (tests/test_failure_*.py): each case must end in a clear error
(non-zero exit, a one-line `error:` that is not an "unexpected" failure), never a traceback,
a silent success, a lost file or a secret in the output; helpers.py keeps the sweep table.
Offline, CPU.
"""

from __future__ import annotations

import json
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


# --- issue 36, the battery's portal: deep JSON, NaN and lone surrogates, saved or sent -----------
DEEP = "[" * 100_000 + "]" * 100_000
SAVED_VOCABULARIES = {
    "deep JSON": '{"values": ' + DEEP + "}",
    "NaN as a value": '{"values": ["cough", NaN]}',
    "NaN as the values": '{"values": NaN}',
    "a lone surrogate": '{"values": ["cough \\ud800"]}',
    "a number as a value": '{"values": [1]}',
    # issue 46: numbers past a double or a 64-bit integer (Python read 1e400 as inf: a 500)
    "1e400 as a value": '{"values": ["cough", 1e400]}',
    "a 5000-digit integer": '{"values": [' + "9" * 5000 + "]}",
}
SENT_BODIES = {"deep JSON": DEEP, "NaN": '{"text": NaN, "name": "v.json"}',
               "Infinity": '{"text": "cough", "name": "v.json", "x": -Infinity}',
               "1e400": '{"text": "cough", "name": "v.json", "x": 1e400}',
               "-1e400": '{"text": "cough", "name": "v.json", "x": [-1e400]}',
               "an integer past 64 bits": '{"text": "cough", "name": "v.json", "x": ' + "9" * 30 + "}",
               "a 5000-digit integer": '{"text": "cough", "name": "v.json", "x": ' + "9" * 5000 + "}"}
# (what is sent, route): every write route, and the vocabulary files the loading route reads
SENT = [(case, f"{m.upper()} {p}") for case in SENT_BODIES for m, p in PORTAL_WRITES] + [
    (case, "POST /api/vocabulary") for case in ("a deep vocabulary file",
                                                "a vocabulary file with a lone surrogate")]
SENT_BODIES.update({"a deep vocabulary file": json.dumps({"text": DEEP, "name": "v.json"}),
                    "a vocabulary file with a lone surrogate": json.dumps(
                        {"text": '["cough \\ud800"]', "name": "v.json"})})


def _portal(release):
    from fastapi.testclient import TestClient

    from meditod_hub.apps.annotate.server import LOOPBACK_HOSTS, PortalSettings, create_app

    return TestClient(create_app(PortalSettings(source=release, allowed_hosts=LOOPBACK_HOSTS)),
                      base_url="http://127.0.0.1", raise_server_exceptions=False)


@pytest.mark.parametrize("case", SAVED_VOCABULARIES)
def test_a_damaged_vocabulary_json_is_named_never_a_500(case, embedded_release, release_copy):
    """Before: each gave a 500 with a traceback on every page that lists values."""
    release = release_copy(embedded_release)
    (release / "vocabulary.json").write_text(SAVED_VOCABULARIES[case])
    answer = _portal(release).get("/api/values")
    kind = "clear" if answer.status_code == 400 and "vocabulary.json" in answer.text \
        else "traceback" if answer.status_code >= 500 else "silent"
    record(f"annotate: vocabulary.json holding {case}", kind)
    assert kind == "clear", (answer.status_code, answer.text[:300])


@pytest.mark.parametrize("case,route", SENT)
def test_deep_json_and_nan_in_any_portal_request_are_refused(case, route, embedded_release,
                                                             release_copy):
    release = release_copy(embedded_release)
    client = _portal(release)
    before = digests([release])
    method, path = route.split(" ")
    answer = client.request(method, path, content=SENT_BODIES[case],
                            headers={"Content-Type": "application/json"})
    opened = client.get("/api/values")
    kind = "clear" if answer.status_code in (400, 404, 422) and opened.status_code == 200 \
        else "traceback" if answer.status_code >= 500 or opened.status_code != 200 else "silent"
    if digests([release]) != before:
        kind = "data lost or exposed"
    record(f"annotate: {case} in {route}", kind)
    assert kind == "clear", (answer.status_code, answer.text[:300], opened.status_code)
