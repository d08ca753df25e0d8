"""requirements.lock: what `make setup` and CI install is what the tests run against."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT / "scripts"))

import lock  # noqa: E402  (scripts/lock.py: `make lock`)


def frozen() -> dict[str, str]:
    """`pip freeze` of this interpreter: {canonical name: version without a local label}."""
    done = subprocess.run([sys.executable, "-m", "pip", "freeze", "--all"], capture_output=True,
                          text=True, timeout=120, check=True)
    pins = {}
    for line in done.stdout.splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.split("==", 1)
            pins[canonicalize_name(name)] = version.split("+", 1)[0]
    return pins


def test_the_installed_versions_are_the_locked_ones():
    locked, installed = lock.read_lock(PROJECT / "requirements.lock"), frozen()
    differ = {name: (version, installed.get(name)) for name, version in locked.items()
              if installed.get(name) != version}
    assert not differ, f"installed != requirements.lock (locked, installed): {differ}"


def test_the_lock_covers_the_projects_dependency_closure():
    """A dependency added to pyproject.toml without `make lock` would install unpinned."""
    locked, needed = lock.read_lock(PROJECT / "requirements.lock"), lock.closure()
    assert set(needed) - set(locked) == set(), "run `make lock`"
    assert {"torch", "transformers", "trl", "datasets", "gradio", "pytest"} <= set(locked)
    assert (PROJECT / "requirements.lock").read_text() == lock.render(locked)  # as `make lock` writes


def test_setup_installs_from_the_lock_torch_first():
    done = subprocess.run(["make", "-n", "-B", "setup"], cwd=PROJECT, capture_output=True,
                          text=True, timeout=60)  # -n: prints the commands, runs none
    installs = [line for line in done.stdout.splitlines() if " pip install " in line]
    assert installs[-2:] == [".venv/bin/python -m pip install -q -c requirements.lock torch",
                             ".venv/bin/python -m pip install -qq -c requirements.lock -e '.[test]'"]
    assert "sed" not in (PROJECT / "Makefile").read_text()


def test_lightevals_venv_installs_from_its_own_lock_torch_first_and_the_kit_without_deps():
    """`make harness-env`: lighteval's venv, pinned by requirements-lighteval.lock, which pins
    every root it names (as `make harness-lock` writes it) and none of the kit's conflicting
    pins (nltk 3.9.1 there, 3.10 here)."""
    done = subprocess.run(["make", "-n", "-B", "harness-env"], cwd=PROJECT, capture_output=True,
                          text=True, timeout=60)
    installs = [line for line in done.stdout.splitlines() if " pip install " in line]
    lock_file = "requirements-lighteval.lock"
    assert installs[1] == f".venv-lighteval/bin/python -m pip install -q -c {lock_file} torch"
    assert installs[-1] == ".venv-lighteval/bin/python -m pip install -qq --no-deps -e ."
    roots = [Requirement(r.strip("'")) for r in installs[2].split(f"-c {lock_file} ", 1)[1].split()]
    pins = lock.read_lock(PROJECT / lock_file)
    for root in roots:
        assert root.specifier.contains(pins[canonicalize_name(root.name)]), (root, pins)
    header = (PROJECT / lock_file).read_text().splitlines()[0]
    assert header == lock.ROOTS_HEADER.splitlines()[0].format(roots=", ".join(map(str, roots)))
    assert pins["nltk"] != lock.read_lock(PROJECT / "requirements.lock")["nltk"]


@pytest.mark.slow
def test_installing_the_package_prints_no_setuptools_banner(tmp_path):
    """Issue 25: `make setup` printed ~40 lines of setuptools warnings: static/ was an importable
    folder missing from pyproject's packages (fixed there), and the editable-install notice (-qq,
    which keeps errors). The same build as `pip install -q .` makes, with its warnings shown."""
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                           "-q", "-w", str(tmp_path), str(PROJECT)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    banner = [line for line in (done.stdout + done.stderr).splitlines()
              if "Warning" in line or "****" in line]
    assert not banner, "\n".join(banner)


def test_local_version_labels_are_not_locked():
    assert "+" not in (PROJECT / "requirements.lock").read_text()
