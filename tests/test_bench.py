"""Every bench runs in its quick mode (`--quick`, what `make bench-quick` runs), so a broken bench
fails the suite. Quick figures mean nothing; nothing here asserts a speed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent.parent
BENCHES = sorted(p.stem for p in (PROJECT / "bench").glob("bench_*.py"))
# they train, or run trained or real models: slow
TRAINS = {"bench_train", "bench_assistant", "bench_real_model", "bench_harness",
          "bench_curves", "bench_cpu_step", "bench_seeds"}
# they measure trained runs (`--runs`: the tiny runs here; make bench runs them on the tiny runs
# and the demo's runs, when made)
ON_RUNS = ("bench_assistant", "bench_turn_latency")


def run_quick(name: str, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(PROJECT), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, str(PROJECT / "bench" / f"{name}.py"), "--quick",
                           *extra], cwd=PROJECT, env=env, capture_output=True, text=True,
                          timeout=1200)


def test_the_makefile_runs_every_bench():
    makefile = (PROJECT / "Makefile").read_text()
    listed = makefile.split("BENCHES := ", 1)[1].splitlines()[0].split()
    assert sorted([*(f"bench_{b}" for b in listed), *ON_RUNS]) == BENCHES


@pytest.mark.parametrize("name", [pytest.param(b, marks=pytest.mark.slow) if b in TRAINS else b
                                  for b in BENCHES if b not in ON_RUNS])
def test_bench_runs_quick(name):
    """The real-model benches' --quick runs a tiny stand-in base (bench/kit.py's base_model): no
    SmolLM2 is converted or loaded here."""
    done = run_quick(name)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip(), "a bench prints its figures"


@pytest.mark.slow
@pytest.mark.parametrize("name", ON_RUNS)
def test_a_bench_on_trained_runs_runs_quick(name, tiny_runs):
    done = run_quick(name, "--runs", str(tiny_runs))
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip()
