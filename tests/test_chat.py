"""`meditod chat`: piped input gives a transcript (the opening, then each patient line and its one
doctor line), commands, clean endings.

Offline, CPU; scripted backends for the protocol, the tiny trained runs for the real command.
"""

from __future__ import annotations

import io
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import echo_assistant

from meditod_hub.apps.assistant import OPENING_LINE
from meditod_hub.apps.chat import converse, turn_report

pytestmark = pytest.mark.usefixtures("one_thread")

PROJECT = Path(__file__).resolve().parent.parent
LINES = ["I have had a cough for ten days.", "", "x" * 20_000, "Tengo tos", "🤒🤧😷"]


def test_piped_lines_read_as_a_transcript_and_commands_work():
    out = io.StringIO()
    script = "\n".join(LINES[:2] + ["/state", "/reset", LINES[3], "/quit", "never read"]) + "\n"
    replies = converse(echo_assistant(), io.StringIO(script), out, show_state=False,
                       interactive=False)
    lines = out.getvalue().splitlines()
    assert replies == 3
    reply, opening = "doctor: Any fever? And chills?", f"doctor: {OPENING_LINE}"
    assert lines[:5] == [opening, f"patient: {LINES[0]}", reply, "patient: ", reply]
    assert [line for line in lines if line.startswith("doctor:")] == [opening, reply, reply, opening, reply]
    assert lines[-2:] == [f"patient: {LINES[3]}", reply]
    state = lines[5:lines.index(opening, 1)]
    assert state[:2] == ["  state:", "    + symptom: cough (yes)"]
    assert "  actions: inquire symptom: fever" in state


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
    replies = [line for line in out.splitlines() if line.startswith("doctor: ")][1:]  # the opening
    assert len(replies) == len(LINES) and all(len(r) > len("doctor: ") for r in replies)
    assert out.count("  state:") == len(LINES)
    assert "was cut to its first 2000 characters" in out
    assert "Traceback" not in err


def test_ctrl_c_ends_the_conversation_cleanly(tiny_runs):
    process = chat(tiny_runs)
    process.stdin.write("I have had a cough for ten days.\n")
    process.stdin.flush()
    assert process.stdout.readline().startswith("doctor: ")  # the opening
    assert process.stdout.readline().startswith("patient: ")  # the line, echoed
    first = process.stdout.readline()  # the reply: the loop is now waiting for the next line
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert first.startswith("doctor: ")
    assert process.returncode == 0 and "(conversation ended)" in err
    assert "Traceback" not in err
