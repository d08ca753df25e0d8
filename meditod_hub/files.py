"""Writing files so that an interrupted command leaves the previous file intact, and never over
a file the command reads or did not make."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from .errors import MeditodError, UsageError


def output_path(path: str | Path, *, inputs: Iterable[str | Path] = (), what: str = "output"
                ) -> Path:
    """`path` checked before any work: not a folder, not one of `inputs`, parent creatable."""
    path = Path(path)
    if path.is_dir():
        raise UsageError(f"{what} {path} is a folder: give a file path")
    for other in inputs:
        if Path(other).exists() and path.exists() and path.resolve() == Path(other).resolve():
            raise UsageError(f"{what} {path} is also an input of this command: write it elsewhere")
    parent = path.parent
    for ancestor in (parent, *parent.parents):
        if ancestor.exists():
            if not ancestor.is_dir():
                raise UsageError(f"cannot write {path}: {ancestor} is a file, not a folder")
            if not os.access(ancestor, os.W_OK | os.X_OK):
                raise UsageError(f"cannot write {path}: {ancestor} is not writable")
            break
    return path


def atomic_write(path: str | Path, data: str | bytes) -> Path:
    """Write `data` to a temporary file beside `path`, then rename it over `path` in one step."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.filename is None:  # disk full: name the file
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
    return path


def read_json(path: str | Path, *, fix: str, expect: type = dict):
    """A JSON file this kit wrote (a record, a manifest), or one line naming it and `fix`:
    missing, a folder, not UTF-8, invalid or too deeply nested JSON, or not an `expect`."""
    path = Path(path)
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise MeditodError(f"{path}: file not found; {fix}") from None
    except IsADirectoryError:
        raise MeditodError(f"{path} is a folder, not a JSON file; {fix}") from None
    except OSError as exc:
        raise MeditodError(f"{path}: cannot read ({exc.strerror or type(exc).__name__}); "
                           f"{fix}") from None
    except UnicodeDecodeError as exc:
        raise MeditodError(f"{path}: not UTF-8 (byte {exc.start}); {fix}") from None
    except json.JSONDecodeError as exc:
        raise MeditodError(f"{path}: invalid JSON at line {exc.lineno} ({exc.msg}); {fix}") from None
    except RecursionError:
        raise MeditodError(f"{path}: JSON nested too deeply to read; {fix}") from None
    if not isinstance(value, expect):
        raise MeditodError(f"{path}: expected a JSON {_JSON_NAMES.get(expect, expect.__name__)}, "
                           f"got {_JSON_NAMES.get(type(value), type(value).__name__)}; {fix}")
    return value


_JSON_NAMES = {dict: "object", list: "array", str: "string", int: "number", float: "number",
               bool: "boolean", type(None): "null"}
