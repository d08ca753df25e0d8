"""The Gradio app: settings, handlers, privacy, and the real thing in a headless browser.

Offline: the browser is Debian's chromium (/usr/bin/chromium), driven by Playwright (never
`playwright install`); every request that would leave 127.0.0.1 is blocked and must not happen.
The app runs the tiny runs trained in this session on the embedded synthetic sample. Outside CI
the browser test skips when chromium or playwright is missing; under CI=true it fails instead.
`make screenshot` reruns it with MEDITOD_SCREENSHOT=docs/assistant.png (the README's picture).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from helpers import CHROMIUM, CHROMIUM_ARGS, browser_or_skip, free_port, scripted_assistant

from meditod_hub.apps import webapp
from meditod_hub.apps.assistant import OPENING_LINE
from meditod_hub.commands import app as app_cmd
from meditod_hub.errors import UsageError
from meditod_hub.files import RECORD

pytestmark = pytest.mark.usefixtures("one_thread")

PROJECT = Path(__file__).resolve().parent.parent


# --- settings ------------------------------------------------------------------------------------
def test_models_come_from_the_environment_then_the_settings_file_then_the_tiny_runs(tmp_path):
    for task in ("nlu", "pol", "nlg"):
        (tmp_path / "runs" / "tiny-llama" / task).mkdir(parents=True)
    (tmp_path / "models" / "pol").mkdir(parents=True)
    (tmp_path / webapp.SETTINGS_FILE).write_text(json.dumps(
        {"pol": {"source": "models/pol"}, "nlg": {"source": "org/nlg", "revision": "v2"}}))
    settings = webapp.settings({"MEDITOD_NLU": "org/nlu", "MEDITOD_NLU_REVISION": "abc",
                                "MEDITOD_NLG_FAMILY": "flan-t5"}, tmp_path)
    nlu, pol, nlg = settings.specs.values()
    assert (nlu.source, nlu.revision) == ("org/nlu", "abc")
    assert pol.source == str(tmp_path / "models" / "pol")
    assert (nlg.source, nlg.revision, nlg.family) == ("org/nlg", "v2", "flan-t5")
    assert settings.save_dir is None
    (tmp_path / webapp.SETTINGS_FILE).unlink()
    defaults = webapp.settings({webapp.SAVE_DIR_ENV: str(tmp_path / "kept")}, tmp_path)
    assert [s.source for s in defaults.specs.values()] == [str(tmp_path / "runs" / "tiny-llama" / t)
                                                  for t in ("nlu", "pol", "nlg")]
    assert defaults.save_dir == tmp_path / "kept"
    with pytest.raises(UsageError, match="make tiny-runs"):
        webapp.settings({}, tmp_path / "elsewhere")


# --- handlers ------------------------------------------------------------------------------------
def assistant_for_app():
    def answer(task, row):
        if task == "nlu":
            value = "cough" if "cough" in row["patient_text"] else "fever"
            return [{"intent": "inform", "slots": {"negative_symptom" if "no " in
                     row["patient_text"] else "positive_symptom": [{"value": value}]}}], True
        return ([{"action": "inquire"}], True) if task == "pol" else ("Since when?", True)
    return scripted_assistant(answer)[0]


def test_a_message_updates_chat_state_actions_and_status_and_reset_clears_them(tmp_path,
                                                                                monkeypatch):
    monkeypatch.chdir(tmp_path)
    assistant = assistant_for_app()
    text, history, conversation, state, actions, status = webapp.respond(
        assistant, None, "I cough", None, None, save=True)  # ticked, but no save folder
    assert text == "" and history == [{"role": "assistant", "content": OPENING_LINE},
                                      {"role": "user", "content": "I cough"},
                                      {"role": "assistant", "content": "Since when?"}]
    assert 'data-entries="1"' in state and 'data-polarity="yes"' in state
    assert actions == "1. inquire" and status.startswith("Turn 1: NLU parsed")
    _, history, conversation, state, actions, _ = webapp.respond(
        assistant, None, "no fever", history, conversation, save=False)
    assert len(history) == 5 and 'data-polarity="no"' in state and 'data-entries="2"' in state
    assert actions == "1. inquire\n2. inquire", "every turn's actions, not only the last's"
    assert webapp.reset() == ("", webapp.opening_history(), None, *webapp.panels(None))
    assert list(tmp_path.iterdir()) == [], "nothing is stored without a save folder"


def test_a_no_badge_reads_as_no_not_as_deleted(tmp_path):
    """Issue 25: the state panel's "− no" badge was struck through, which reads as "deleted"."""
    from playwright.sync_api import sync_playwright

    from meditod_hub.apps.state_view import STATE_CSS, state_html

    browser_or_skip()
    state = {"positive_symptom": [{"value": "coughing"}], "negative_symptom": [{"value": "fever"}]}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page()
        page.set_content(f"<style>{STATE_CSS}</style>{state_html(state)}")
        style = """b => { const s = getComputedStyle(b); return [s.textDecorationLine, s.color,
                          s.backgroundColor, s.boxShadow, b.textContent]; }"""
        yes = page.locator('[data-polarity="yes"] .badge').evaluate(style)
        no = page.locator('[data-polarity="no"] .badge').evaluate(style)
        browser.close()
    assert no[0] == "none" and yes[0] == "none", no
    assert no[4] == "− no" and no[1:3] != yes[1:3] and no[3] != "none"  # its own colours, outlined


