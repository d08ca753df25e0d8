"""Shared test helpers: the failure sweep's case runner and its tally.

`run_case` runs one command in process the way a user would meet it and classifies the outcome:
clear (non-zero exit, one `error:` line that is not an "unexpected" failure; a release's
problems may follow, one line each), traceback, silent (exit 0 on a bad input), or data lost or
exposed (a protected file changed, or a secret appeared in the output or in a written file).
Every case lands in `SWEEP`, which conftest prints as the sweep table.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from meditod_hub.errors import run_main

PROGRESS = re.compile(r"\d+%\|")  # a progress bar's line (tqdm), not a message
SWEEP: list[tuple[str, str]] = []  # (case, outcome), printed by conftest's terminal summary
KINDS = ("clear", "traceback", "silent", "data lost or exposed")


def digests(paths: Iterable) -> dict[str, str]:
    """sha256 of every file under `paths` (files or folders; absent ones count as empty)."""
    out = {}
    for root in paths:
        root = Path(root)
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file()) \
            if root.exists() else []
        out.update({str(f): hashlib.sha256(f.read_bytes()).hexdigest() for f in files})
    return out


def _exposed(secrets: Iterable[str], texts: Iterable[str], written: Iterable) -> bool:
    secrets = [s for s in secrets if s]
    if not secrets:
        return False
    if any(s in t for s in secrets for t in texts):
        return True
    for root in written:
        root = Path(root)
        for f in ([root] if root.is_file() else root.rglob("*") if root.is_dir() else []):
            if f.is_file() and any(s.encode() in f.read_bytes() for s in secrets):
                return True
    return False


@dataclass
class Outcome:
    code: int
    err: str
    out: str
    kind: str  # one of KINDS


def classify(code: int, out: str, err: str, changed: bool, exposed: bool) -> str:
    lines = [line for line in err.strip().splitlines()
             if line.strip() and not line.startswith(("warning:", "  "))
             and not PROGRESS.search(line)]
    if changed or exposed:
        return "data lost or exposed"
    if code == 0:
        return "silent"
    if not lines or "Traceback" in err or lines[-1].startswith("error: unexpected") \
            or not lines[-1].startswith("error: ") or len(lines) > 2:
        return "traceback"
    return "clear"


def run_case(name: str, main: Callable, argv: list, capsys, protect=(), secrets=(),
             written=()) -> Outcome:
    """Run one command in process and classify what a user would see."""
    before = digests(protect)
    code = run_main(main, [str(a) for a in argv])
    captured = capsys.readouterr()
    kind = classify(code, captured.out, captured.err, digests(protect) != before,
                    _exposed(secrets, (captured.out, captured.err), written))
    SWEEP.append((name, kind))
    return Outcome(code, captured.err, captured.out, kind)


def record(name: str, kind: str) -> None:
    """A case whose outcome a test established by other means (a subprocess, a browser)."""
    assert kind in KINDS, kind
    SWEEP.append((name, kind))


def expect(outcome: Outcome, *phrases: str, code: int | None = None) -> None:
    assert outcome.kind == "clear", (outcome.kind, outcome.err[-2000:], outcome.out[-500:])
    for phrase in phrases:
        assert phrase in outcome.err, outcome.err[-2000:]
    if code is not None:
        assert outcome.code == code, outcome.err


def sweep_table(sweep: list[tuple[str, str]]) -> list[str]:
    kinds = [kind for _, kind in sweep]
    return ["| cases | clear | tracebacks | silent | data lost or exposed |",
            "|---|---|---|---|---|",
            f"| {len(kinds)} | " + " | ".join(str(kinds.count(k)) for k in KINDS) + " |"]
