"""`make`: targets and variables the shell must not misread.

Part of the failure sweep (tests/test_failure_*.py): each case must end in a clear error
(non-zero exit, a one-line `error:` that is not an "unexpected" failure), never a traceback,
a silent success, a lost file or a secret in the output; helpers.py keeps the sweep table.
Offline, CPU.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from helpers import (
    record,
)

from meditod_hub.data.manifest import verify_manifest

PROJECT = Path(__file__).resolve().parent.parent


# --- make --------------------------------------------------------------------------------------

def test_make_train_without_a_model_says_what_to_give():
    done = subprocess.run(["make", "-s", "-o", "setup", "train", "TASK=nlu"], cwd=PROJECT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "make train needs MODEL=<recipes folder>" in done.stderr
    record("make: train without MODEL", "clear")


def test_make_targets_take_paths_with_spaces(tmp_path):
    out = tmp_path / "with space" / "meditod"
    done = subprocess.run(["make", "-s", "-o", "setup", "build", f"DATA={out}"], cwd=PROJECT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert verify_manifest(out)


# --- issue 26: a make variable the shell would read as a quote's end or a command ----------------
@pytest.mark.parametrize("assignment", ['SOURCE=x"; touch {pwned}; "', "DATA=$(shell touch {pwned})",
                                        "OUT=a`touch {pwned}`", "SOURCE=a\\b", "REPO=org/$x"])
def test_make_refuses_a_value_that_would_break_its_quotes_and_runs_nothing(assignment, tmp_path):
    """(before: SOURCE='x"; ...' ended the recipe's quotes and ran the rest as a command)"""
    pwned = tmp_path / "pwned"
    name, value = assignment.format(pwned=pwned).split("=", 1)
    done = subprocess.run(["make", "-s", "-o", "setup", "build", f"{name}={value}"], cwd=PROJECT,
                          capture_output=True, text=True, timeout=60)
    kind = "data lost or exposed" if pwned.exists() else \
        "clear" if done.returncode != 0 and len(done.stderr.strip().splitlines()) == 1 else "silent"
    record(f"make: {name} holding a quote, $, ` or \\", kind)
    assert kind == "clear", done.stderr
    assert f"{name} holds a \", $, ` or \\" in done.stderr and "rename that path" in done.stderr