def test_transcripts_are_written_only_when_the_user_opts_in(tmp_path):
    assistant, kept = assistant_for_app(), tmp_path / "kept"
    *_, conversation, _, _, _ = webapp.respond(assistant, kept, "I cough", None, None, save=False)
    assert not kept.exists()
    webapp.respond(assistant, kept, "no fever", None, conversation, save=True)
    [saved] = [p for p in kept.iterdir() if p.name != RECORD]  # and the output guard's record
    transcript = json.loads(saved.read_text())
    assert saved.name == f"{conversation.dialogue_id}.json" and len(transcript["turns"]) == 2
    assert transcript["turns"][1]["patient_text"] == "no fever"


def test_meditod_app_takes_host_and_port(monkeypatch, capsys):
    """Issue 25: `meditod app` had no --host or --port (only Gradio's environment variables)."""
    launched = []
    monkeypatch.setattr(webapp, "settings", lambda base=None: webapp.AppSettings((None,) * 3, None))
    monkeypatch.setattr(webapp.Assistant, "load", staticmethod(lambda *specs: type(
        "Loaded", (), {"loading": []})()))
    monkeypatch.setattr(webapp, "build", lambda assistant, save_dir=None: "demo")
    monkeypatch.setattr(webapp, "launch", lambda demo, **kwargs: launched.append(kwargs))
    assert app_cmd.main(["--host", "0.0.0.0", "--port", "7999"]) == 0
    assert app_cmd.main([]) == 0  # unset: Gradio's own (GRADIO_SERVER_NAME/PORT, else 127.0.0.1:7860)
    assert launched == [{"server_name": "0.0.0.0", "server_port": 7999}, {}]
    with pytest.raises(UsageError, match="--port: must be at most 65535"):
        app_cmd.main(["--port", "70000"])
    capsys.readouterr()


def test_a_blank_or_non_text_message_is_no_turn_and_says_so():
    assistant = assistant_for_app()
    *_, conversation, _, _, _ = webapp.respond(assistant, None, "I cough", None, None, False)
    history = webapp.opening_history()
    for message, why in (("", "blank"), ("  \n ", "blank"), ("a \ud800", "not UTF-8 text")):
        text, after, kept, state, actions, status = webapp.respond(
            assistant, None, message, history, conversation, False)
        assert (text, after, kept) == ("", history, conversation) and len(kept.turns) == 1
        assert status.startswith("Nothing sent:") and why in status
        assert actions == "1. inquire" and 'data-entries="1"' in state
    assert webapp.respond(assistant, None, None, None, None, False)[2] is None


def test_a_save_folder_that_cannot_be_written_is_one_line_at_start_or_on_the_page(tmp_path,
                                                                                  capsys):
    for task in ("nlu", "pol", "nlg"):
        (tmp_path / "runs" / "tiny-llama" / task).mkdir(parents=True)
    (tmp_path / "a-file").write_text("")
    with pytest.raises(UsageError, match="MEDITOD_SAVE_DIR .*a-file is a file: give a folder"):
        webapp.settings({webapp.SAVE_DIR_ENV: str(tmp_path / "a-file")}, tmp_path)
    with pytest.raises(UsageError, match="cannot write there, .*a-file is a file"):
        webapp.settings({webapp.SAVE_DIR_ENV: str(tmp_path / "a-file" / "kept")}, tmp_path)
    # a folder that became a file after the start: the turn is answered, the page says so
    *_, status = webapp.respond(assistant_for_app(), tmp_path / "a-file", "I cough", None, None,
                                save=True)
    assert status.endswith("This conversation could not be saved on the server.")
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("error: MEDITOD_SAVE_DIR: the transcript of chat-")


