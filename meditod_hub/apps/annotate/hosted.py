"""The app as a Hugging Face Space: Hub login, one folder per annotator, private backups.

On a Space (`SPACE_ID` set, `hf_oauth: true` in the Space card) annotators log in with their Hub
account (`huggingface_hub.attach_huggingface_oauth`); each gets a copy of the source release in
`<workdir>/annotators/<username>/`, so two annotators label the same dialogues independently and
`meditod agreement` can compare their folders. Every folder is committed to a PRIVATE dataset repo
on a schedule (`huggingface_hub.CommitScheduler`); a public repo is refused before anything is
uploaded. At start the backups are restored, so a restarted Space resumes where it stopped.
The token is the Space's `HF_TOKEN` secret; it is never printed.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from huggingface_hub import CommitOperationAdd, CommitScheduler, HfApi
from huggingface_hub.errors import RepositoryNotFoundError
from huggingface_hub.utils import filter_repo_objects

from meditod_hub.errors import MeditodError
from meditod_hub.hubclient import http_timeout, require_token, translate_errors

ANNOTATORS = "annotators"
USERNAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,95}")
RELEASE_FILES = ("dialogs.json", "train_ids.json", "valid_ids.json", "test_ids.json",
                 "ood_ids.json", "test_ood_ids.json", "release.json")


def annotator_folder(workdir: Path, username: str) -> Path:
    """`<workdir>/annotators/<username>`; a name that is not a Hub username is refused."""
    if not USERNAME.fullmatch(username or ""):
        raise MeditodError("the logged-in account name cannot name a folder; log in again")
    return workdir / ANNOTATORS / username


def seed_annotator(source: Path | None, folder: Path) -> None:
    """An annotator's first visit: a copy of the source release (an empty one without source)."""
    if folder.exists():
        return
    folder.mkdir(parents=True)
    for name in RELEASE_FILES if source else ():
        if (source / name).is_file():
            shutil.copy2(source / name, folder / name)


def check_private(api, repo_id: str) -> None:
    """Refuse a backup repo that exists and is not private (annotations stay private)."""
    try:
        info = api.repo_info(repo_id, repo_type="dataset")
    except RepositoryNotFoundError:
        return  # CommitScheduler creates it private
    if not info.private:
        raise MeditodError(f"backup repo {repo_id} is public: annotations are only backed up to "
                           "a private dataset repo; make it private or choose another")


def snapshot_scheduler():
    """`CommitScheduler` for a folder whose files are replaced, not appended to.

    The stock scheduler lists changed files under its lock but reads them after releasing it,
    capped at the listed size: a save that replaces `dialogs.json` in between would upload a cut
    file. This one reads the changed files' bytes while it holds the lock (the lock every save
    of the app takes too), then uploads those bytes (the documented way: override push_to_hub).
    """
    class SnapshotScheduler(CommitScheduler):
        def push_to_hub(self):
            with self.lock:
                changed = {}
                for path in sorted(self.folder_path.glob("**/*")):
                    relpath = path.relative_to(self.folder_path).as_posix()
                    if not path.is_file() or not list(filter_repo_objects(
                            [relpath], ignore_patterns=self.ignore_patterns)):
                        continue
                    mtime = path.stat().st_mtime
                    if self.last_uploaded.get(path) != mtime:
                        changed[path] = (relpath, path.read_bytes(), mtime)
            if not changed:
                return None
            prefix = f"{self.path_in_repo.strip('/')}/" if self.path_in_repo else ""
            info = self.api.create_commit(
                repo_id=self.repo_id, repo_type=self.repo_type, revision=self.revision,
                commit_message="Annotations (scheduled backup)",
                operations=[CommitOperationAdd(path_in_repo=prefix + rel, path_or_fileobj=data)
                            for rel, data, _ in changed.values()])
            for path, (_, _, mtime) in changed.items():
                self.last_uploaded[path] = mtime
            return info

    return SnapshotScheduler


class Backup:
    """A private dataset repo that `workdir/annotators/` is committed to every `every` minutes."""

    def __init__(self, repo_id: str, workdir: Path, every: float, timeout: float = 30.0):
        action = f"backing up annotations to {repo_id}"
        token = require_token()
        with http_timeout(timeout), translate_errors(action):
            api = HfApi(token=token)
            check_private(api, repo_id)
            self._restore(api, repo_id, workdir)
            self.scheduler = snapshot_scheduler()(
                repo_id=repo_id, repo_type="dataset", private=True, token=token,
                folder_path=workdir / ANNOTATORS, path_in_repo=ANNOTATORS, every=every,
                ignore_patterns=["*.tmp"], hf_api=api)
            check_private(api, repo_id)  # created private; never trust a race
        self.lock = self.scheduler.lock

    @staticmethod
    def _restore(api, repo_id: str, workdir: Path) -> None:
        """Bring back the backed-up folders this Space does not hold (a restart)."""
        try:
            files = [f for f in api.list_repo_files(repo_id, repo_type="dataset")
                     if f.startswith(ANNOTATORS + "/")]
        except RepositoryNotFoundError:
            return
        for name in files:
            target = workdir / name
            if not target.exists():
                api.hf_hub_download(repo_id, name, repo_type="dataset", local_dir=workdir)

    def push_now(self) -> None:
        """Commit what changed since the last scheduled commit (at shutdown, and in tests)."""
        self.scheduler.trigger().result()

    def stop(self) -> None:
        self.scheduler.stop()
