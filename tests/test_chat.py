"""`meditod chat`: piped input gives a transcript (the opening, then each patient line and its one
doctor line), commands, clean endings.

Offline, CPU; scripted backends for the protocol, the tiny trained runs for the real command.
"""

from __future__ import annotations

import io
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from chat_server import ChatServer
from helpers import echo_assistant, served_runs

from meditod_hub.apps.assistant import OPENING_LINE
from meditod_hub.apps.chat import converse, turn_report
from meditod_hub.commands import chat as chat_command
from meditod_hub.errors import run_main

pytestmark = pytest.mark.usefixtures("one_thread")

PROJECT = Path(__file__).resolve().parent.parent
LINES = ["I have had a cough for ten days.", "", "x" * 20_000, "Tengo tos", "🤒🤧😷"]


def test_piped_lines_read_as_a_transcript_and_commands_work():
    out = io.StringIO()
    script = "\n".join(LINES[:2] + ["/state", "/reset", LINES[3], "/quit", "never read"]) + "\n"
    replies = converse(echo_assistant(), io.StringIO(script), out, show_state=False,
                       interactive=False)
    lines = out.getvalue().splitlines()
    assert replies == 2
    reply, opening = "doctor: Any fever? And chills?", f"doctor: {OPENING_LINE}"
    assert lines[:3] == [opening, f"patient: {LINES[0]}", reply]
    assert [line for line in lines if line.startswith("doctor:")] == [opening, reply, opening, reply]
    assert lines[-2:] == [f"patient: {LINES[3]}", reply]
    state = lines[3:lines.index(opening, 1)]
    assert state[:2] == ["  state:", "    + symptom: cough (yes)"]
    assert "  actions: inquire symptom: fever" in state


def test_a_blank_line_is_no_turn_and_the_prompt_comes_again(capsys):
    """An empty or whitespace-only line reaches no model and gets no reply: the prompt again."""
    out = io.StringIO()
    replies = converse(echo_assistant(), io.StringIO("\n   \t\nI cough.\n \n"), out,
                       show_state=False, interactive=True)
    assert replies == 1 and out.getvalue().count("doctor: ") == 1 + 1  # the opening, one reply
    assert capsys.readouterr().err.count("patient> ") == 5  # asked again after each blank line


def test_show_state_prints_the_report_after_every_reply():
    out = io.StringIO()
    converse(echo_assistant(), io.StringIO("a\nb\n"), out, show_state=True, interactive=False)
    text = out.getvalue()
    assert text.count("doctor:") == 3 and text.count("  state:") == 2
    assert text.count("  parse: NLU ok, POL ok, NLG ok") == 2
    assert turn_report(None) == ["  (no turn yet)"]


def chat(runs: Path, *flags: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "meditod_hub.cli", "chat", "--nlu", str(runs / "nlu"), "--pol",
         str(runs / "pol"), "--nlg", str(runs / "nlg"), *flags], cwd=PROJECT, text=True,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)


def test_the_command_answers_every_piped_line_and_ends_at_eof(tiny_runs):
    process = chat(tiny_runs, "--show_state")
    out, err = process.communicate("\n".join(LINES) + "\n", timeout=600)
    assert process.returncode == 0, err[-2000:]
    # what the models were trained on, from their runs, before the first line
    assert "(NLU, POL and NLG trained on the kit's embedded synthetic sample (10 dialogues" in err
    replies = [line for line in out.splitlines() if line.startswith("doctor: ")][1:]  # the opening
    said = [line for line in LINES if line.strip()]  # a blank line is no turn
    assert len(replies) == len(said) and all(len(r) > len("doctor: ") for r in replies)
    assert out.count("  state:") == len(said)
    assert "was cut to its first 2000 characters" in out
    assert "Traceback" not in err


def test_ctrl_c_ends_the_conversation_cleanly(tiny_runs):
    # Ctrl+C as a terminal delivers it: a suite started in the background (`make test &`) passes
    # its children SIGINT ignored, and Python keeps an ignored SIGINT ignored
    process = chat(tiny_runs, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    process.stdin.write("I have had a cough for ten days.\n")
    process.stdin.flush()
    assert process.stdout.readline().startswith("doctor: ")  # the opening
    assert process.stdout.readline().startswith("patient: ")  # the line, echoed
    first = process.stdout.readline()  # the reply: the loop is now waiting for the next line
    process.send_signal(signal.SIGINT)
    # stdin stays open until the process has ended: closed at once (as communicate() closes it),
    # the chat could read the end of input before Python runs the signal's handler, and end at
    # EOF instead of at Ctrl+C
    process.wait(timeout=120)
    out, err = process.communicate()
    assert first.startswith("doctor: ")
    assert process.returncode == 0 and "(conversation ended)" in err
    assert "Traceback" not in err


def test_an_endpoint_that_never_answers_stops_the_chat_at_its_timeout(tmp_path, monkeypatch,
                                                                      capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO("I have had a cough for ten days.\n"))
    with ChatServer(faults=["hang"] * 20) as server:
        start = time.monotonic()
        code = run_main(chat_command.main, [*served_runs(tmp_path), "--endpoint", server.url,
                                            "--timeout", "2"])
        seconds = time.monotonic() - start
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and seconds < 30, (seconds, err)
    assert err[-1].startswith("error: 127.0.0.1:") and "--timeout 2 s" in err[-1], err
