"""How every command fails: one line that names the file, id or setting and says what to do.

`MeditodError` is the base of every failure a user can fix (a bad release, a missing run, an
endpoint that does not answer). `run_main` is the one place that turns it, and the other known
failures, into that line and an exit code; a Python traceback appears only with `--debug` or
`MEDITOD_DEBUG=1`. Messages never quote dialogue text or label values, only names and ids.

Exit codes (every command, `meditod ...`, `python -m meditod_hub.X` and `python meditod.py`):
0 done; 1 failed (the message says why); 2 usage (an unknown flag or a bad value); 130 interrupted.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
DEBUG_FLAG, DEBUG_ENV = "--debug", "MEDITOD_DEBUG"


class MeditodError(Exception):
    """A failure the user can fix; its message is the whole report (one line, two at most)."""


class UsageError(MeditodError):
    """A setting that cannot work (a negative timeout, a path that is a file): exit code 2."""


def name_ids(ids: Sequence[str], shown: int = 20) -> str:
    """The first ids of a list, for an error message."""
    head = ", ".join(ids[:shown])
    return head + (f" (and {len(ids) - shown} more)" if len(ids) > shown else "")


def debug_requested(argv: list[str] | None) -> bool:
    return DEBUG_FLAG in (argv or []) or os.environ.get(DEBUG_ENV, "") not in ("", "0")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else "(no message)"


def run_main(main: Callable[[list[str]], int], argv: list[str] | None = None) -> int:
    """Run a command's `main(argv)`; known failures become one line on stderr and an exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = debug_requested(argv)
    argv = [a for a in argv if a != DEBUG_FLAG]
    try:
        return main(argv)
    except KeyboardInterrupt:
        print("interrupted: nothing was left half-written (rerun the same command to go on)",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    except UsageError as exc:
        if debug:
            raise
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except MeditodError as exc:
        if debug:
            raise
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except SystemExit:
        raise
    except Exception as exc:  # noqa: BLE001 - the one place unknown failures are reported
        if debug:
            raise
        print(f"error: unexpected {type(exc).__name__}: {_first_line(exc)} (rerun with {DEBUG_FLAG} "
              f"or {DEBUG_ENV}=1 for the traceback, and report it)", file=sys.stderr)
        return EXIT_FAILED
