"""The one output guard: every command that writes checks its outputs here first, so none
replaces an input, writes inside an input folder, or replaces a file this kit did not write for
the same purpose; and writes atomically, so an interrupted command leaves the previous file whole.

"Written by this kit for this purpose" is recorded, not guessed: each folder that receives an
output gets `.meditod-outputs.json`, mapping the file names written there to the command that
wrote them (`written_by`). A command may replace its own earlier output (a rerun), never a file
another command wrote (`eval-cascade` over `evaluate`'s results.json) nor one that is not in the
record (the user's, or an older kit's: move it away or choose another path). A folder a command
owns whole (a training run) is recorded under ".". Built dataset folders have their own, stricter
record, `build_manifest.json` (`build.py`), which the push also checks.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from meditod_hub.errors import MeditodError, UsageError

RECORD = ".meditod-outputs.json"  # in each folder holding outputs: file name -> the command
WHOLE = "."                        # the record's key for a folder one command owns whole
# The temporary file of an atomic write: `.<name>.partial-<random>.tmp` beside its target. One
# left behind was cut off by a killed process (`stale_partials` finds them).
TEMP_MARK = ".partial-"
# A folder replaced by `new_folder` is renamed aside to `.<name>.previous-<pid>` for the instant
# between the two renames; one left behind is the old folder of a process killed right there.
PREVIOUS_MARK = ".previous-"


def _record(folder: Path) -> dict[str, str]:
    try:
        record = json.loads((folder / RECORD).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}  # none, or unreadable: nothing in this folder counts as the kit's
    files = record.get("files") if isinstance(record, dict) else None
    return {k: v for k, v in files.items() if isinstance(v, str)} if isinstance(files, dict) else {}


def written_by(path: str | Path) -> str | None:
    """The command that wrote `path` (a file, or a folder it owns whole), per the record."""
    path = Path(path)
    if path.is_dir():
        return _record(path).get(WHOLE)
    return _record(path.parent).get(path.name)


def record_output(path: str | Path, purpose: str) -> None:
    """Record that `purpose` (a command, e.g. "evaluate") wrote `path` (a folder: owns it whole)."""
    path = Path(path)
    folder, name = (path, WHOLE) if path.is_dir() else (path.parent, path.name)
    record = _record(folder)
    if record.get(name) != purpose:
        record[name] = purpose
        _replace(folder / RECORD, json.dumps({"files": dict(sorted(record.items()))}, indent=2)
                 + "\n")


def _local(paths: Iterable[str | Path | None]) -> list[Path]:
    """The inputs that are local paths (a Hub id or None is not)."""
    return [Path(p).resolve() for p in paths if p is not None and Path(p).exists()]


def _check_inputs(path: Path, inputs: Iterable[str | Path | None], input_folders: Iterable,
                  what: str) -> None:
    resolved = path.resolve()
    for other in _local(inputs):
        if resolved == other:
            raise UsageError(f"{what} {path} is also an input of this command: write it elsewhere")
    for folder in _local(input_folders):
        if resolved == folder or folder in resolved.parents:
            raise UsageError(f"{what} {path} is inside the input folder {folder}: write it "
                             "outside the folders this command reads")


def _check_writable(folder: Path, path: Path, what: str) -> None:
    """`folder`, where `path` goes, is writable or can be created."""
    for ancestor in (folder, *folder.parents):
        if ancestor.exists():
            if not ancestor.is_dir():
                raise UsageError(f"{what} {path}: cannot write there, {ancestor} is a file, not "
                                 "a folder")
            if not os.access(ancestor, os.W_OK | os.X_OK):
                raise UsageError(f"{what} {path}: cannot write there, {ancestor} is not "
                                 "writable")
            return


def _check_owner(path: Path, purpose: str, what: str) -> None:
    if path.exists() or path.is_symlink():
        owner = written_by(path) if not path.is_symlink() else None
        if owner != purpose:
            by = f"`meditod {owner}`" if owner else "something other than this kit"
            raise UsageError(f"{what} {path} exists and was written by {by}, not `meditod "
                             f"{purpose}`: choose another path, or move the file away")


def output_path(path: str | Path, *, purpose: str, inputs: Iterable = (),
                input_folders: Iterable = (), what: str = "--out") -> Path:
    """`path` checked before any work: a file path, not one of `inputs` nor inside one of
    `input_folders`, new or written earlier by `purpose`, its folder creatable."""
    path = Path(path)
    if path.is_dir():
        raise UsageError(f"{what} {path} is a folder: give a file path")
    if path.name == RECORD:  # written, it would be replaced by the record of writing it
        raise UsageError(f"{what} {path}: {RECORD} is the name of the output guard's record of "
                         "what this kit wrote in a folder: choose another file name")
    _check_inputs(path, inputs, input_folders, what)
    _check_owner(path, purpose, what)
    _check_writable(path.parent, path, what)
    return path


def output_folder(folder: str | Path, names: Iterable[str] | None = None, *, purpose: str,
                  inputs: Iterable = (), input_folders: Iterable = (), what: str = "--out"
                  ) -> Path:
    """`folder` checked before any work, for the files `names` (paths inside it) that `purpose`
    writes there; other files in it are left alone. Without `names` the command owns the folder
    whole: it must be new, empty, or owned earlier by `purpose` (then recorded as owned now)."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{what} {folder} is a file: give a folder")
    _check_inputs(folder, inputs, input_folders, what)
    _check_writable(folder, folder, what)
    if names is not None:
        for name in names:
            _check_owner(folder / name, purpose, what)
        return folder
    present = sorted(p.name for p in folder.iterdir() if p.name != RECORD) \
        if folder.is_dir() else []
    if present and written_by(folder) != purpose:
        raise UsageError(f"{what} {folder} holds files `meditod {purpose}` did not write "
                         f"({', '.join(present[:3])}): choose a new or empty folder")
    folder.mkdir(parents=True, exist_ok=True)
    record_output(folder, purpose)
    return folder


