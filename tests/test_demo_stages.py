"""`make demo`'s stage runner (scripts/demo.py): a stage's output, whoever writes it (Python, a
library's C code, a child process), goes to its log and not to the terminal; a failing stage ends
the demo with the log's last lines and gives the terminal back; the profile and precision are
checked before any work. Each case runs in its own process, whose file descriptors are real (as
under `make demo`; pytest's capture replaces `sys.stdout`). The whole demo runs in
tests/test_docs.py (its smoke profile)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
STAGE = """
import os, subprocess, sys
from pathlib import Path
sys.path.insert(0, {scripts!r})
import demo
demo.LOGS = Path({logs!r})

def writes(words):
    print("python stdout", *words)
    print("python stderr", file=sys.stderr)
    os.write(1, b"fd 1\\n")
    os.write(2, b"fd 2\\n")
    subprocess.run([sys.executable, "-c", "print('child process')"], check=True)
    print("\\n".join(f"line {{i}}" for i in range(30)))
    print("error: the real reason")
    {ending}

try:
    demo.stage("writer", writes, ["a", "b"], verbose={verbose})
finally:
    print("after the stage", flush=True)
"""
LINES = ("python stdout a b", "python stderr", "fd 1", "fd 2", "child process")


def run_stage(tmp_path: Path, ending: str = "return 0", verbose: bool = False):
    code = STAGE.format(scripts=str(SCRIPTS), logs=str(tmp_path), ending=ending, verbose=verbose)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=120)


def test_a_stage_s_output_goes_to_its_log_only(tmp_path):
    done = run_stage(tmp_path)
    assert done.returncode == 0, done.stderr
    log = (tmp_path / "writer.log").read_text()
    assert all(line in log for line in LINES)
    assert done.stdout == "after the stage\n"  # the terminal is given back after the stage
    assert done.stderr.startswith("[") and "writer" in done.stderr
    assert done.stderr.rstrip().endswith(" s") and not any(x in done.stderr for x in LINES)


def test_verbose_shows_a_stage_s_output_and_keeps_its_log(tmp_path):
    done = run_stage(tmp_path, verbose=True)
    assert done.returncode == 0, done.stderr
    assert all(line in (tmp_path / "writer.log").read_text() for line in LINES)
    assert all(line in done.stderr for line in LINES)


@pytest.mark.parametrize("ending", ["return 2", "sys.exit(3)"])
def test_a_failing_stage_ends_the_demo_with_its_log_s_last_lines(tmp_path, ending):
    done = run_stage(tmp_path, ending=ending)
    assert done.returncode == 1
    assert f"FAILED; the end of {tmp_path / 'writer.log'}" in done.stderr
    assert done.stderr.rstrip().endswith("error: the real reason") and "line 29" in done.stderr
    assert "line 5\n" not in done.stderr  # the last lines, not the whole log
    assert done.stdout == "after the stage\n"


@pytest.mark.parametrize("flags", [["--profile", "quick"], ["--precision", "fp16"]])
def test_an_unknown_profile_or_precision_stops_before_any_work(flags, capsys, monkeypatch):
    sys.path.insert(0, str(SCRIPTS))
    import demo

    monkeypatch.setattr(demo.shutil, "rmtree", lambda *a, **k: pytest.fail("removed out/demo"))
    with pytest.raises(SystemExit) as stop:
        demo.main(flags)
    assert stop.value.code == 2
    assert "invalid choice" in capsys.readouterr().err
