"""`meditod.py push` against a local Hub-compatible server, and loading the dataset back. No network.

Clients run as subprocesses: huggingface_hub reads HF_ENDPOINT when imported, so each client gets the
local endpoint in its environment (`HubServer.client_env`). Failures print ids, never dialogue text.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from datasets import Dataset, get_dataset_config_names, load_dataset
from helpers import CLIENT_TIMEOUT, push
from hub_server import READ_TOKEN, WRITE_TOKEN, HubServer, silent_endpoint, unused_endpoint
from huggingface_hub import DatasetCard, DatasetCardData

from meditod_hub.data.card import GATING
from meditod_hub.data.dataset import MANIFEST
from meditod_hub.data.manifest import MANIFEST_FORMAT, file_sha256, folder_files

MEDITOD = Path(__file__).resolve().parent.parent / "meditod.py"

FAILURE_TIMEOUT = 60  # a failing push must end well before this, whatever the endpoint does

LOAD_ALL_CONFIGS = """
import json, sys
from datasets import get_dataset_config_names, load_dataset
repo, out = sys.argv[1:]
configs = get_dataset_config_names(repo)
rows = {c: {s: d.to_list() for s, d in load_dataset(repo, c).items()} for c in configs}
open(out, "w").write(json.dumps(rows))
"""


def all_rows(source: str) -> dict:
    """config -> split -> rows, normalised through JSON like the remote copy."""
    return json.loads(json.dumps({c: {s: d.to_list() for s, d in load_dataset(source, c).items()}
                                  for c in get_dataset_config_names(source)}))


def mismatches(local: dict, remote: dict) -> list[str]:
    """Where the copies differ, as config/split/row-id (never row content)."""
    if local.keys() != remote.keys():
        return [f"configs {sorted(local)} != {sorted(remote)}"]
    found = []
    for config, splits in local.items():
        if splits.keys() != remote[config].keys():
            found.append(f"{config}: splits {sorted(splits)} != {sorted(remote[config])}")
            continue
        for split, rows in splits.items():
            if len(rows) != len(remote[config][split]):
                found.append(f"{config}/{split}: {len(rows)} != {len(remote[config][split])} rows")
            found += [f"{config}/{split}/{row.get('id', i)}"
                      for i, (row, other) in enumerate(zip(rows, remote[config][split])) if row != other]
    return found


def expect_one_line_error(result: subprocess.CompletedProcess, *phrases: str) -> None:
    """Exit code 1, one line on stderr (no traceback) saying what failed, no token anywhere."""
    assert result.returncode == 1, result.stderr[-2000:]
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr[-2000:]
    for phrase in phrases:
        assert phrase in result.stderr
    for token in (WRITE_TOKEN, READ_TOKEN):
        assert token not in result.stdout + result.stderr


def digests(files: dict[str, bytes]) -> dict[str, str]:
    """Path -> sha256, so a failing comparison prints no file content."""
    return {path: hashlib.sha256(content).hexdigest() for path, content in files.items()}


def card_data(content: bytes) -> dict:
    return DatasetCard(content.decode()).data.to_dict()


def write_manifest(folder: Path, ungated: bool) -> None:
    """What `meditod build` writes last: every file's hash, and what the data is. An ungated
    tiny build is the user's own, declared under a licence: a push proves a synthetic claim
    again by rebuilding its source, which these hand-made Parquet files are not."""
    files = {name: file_sha256(folder / name) for name in folder_files(folder) if name != MANIFEST}
    (folder / MANIFEST).write_text(json.dumps({
        "format": MANIFEST_FORMAT, "synthetic": False, "gated": not ungated,
        "licence": "own" if ungated else "meditod", "license": "cc-by-4.0" if ungated else "other",
        "licence_reason": "a test build", "release_fingerprint": "test", "files": files}))


@pytest.fixture
def tiny_build(tmp_path):
    """A minimal built folder (no MediTOD data): Parquet files, a card (ungated: `synthetic`, the
    user's own data, see `write_manifest`; or gated) and the build manifest; `card_synthetic`
    makes the card disagree with the manifest."""
    def build(synthetic: bool, splits=("train",), gated: bool | None = None,
              card_synthetic: bool | None = None):
        gated = not synthetic if gated is None else gated
        card_synthetic = False if card_synthetic is None else card_synthetic
        folder = tmp_path / ("synthetic" if synthetic else "real") / "meditod"
        shutil.rmtree(folder, ignore_errors=True)
        for split in splits:
            parquet = folder / "nlu" / f"{split}-00000-of-00001.parquet"
            Dataset.from_dict({"x": [1, 2]}).to_parquet(parquet)
        tags = ["synthetic"] if card_synthetic else ["own"] if synthetic else ["medical"]
        data = DatasetCardData(tags=tags, configs=[
            {"config_name": "nlu", "data_files": [{"split": "train", "path": "nlu/train-*.parquet"}]}],
            **(GATING if gated else {}))
        DatasetCard(f"---\n{data.to_yaml()}\n---\n# Tiny test build\n").save(folder / "README.md")
        write_manifest(folder, synthetic)
        return folder
    return build


@pytest.mark.parametrize("build", ["sample_build", "embedded_build"])
def test_push_then_load_every_config_back(request, build, hub_server, tmp_path):
    folder = request.getfixturevalue(build)
    synthetic = build == "embedded_build"
    result = push(hub_server.client_env(tmp_path), folder, "org/meditod")
    assert result.returncode == 0, result.stderr[-2000:]

    repo = hub_server.repo("dataset", "org/meditod")
    assert repo.private
    assert repo.gated == (False if synthetic else "manual")
    pushed = hub_server.files("dataset", "org/meditod")
    local = {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    assert digests(pushed) == {**digests(local), ".gitattributes": digests(pushed)[".gitattributes"]}
    gating = {k: v for k, v in card_data(pushed["README.md"]).items() if k.startswith("extra_gated_")}
    assert gating == ({} if synthetic else GATING)
    assert len(repo.commits) == 2  # the Hub's initial commit, then the whole build in one

    out = tmp_path / "remote.json"
    loaded = subprocess.run([sys.executable, "-c", LOAD_ALL_CONFIGS, "org/meditod", str(out)],
                            env=hub_server.client_env(tmp_path, token=READ_TOKEN),
                            capture_output=True, text=True, timeout=CLIENT_TIMEOUT)
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    remote = json.loads(out.read_text())
    assert {"nlu", "pol", "nlg"} <= remote.keys()
    assert mismatches(all_rows(str(folder)), remote) == []


def test_public_flag_makes_the_repo_public_and_real_data_gated(hub_server, tiny_build, tmp_path):
    result = push(hub_server.client_env(tmp_path), tiny_build(synthetic=False), "org/open", "--public")
    assert result.returncode == 0, result.stderr[-2000:]
    repo = hub_server.repo("dataset", "org/open")
    assert (repo.private, repo.gated) == (False, "manual")


def test_synthetic_build_is_private_and_ungated_without_flags(hub_server, tiny_build, tmp_path):
    result = push(hub_server.client_env(tmp_path), tiny_build(synthetic=True), "org/synthetic")
    assert result.returncode == 0, result.stderr[-2000:]
    repo = hub_server.repo("dataset", "org/synthetic")
    assert (repo.private, repo.gated) == (True, False)


def test_real_data_is_refused_into_an_existing_public_repo(hub_server, tiny_build, tmp_path):
    env = hub_server.client_env(tmp_path)
    assert push(env, tiny_build(synthetic=True), "org/shared", "--public").returncode == 0
    expect_one_line_error(push(env, tiny_build(synthetic=False), "org/shared"), "--public")
    assert card_data(hub_server.files("dataset", "org/shared")["README.md"])["tags"] == ["own"]


def test_real_build_without_gating_fields_is_refused_offline(hub_server, tiny_build, tmp_path):
    result = push(hub_server.client_env(tmp_path), tiny_build(synthetic=False, gated=False), "org/x")
    expect_one_line_error(result, "disagrees with build_manifest.json")
    assert hub_server.requests == []


def test_a_synthetic_card_beside_real_data_is_refused(hub_server, tiny_build, tmp_path):
    """A crashed real build over a synthetic one once left the synthetic card beside real
    Parquet: the manifest, not the card, says what the data is."""
    folder = tiny_build(synthetic=False, gated=False, card_synthetic=True)
    expect_one_line_error(push(hub_server.client_env(tmp_path), folder, "org/x"),
                          "disagrees with build_manifest.json")
    assert hub_server.requests == []


@pytest.mark.parametrize("damage, phrase", [
    (lambda f: (f / "nlu" / "deep" / "er").mkdir(parents=True) or
     (f / "nlu" / "deep" / "er" / "x.parquet").write_bytes(b"stray"), "not from the build"),
    (lambda f: (f / "nlu" / "train-00000-of-00001.parquet").write_bytes(b"edited"),
     "changed since the build"),
    (lambda f: (f / "nlu" / "train-00000-of-00001.parquet").unlink(), "missing"),
    (lambda f: (f / MANIFEST).unlink(), "no build_manifest.json"),
], ids=["stray-nested-parquet", "edited", "missing", "no-manifest"])
def test_a_folder_that_does_not_match_its_manifest_is_refused(hub_server, tiny_build, tmp_path,
                                                              damage, phrase):
    folder = tiny_build(synthetic=True)
    damage(folder)
    expect_one_line_error(push(hub_server.client_env(tmp_path), folder, "org/x"), phrase)
    assert hub_server.requests == []


def test_pushing_a_release_folder_says_to_build_it_elsewhere(hub_server, embedded_release,
                                                            release_copy, tmp_path):
    """`build --out <the release>` is refused by build, so the hint never suggests it."""
    release = release_copy(embedded_release)
    result = push(hub_server.client_env(tmp_path), release, "org/x")
    expect_one_line_error(result, f"{release} is a release folder",
                          f"meditod build --source {release} --out meditod")
    assert f"--out {release}`" not in result.stderr and hub_server.requests == []


def test_second_push_deletes_only_what_the_first_build_put_there(hub_server, tiny_build,
                                                                tmp_path):
    env = hub_server.client_env(tmp_path)
    assert push(env, tiny_build(synthetic=True, splits=("train", "test")), "org/mirror").returncode == 0
    assert push(env, tiny_build(synthetic=True, splits=("train",)), "org/mirror").returncode == 0
    files = hub_server.files("dataset", "org/mirror")
    assert "nlu/test-00000-of-00001.parquet" not in files
    assert {"nlu/train-00000-of-00001.parquet", MANIFEST, "README.md"} <= set(files)


def test_a_repo_holding_other_files_is_refused_and_left_alone(hub_server, tiny_build, tmp_path):
    env = hub_server.client_env(tmp_path)
    assert push(env, tiny_build(synthetic=True), "org/shared").returncode == 0
    upload = ("from huggingface_hub import HfApi; HfApi().upload_file(path_or_fileobj=b'x', "
              "path_in_repo='deep/er/foreign.parquet', repo_id='org/shared', repo_type='dataset')")
    assert subprocess.run([sys.executable, "-c", upload], env=env, timeout=CLIENT_TIMEOUT).returncode == 0
    expect_one_line_error(push(env, tiny_build(synthetic=True), "org/shared"),
                          "deep/er/foreign.parquet")
    assert "deep/er/foreign.parquet" in hub_server.files("dataset", "org/shared")


def test_endpoint_down_fails_with_a_clear_message(tiny_build, tmp_path):
    with unused_endpoint() as url, HubServer() as hub:
        env = {**hub.client_env(tmp_path), "HF_ENDPOINT": url}
        result = push(env, tiny_build(synthetic=True), "org/x", guard=FAILURE_TIMEOUT)
        expect_one_line_error(result, "cannot connect", url)


def test_silent_endpoint_times_out_instead_of_hanging(tiny_build, tmp_path):
    with silent_endpoint() as url, HubServer() as hub:
        env = {**hub.client_env(tmp_path), "HF_ENDPOINT": url}
        result = push(env, tiny_build(synthetic=True), "org/x", "--timeout", "1", guard=FAILURE_TIMEOUT)
        expect_one_line_error(result, url)
        assert "did not answer in time" in result.stderr or "not done within --timeout" in result.stderr


def test_missing_token_fails_before_any_request(hub_server, tiny_build, tmp_path):
    result = push(hub_server.client_env(tmp_path, token=None), tiny_build(synthetic=True), "org/x")
    expect_one_line_error(result, "no Hugging Face token")
    assert hub_server.requests == []


@pytest.mark.parametrize("token, role, phrase", [
    (READ_TOKEN, "read", "read-only"),                       # refused by our whoami check
    ("hf_localtestFINEGRAINEDtoken", "fineGrained", "403"),  # whoami passes, the server refuses writes
    ("hf_localtestUNKNOWNtoken012345", None, "401"),          # the server does not know the token
], ids=["read", "fine-grained-without-write", "unknown"])
def test_token_without_write_access_is_refused(tiny_build, tmp_path, token, role, phrase):
    tokens = {WRITE_TOKEN: "write", READ_TOKEN: "read", **({token: role} if role else {})}
    with HubServer(tokens) as hub:
        result = push(hub.client_env(tmp_path, token=token), tiny_build(synthetic=True), "org/x")
        expect_one_line_error(result, phrase)
        assert ("dataset", "org/x") not in hub.repos


def test_successful_push_never_prints_the_token(hub_server, tiny_build, tmp_path):
    env = {**hub_server.client_env(tmp_path), "HF_DEBUG": "1"}  # the most verbose the library gets
    result = push(env, tiny_build(synthetic=True), "org/x")
    assert result.returncode == 0, result.stderr[-2000:]
    assert WRITE_TOKEN not in result.stdout + result.stderr


MODEL_REPO_CLIENT = """
import sys
import time
from huggingface_hub import HfApi, hf_hub_download, snapshot_download
from huggingface_hub.errors import GatedRepoError, RevisionNotFoundError
api, repo, home = HfApi(), "org/adapter", sys.argv[1]
api.create_repo(repo, private=False)
weights, v1, v2 = "adapter_model.safetensors", b"v1 weights" * 100, b"v2 weights"  # LFS by suffix
api.upload_file(path_or_fileobj=v1, path_in_repo=weights, repo_id=repo)
api.create_branch(repo, branch="v1")
api.upload_file(path_or_fileobj=b"# card\\n", path_in_repo="README.md", repo_id=repo)
api.upload_file(path_or_fileobj=v2, path_in_repo=weights, repo_id=repo)
api.create_tag(repo, tag="release-2")
assert open(hf_hub_download(repo, weights, revision="v1"), "rb").read() == v1
assert open(hf_hub_download(repo, weights), "rb").read() == v2
assert sorted(api.list_repo_files(repo, revision="v1")) == [".gitattributes", weights]
snapshot = snapshot_download(repo, revision="release-2", cache_dir=home + "/snap")
assert open(snapshot + "/README.md").read() == "# card\\n"
refs = api.list_repo_refs(repo)
assert {b.name for b in refs.branches} == {"main", "v1"} and [t.name for t in refs.tags] == ["release-2"]
assert api.model_info(repo).sha == refs.tags[0].target_commit
try:
    hf_hub_download(repo, "README.md", revision="v9")
    raise SystemExit("a missing revision must fail")
except RevisionNotFoundError:
    pass
api.update_repo_settings(repo, gated="manual")
try:
    hf_hub_download(repo, "README.md", token=False, cache_dir=home + "/anonymous")
    raise SystemExit("anonymous download of a gated repo must fail")
except GatedRepoError:
    pass
print("ok")
"""


def test_server_serves_model_repos_by_branch_tag_and_gating(hub_server, tmp_path):
    result = subprocess.run([sys.executable, "-c", MODEL_REPO_CLIENT, str(tmp_path)],
                            env=hub_server.client_env(tmp_path), capture_output=True, text=True,
                            timeout=CLIENT_TIMEOUT)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-3000:]
    assert hub_server.repo("model", "org/adapter").gated == "manual"


# --- a push cut off mid-commit, then retried ---------------------------------------------------

def _remote_matches(hub_server, repo: str, folder: Path) -> bool:
    pushed = hub_server.files("dataset", repo)
    local = {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    return digests(pushed) == {**digests(local), ".gitattributes": digests(pushed)[".gitattributes"]}


def test_a_dropped_commit_leaves_the_repo_as_it_was_and_a_retry_completes(hub_server, tiny_build,
                                                                          tmp_path):
    env = hub_server.client_env(tmp_path)
    first = tiny_build(synthetic=True, splits=("train", "test"))
    assert push(env, first, "org/cut").returncode == 0
    before = digests(hub_server.files("dataset", "org/cut"))
    second = tiny_build(synthetic=True, splits=("train",))
    hub_server.commit_fault = "drop"
    result = push(env, second, "org/cut", guard=FAILURE_TIMEOUT)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert len(result.stderr.strip().splitlines()) == 1
    assert digests(hub_server.files("dataset", "org/cut")) == before  # nothing half-committed
    assert push(env, second, "org/cut").returncode == 0
    assert _remote_matches(hub_server, "org/cut", second)


def test_a_push_killed_during_its_commit_is_all_or_nothing_and_a_retry_completes(
        hub_server, tiny_build, tmp_path):
    env = hub_server.client_env(tmp_path)
    first = tiny_build(synthetic=True, splits=("train", "test"))
    assert push(env, first, "org/killed").returncode == 0
    before = digests(hub_server.files("dataset", "org/killed"))
    second = tiny_build(synthetic=True, splits=("train",))
    hub_server.commit_fault = 3.0  # hold the commit while the client is killed
    client = subprocess.Popen([sys.executable, str(MEDITOD), "push", "--folder", str(second),
                               "--repo", "org/killed"], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + FAILURE_TIMEOUT
    while not any(path.endswith("/commit/main") for _, path, _ in hub_server.requests) \
            and hub_server.commit_fault is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    client.kill()
    client.wait()
    time.sleep(3.5)  # the held commit goes through, or not, on the server's side
    after = digests(hub_server.files("dataset", "org/killed"))
    assert after == before or _remote_matches(hub_server, "org/killed", second)
    assert push(env, second, "org/killed").returncode == 0
    assert _remote_matches(hub_server, "org/killed", second)


def test_http_timeout_is_per_request_of_its_block_not_the_shared_client():
    """huggingface_hub shares one HTTP client across the process: a push's timeout must not
    change it for other threads (the annotation app's backups, a second command in-process)."""
    import threading

    import httpx2
    from huggingface_hub.utils import get_session

    from meditod_hub.hubclient import (
        HUB_CONNECT_TIMEOUT_S,
        HUB_READ_TIMEOUT_S,
        _answered,
        _timeout_of_this_call,
        http_timeout,
    )

    # the silence budget is per thread: an earlier test of this worker's main thread may have
    # spent part of it (its hook ran, no answer came), which would shorten every deadline below
    _answered()
    session, seen = get_session(), {}
    before = session.timeout

    def request_extensions(name):
        request = httpx2.Request("GET", "http://127.0.0.1/")
        for hook in session.event_hooks["request"]:
            if hook is _timeout_of_this_call:
                hook(request)
        seen[name] = request.extensions.get("timeout")

    with http_timeout(7):
        assert session.timeout == before
        request_extensions("inside")
        other = threading.Thread(target=request_extensions, args=("other thread",))
        other.start()
        other.join()
    request_extensions("after")
    assert seen["inside"] == httpx2.Timeout(7).as_dict()
    # outside the block: the process's default deadlines (issue 36: no Hub request waits forever),
    # never the block's 7 s
    default = {"connect": HUB_CONNECT_TIMEOUT_S, "read": HUB_READ_TIMEOUT_S,
               "write": HUB_READ_TIMEOUT_S, "pool": HUB_READ_TIMEOUT_S}
    assert seen["other thread"] == default and seen["after"] == default
