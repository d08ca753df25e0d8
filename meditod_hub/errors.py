"""How every command fails: one line that names the file, id or setting and says what to do.

`MeditodError` is the base of every failure a user can fix (a bad release, a missing run, an
endpoint that does not answer). `run_main` is the one place that turns it, and the other known
failures, into that line and an exit code; a Python traceback appears only with `--debug` or
`MEDITOD_DEBUG=1`. Messages never quote dialogue text or label values, only names and ids.

Exit codes (every command, `meditod ...`, `python -m meditod_hub.commands.X` and `python meditod.py`):
0 done; 1 failed (the message says why); 2 usage (an unknown flag or a bad value); 130 interrupted.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable, Sequence

from meditod_hub import quiet

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


# What to do about the OS errors a user can fix, by errno.
OS_HINTS = {errno.ENOSPC: "the disk is full: free some space and rerun",
            errno.EDQUOT: "the disk quota is used up: free some space and rerun",
            errno.EACCES: "no permission: choose a path you can write, or fix its permissions",
            errno.EPERM: "no permission: choose a path you can write, or fix its permissions",
            errno.EROFS: "a read-only file system: choose another path",
            errno.ENOENT: "no such file or folder: check the path",
            errno.EISDIR: "a folder where a file belongs: give a file path",
            errno.ENOTDIR: "a file where a folder belongs: give a folder path",
            errno.EEXIST: "already exists: remove it or choose another path"}
FILE_LOCALS = ("path", "model_path", "file", "filename", "folder", "source", "out", "target")


def _file_in_flight(exc: BaseException) -> str | None:
    """The file a failing command was reading or writing: the innermost kit frame's local that
    names one (`path`, `out`, ..., else the last `*_dir` / `*_path` / `*_file`), so even an
    unforeseen failure points at its input or output."""
    tb, found = exc.__traceback__, None
    while tb is not None:
        frame = tb.tb_frame
        if "meditod_hub" in frame.f_code.co_filename:
            paths = {name: os.fspath(value) for name, value in frame.f_locals.items()
                     if isinstance(value, (str, os.PathLike)) and os.fspath(value)}
            named = [paths[name] for name in FILE_LOCALS if name in paths]
            suffixed = [v for name, v in paths.items() if name.endswith(("_dir", "_path", "_file"))]
            found = (named or suffixed[-1:] or [found])[0]
        tb = tb.tb_next
    return found


def load_failure(exc: BaseException) -> str:
    """Why a model, tokenizer or checkpoint file did not load, in a few words: the exception's
    first line, never torch's advice to load with `weights_only=False` (that runs any code a
    pickle holds)."""
    line = _first_line(exc)
    if "weights_only" in line.lower() or "weights only" in line.lower() or len(line) > 160:
        line = "not a file that loads safely (damaged, truncated or not a checkpoint)"
    return f"{type(exc).__name__}: {line}"


def open_standard_streams() -> None:
    """A command started with stdout or stderr closed (`>&-`) writes there into /dev/null:
    Python gives it None, which `print` ignores but `.flush()` and libraries do not; the open
    also takes the free descriptor, so no file the command opens later lands on it."""
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))


def run_main(main: Callable[[list[str]], int], argv: list[str]) -> int:
    """Run a command's `main(argv)`; known failures become one line on stderr and an exit code;
    libraries' deprecation warnings stay out of its output (`quiet.command_warnings_off`)."""
    open_standard_streams()
    quiet.command_warnings_off()
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
        where = _file_in_flight(exc)
        if isinstance(exc, OSError) and (exc.filename or where and exc.errno in OS_HINTS):
            hint = OS_HINTS.get(exc.errno, "check the path and rerun")
            print(f"error: {exc.filename or where}: {exc.strerror or type(exc).__name__} ({hint})",
                  file=sys.stderr)
            return EXIT_FAILED
        print(f"error: unexpected {type(exc).__name__}"
              + (f" on {where}" if where else "")
              + f": {load_failure(exc).split(': ', 1)[1]} (rerun with {DEBUG_FLAG} or {DEBUG_ENV}=1 for the "
              "traceback, and report it)", file=sys.stderr)
        return EXIT_FAILED