def test_exports_hold_the_conversation_and_its_tracked_state(tmp_path):
    assistant = assistant_for_app()
    assert webapp.export(None, "json", tmp_path) is None, "nothing to export before a turn"
    *_, conversation, _, _, _ = webapp.respond(assistant, None, "I cough", None, None, False)
    webapp.respond(assistant, None, "no fever", None, conversation, False)
    record = json.loads(Path(webapp.export(conversation, "json", tmp_path)).read_text())
    assert [t["patient_text"] for t in record["turns"]] == ["I cough", "no fever"]
    assert record["turns"][1]["state"] == conversation.state
    assert [t["actions"] for t in record["turns"]] == [[{"action": "inquire"}]] * 2
    text = Path(webapp.export(conversation, "txt", tmp_path)).read_text()
    assert text.index("Patient: I cough") < text.index("Doctor: Since when?") < text.index(
        "Patient: no fever")
    assert "actions: inquire" in text and "+ symptom: cough (yes)" in text
    assert "− symptom: fever (no)" in text


# --- the browser -----------------------------------------------------------------------------------
@pytest.fixture
def app_url(tiny_runs, tmp_path):  # noqa: F811
    browser_or_skip()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEDITOD_", "GRADIO_"))}
    env.update({f"MEDITOD_{t.upper()}": str(tiny_runs / t) for t in ("nlu", "pol", "nlg")},
               GRADIO_SERVER_NAME="127.0.0.1", GRADIO_SERVER_PORT=str(port),
               GRADIO_TEMP_DIR=str(tmp_path / "gradio-tmp"), HF_HUB_OFFLINE="1")
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    log = (tmp_path / "app.log").open("w")
    process = subprocess.Popen([sys.executable, str(PROJECT / "app.py")], cwd=workdir, env=env,
                               stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 300  # model loading on a loaded CI machine; not a speed check
    while True:
        try:
            urllib.request.urlopen(url, timeout=5).close()
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail("the app did not start:\n" + (tmp_path / "app.log").read_text()[-3000:])
            time.sleep(0.5)
    yield url, [workdir, tmp_path / "gradio-tmp"]
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
    log.close()


# a browser wait's limit: it guards against a hang, far above a turn on a loaded CI machine (the
# suite's other workers train and run real models beside it); not a speed check
WAIT_MS = 300_000
# In CI a send has twice gone unanswered under load (the status unchanged for minutes, cause not
# found), where the same test takes 3 s alone. A send the app has not answered (its first answer
# empties the box) is sent again after this long, so a send it took is never repeated.
RESEND_MS = 60_000


def _send(page, text: str, turn: int) -> None:
    """Send the patient's line of turn `turn` and wait for the whole turn (the reply streams in
    before the turn's status and panels are updated)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    box = "#patient-input textarea"
    page.fill(box, text)
    page.click("#send")
    for _ in range(WAIT_MS // RESEND_MS):
        try:
            page.wait_for_function("n => document.querySelector('#turn-status').innerText"
                                   ".includes('Turn ' + n + ':')", arg=turn, timeout=RESEND_MS)
            return
        except PlaywrightTimeout:
            status, typed = page.inner_text("#turn-status"), page.input_value(box)
            if typed == text:  # the app never answered the send
                page.click("#send")
            elif typed == "" and "Nothing sent" in status:  # it got the send without the line
                page.fill(box, text)
                page.click("#send")
    pytest.fail(f"turn {turn} did not finish in {WAIT_MS // 1000} s: the status reads {status!r}, "
                f"the input {typed!r}, the chat {_bot(page)!r}")


def _bot(page) -> list[str]:
    return page.locator('#chat [data-testid="bot"]').all_inner_texts()


def _users(page) -> list[str]:
    return page.locator('#chat [data-testid="user"]').all_inner_texts()


def _entries(page) -> int:
    return int(page.get_attribute("#state-panel .meditod-state", "data-entries"))


def test_the_app_in_a_browser_two_tabs_two_conversations(app_url, embedded_build, tmp_path):
    from datasets import load_dataset
    from playwright.sync_api import sync_playwright

    url, written = app_url
    nlu = list(load_dataset(str(embedded_build), "nlu", split="train"))
    first = {d: next(r["patient_text"] for r in nlu if r["dialogue_id"] == d) for d in ("9001", "9002")}
    blocked = []

    def only_this_machine(route):
        if route.request.url.startswith(url):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    with sync_playwright() as p:
        browser = p.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=str(CHROMIUM), args=CHROMIUM_ARGS,
            headless=True, viewport={"width": 1100, "height": 760})
        browser.route("**/*", only_this_machine)
        one, two = browser.new_page(), browser.new_page()
        for page in (one, two):
            page.goto(url)
            page.wait_for_selector("#patient-input textarea", timeout=WAIT_MS)
            assert "not medical advice" in page.inner_text("#banner")
            # before: "trained on MediTOD (staged English interviews)" for these synthetic runs
            assert "trained on the kit's embedded synthetic sample" in page.inner_text("#banner")
            assert "trained on MediTOD" not in page.inner_text("#banner")
            assert _bot(page) == [OPENING_LINE] and _entries(page) == 0

        _send(one, first["9001"], 1)
        one.wait_for_function("document.querySelector('#state-panel .meditod-state')"
                              ".dataset.entries > 0", timeout=WAIT_MS)
        assert len(_bot(one)) == 2 and _bot(one)[1].strip()
        assert "Turn 1: NLU parsed" in one.inner_text("#turn-status")
        state_one = one.inner_text("#state-panel")

        _send(two, first["9002"], 1)
        assert _users(two) == [first["9002"]] and _users(one) == [first["9001"]]
        _send(one, "No, nothing else.", 2)
        assert len(_users(one)) == 2 and len(_users(two)) == 1, "tabs keep their conversations"
        assert "Turn 1" in two.inner_text("#turn-status")
        assert "Turn 2" in one.inner_text("#turn-status")
        assert two.inner_text("#state-panel") != state_one or _entries(two) == 0

        shot = tmp_path / "assistant.png"
        one.screenshot(path=str(shot))
        if target := os.environ.get("MEDITOD_SCREENSHOT"):
            shutil.copyfile(shot, PROJECT / target)

        one.click("#reset")
        one.wait_for_function("document.querySelectorAll('#chat [data-testid=\"user\"]')"
                              ".length == 0", timeout=WAIT_MS)
        assert _entries(one) == 0 and len(_users(two)) == 1
        browser.close()
    assert blocked == [], "the page asked for something beyond this machine"
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for folder in written:  # nothing of the conversation was stored by the server
        for path in (p for p in folder.rglob("*") if p.is_file()):
            content = path.read_bytes()
            assert first["9001"].encode() not in content and b"nothing else" not in content, path


def test_the_reply_streams_and_the_action_history_and_exports_hold_the_conversation(
        app_url, embedded_build, tmp_path):
    from datasets import load_dataset
    from playwright.sync_api import sync_playwright

    url, _ = app_url
    nlu = [r for r in load_dataset(str(embedded_build), "nlu", split="train")
           if r["dialogue_id"] == "9001"]
    lines = [nlu[0]["patient_text"], nlu[1]["patient_text"]]
    with sync_playwright() as p:
        browser = p.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=str(CHROMIUM), args=CHROMIUM_ARGS,
            headless=True)
        browser.route("**/*", lambda route: route.continue_() if route.request.url.startswith(url)
                      else route.abort())
        page = browser.new_page()
        page.goto(url)
        page.wait_for_selector("#patient-input textarea", timeout=WAIT_MS)
        page.evaluate("""() => { window.seen = [];
            new MutationObserver(() => {
              const bots = document.querySelectorAll('#chat [data-testid="bot"]');
              const text = bots.length > 1 ? bots[bots.length - 1].innerText : null;
              if (text !== null && window.seen[window.seen.length - 1] !== text) window.seen.push(text);
            }).observe(document.querySelector('#chat'),
                       {subtree: true, childList: true, characterData: true}); }""")
        for n, line in enumerate(lines, 1):
            _send(page, line, n)

        def download(button: str, suffix: str) -> str:
            page.click(button)
            page.wait_for_function("s => [...document.querySelectorAll('#export-file a')]"
                                   ".some(a => a.href.endsWith(s))", arg=suffix, timeout=WAIT_MS)
            href = page.eval_on_selector_all("#export-file a", "as => as.map(a => a.href)")
            href = next(h for h in href if h.endswith(suffix))
            with urllib.request.urlopen(href, timeout=30) as response:
                return response.read().decode()

        record = json.loads(download("#export-json", ".json"))
        text = download("#export-text", ".txt")
        # the chat shows each finished reply: its last streamed update may render after the
        # turn's status does, so wait for it (a reply that never completes times out)
        page.wait_for_function("""want => [...document.querySelectorAll('#chat [data-testid="bot"]')]
            .slice(1).map(b => b.innerText.trim()).join('\\n')
            === want.map(w => w.trim()).join('\\n')""",
                               arg=[t["reply"] for t in record["turns"]], timeout=WAIT_MS)
        replies = [r.strip() for r in _bot(page)[1:]]
        seen = [t.strip() for t in page.evaluate("window.seen")]
        first_parts = seen[:seen.index(replies[0])]
        assert any(part and replies[0].startswith(part) and len(part) < len(replies[0])
                   for part in first_parts), f"no partial reply seen before {replies[0]!r}: {seen}"
        history = page.locator("#actions-panel li").all_inner_texts()
        assert len(history) == 2, history
        browser.close()
    assert [t["patient_text"] for t in record["turns"]] == lines
    assert [t["reply"] for t in record["turns"]] == replies
    from meditod_hub.apps.state_view import actions_line

    assert [actions_line(t["actions"]) for t in record["turns"]] == history
    for line, reply in zip(lines, replies):
        assert f"Patient: {line}" in text and f"Doctor: {reply}" in text
