"""Space backups against the local Hub-compatible server (tests/hub_server.py): annotations go
to a PRIVATE dataset repo on a schedule, a public repo is refused before any upload, and a
restarted Space gets its annotators' folders back. Clients run as subprocesses (huggingface_hub
reads HF_ENDPOINT at import); no network.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from hub_server import WRITE_TOKEN

PROJECT = Path(__file__).resolve().parent.parent
REPO = "local-tester/annotations"

BACK_UP = """
import json, sys
from pathlib import Path
from meditod_hub.apps.annotate.hosted import Backup
from meditod_hub.apps.annotate.labels import label_of
from meditod_hub.apps.annotate.store import ReleaseStore
work, repo, edit = Path(sys.argv[1]), sys.argv[2], sys.argv[3] == "edit"
backup = Backup(repo, work, every=60)
backup.push_now()
if edit:  # a save while the scheduler runs: it takes the scheduler's lock
    store = ReleaseStore(work / "annotators" / "alice", backup.lock)
    opened = store.open("9001")
    labels = [label_of(u) for u in opened["dialogue"]["utterances"]]
    labels[1] = [{"intent": "chit-chat"}]
    store.save("9001", labels, opened["version"], [["manual"] * len(l) for l in labels])
    backup.push_now()
backup.stop()
print("done")
"""


def run(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], env={**env, "PYTHONPATH": str(PROJECT)},
                          cwd=PROJECT, capture_output=True, text=True, timeout=300)


def test_annotations_are_backed_up_privately_and_restored_after_a_restart(hub_server, tmp_path,
                                                                          embedded_release):
    env = hub_server.client_env(tmp_path)
    work = tmp_path / "work"
    shutil.copytree(embedded_release, work / "annotators" / "alice")
    first = run(env, "-c", BACK_UP, str(work), REPO, "edit")
    assert first.returncode == 0, first.stderr[-3000:]
    repo = hub_server.repo("dataset", REPO)
    assert repo.private, "the backup repo is created private"
    files = hub_server.files("dataset", REPO)
    local = work / "annotators" / "alice"
    for name in ("dialogs.json", "provenance.json", "train_ids.json"):
        assert files[f"annotators/alice/{name}"] == (local / name).read_bytes(), name
    assert json.loads(files["annotators/alice/dialogs.json"])["9001"]["utterances"][1]["nlu"] == \
        [{"intent": "chit-chat"}]
    assert not [p for p in files if p.endswith(".tmp")]
    assert WRITE_TOKEN not in first.stdout + first.stderr

    restarted = tmp_path / "restarted"
    second = run(env, "-c", BACK_UP, str(restarted), REPO, "no-edit")
    assert second.returncode == 0, second.stderr[-3000:]
    assert (restarted / "annotators/alice/dialogs.json").read_bytes() == \
        (local / "dialogs.json").read_bytes()


def test_a_public_backup_repo_is_refused_before_anything_is_uploaded(hub_server, tmp_path):
    with hub_server.lock:
        hub_server.create_repo("dataset", REPO, private=False)
    before = hub_server.files("dataset", REPO)
    env = {**hub_server.client_env(tmp_path), "SPACE_ID": "local-tester/annotate"}
    result = run(env, "-m", "meditod_hub.cli", "annotate", "--space", "--source",
                 str(tmp_path / "seed"), "--workdir", str(tmp_path / "work"), "--backup_repo",
                 REPO, "--port", "0")
    assert result.returncode == 1, result.stderr[-3000:]
    assert result.stderr.strip().splitlines() == [
        f"error: backup repo {REPO} is public: annotations are only backed up to a private "
        "dataset repo; make it private or choose another"]
    assert hub_server.files("dataset", REPO) == before
    assert not hub_server.repo("dataset", REPO).private


def test_without_a_token_the_space_says_what_to_do(hub_server, tmp_path):
    env = {**hub_server.client_env(tmp_path, token=None), "SPACE_ID": "local-tester/annotate"}
    result = run(env, "-m", "meditod_hub.cli", "annotate", "--space", "--workdir",
                 str(tmp_path / "work"), "--backup_repo", REPO, "--port", "0")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "error: no Hugging Face token: run `hf auth login` or set HF_TOKEN to a write token"]