def _replace(path: Path, data: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}{TEMP_MARK}", suffix=".tmp", dir=path.parent)
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


def atomic_write(path: str | Path, data: str | bytes, *, purpose: str | None = None) -> Path:
    """Write `data` to a temporary file beside `path`, then rename it over `path` in one step
    (str as UTF-8, newlines untranslated), so an interrupted write leaves the old file whole;
    with `purpose`, record it as that command's output (what `output_path` checked)."""
    path = Path(path)
    _replace(path, data)
    if purpose is not None:
        record_output(path, purpose)
    return path


@contextmanager
def new_folder(path: str | Path, *, prefix: str | None = None) -> Iterator[Path]:
    """The folder writer beside `atomic_write`: yields a new temporary folder beside `path`
    (named `prefix<random>`, default `.<name>.partial-<random>`; as private as a folder made
    here would be, not mkdtemp's 0700) to fill; when the block ends, the folder takes `path`'s
    place: an empty `path` is removed first, anything else is renamed aside to
    `.<name>.previous-<pid>`, the new folder renamed in, the old one deleted. If the block
    raises, the new folder is deleted and `path` is untouched. What a killed process leaves
    (a temporary folder, a previous one) is the caller's to recover by those names."""
    path = Path(path)
    tmp = Path(tempfile.mkdtemp(prefix=prefix or f".{path.name}{TEMP_MARK}", dir=path.parent))
    try:
        umask = os.umask(0)
        os.umask(umask)
        tmp.chmod(0o777 & ~umask)
        yield tmp
        publish_folder(tmp, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # already gone when it took path's place


def replaceable_folder(path: str | Path, *, what: str = "--out", example: str = "out") -> Path:
    """`path` as the absolute folder path `new_folder` replaces with one rename (so `.` becomes
    its own name and the new folder is made beside it), refusing what one rename cannot replace
    or must not: a symbolic link, the current folder or one holding it, a mount point."""
    path = Path(path)
    if path.is_symlink():
        raise UsageError(f"{what} {path} is a symbolic link (to {os.readlink(path)}): give the "
                         "folder itself, so the link is not replaced")
    absolute = Path(os.path.abspath(path))
    if absolute == Path.cwd() or absolute in Path.cwd().parents:
        raise UsageError(f"{what} {path} is the current folder or holds it: write into a folder "
                         f"of its own, e.g. {what} {example}")
    if os.path.ismount(absolute):
        raise UsageError(f"{what} {path} is a mount point, which one rename cannot replace: write "
                         f"into a folder inside it, e.g. {what} {absolute / example}")
    return absolute


def publish_folder(finished: str | Path, path: str | Path) -> Path:
    """Move the complete folder `finished` to `path` (same file system), replacing what is
    there as `new_folder` says; returns `path`."""
    finished, path = Path(finished), Path(path)
    if path.is_dir() and not path.is_symlink() and any(path.iterdir()):
        previous = path.parent / f".{path.name}{PREVIOUS_MARK}{os.getpid()}"
        os.rename(path, previous)
        os.rename(finished, path)
        shutil.rmtree(previous)
    else:
        if path.is_dir() and not path.is_symlink():
            path.rmdir()
        os.rename(finished, path)
    return path


def pid_alive(pid: int) -> bool:
    """Whether process `pid` still runs (a lock's or a temporary folder's writer)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def stale_partials(folder: str | Path) -> list[Path]:
    """Temporary files of `atomic_write` in `folder` (left by a write that was killed)."""
    return sorted(Path(folder).glob(f".*{TEMP_MARK}*.tmp"))
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
