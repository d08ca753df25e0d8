"""One build per output folder at a time: `build_lock`, a lock file beside the folder, held with
flock and holding the builder's pid, so that a killed build's lock is taken over and a live
build's is refused.

Apart from `build` because it is the only code that handles a lock, a pid and a race between
processes; the build only holds it around its work.
"""

from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager
from pathlib import Path

from meditod_hub.errors import MeditodError
from meditod_hub.files import pid_alive


def _lock_pid(fd: int) -> int:
    """The pid written in an open lock file (0: none yet, or not a number)."""
    try:
        return int(os.pread(fd, 32, 0).decode().strip() or 0)
    except (OSError, ValueError, UnicodeDecodeError):
        return 0


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.path.samestat(os.fstat(fd), os.stat(path))
    except FileNotFoundError:
        return False


@contextmanager
def build_lock(out: Path):
    """One build per output folder at a time: `.<name>.build.lock` beside it, held with flock
    (which the kernel releases when its build dies, however it dies) and holding the pid.

    Taking a stale lock is atomic: a killed build's file is taken over under the flock, never
    removed and recreated, so two builds that find the same stale lock cannot both hold it (they
    once could: both removed it, and each created its own). A lock file removed by its holder
    between our open and our flock is tried again. A live pid in an unlocked file (a build of
    an older kit) still holds it."""
    lock = out.parent / f".{out.name}.build.lock"
    for _ in range(10):
        fd = os.open(lock, os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            held = False
        except BlockingIOError:
            held = True
        pid = _lock_pid(fd)
        if not held and not _same_file(fd, lock):  # its holder removed it as we opened it
            os.close(fd)
            continue
        if held or (pid and pid != os.getpid() and pid_alive(pid)):
            os.close(fd)
            running = f" (pid {pid})" if pid else ""
            raise MeditodError(f"another build into {out} is running{running}: wait for it to "
                               f"finish (or, if no build is running, remove {lock})")
        os.ftruncate(fd, 0)  # a killed build's pid, or none: ours now
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        try:
            yield
        finally:
            if _same_file(fd, lock):
                lock.unlink(missing_ok=True)
            os.close(fd)  # releases the flock
        return
    raise MeditodError(f"cannot take the build lock {lock}: other builds into {out} keep taking "
                       "it; wait for them and retry")
