"""Writing files so that an interrupted command leaves the previous file intact, and never over
a file the command reads or did not make."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from .errors import UsageError


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


# The temporary file of an atomic write: `.<name>.partial-<random>.tmp` beside its target. One
# left behind was cut off by a killed process (`stale_partials` finds them).
TEMP_MARK = ".partial-"


def atomic_write(path: str | Path, data: str | bytes) -> Path:
    """Write `data` to a temporary file beside `path`, then rename it over `path` in one step
    (str as UTF-8, newlines untranslated), so an interrupted write leaves the old file whole."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}{TEMP_MARK}", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def stale_partials(folder: str | Path) -> list[Path]:
    """Temporary files of `atomic_write` in `folder` (left by a write that was killed)."""
    return sorted(Path(folder).glob(f".*{TEMP_MARK}*.tmp"))
