"""`meditod push`, `publish` and `space`: timeouts, a push that times out mid-commit, and the
upload record that says which command owns a repo.

Part of the failure sweep (tests/test_failure_*.py): each case must end in a clear error
(non-zero exit, a one-line `error:` that is not an "unexpected" failure), never a traceback,
a silent success, a lost file or a secret in the output; helpers.py keeps the sweep table.
Offline, CPU.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from helpers import (
    classify,
    digests,
    expect,
    meditod,
    record,
    run_case,
    write_release,
    write_run,
)

from meditod_hub.commands import build as build_cmd
from meditod_hub.commands import publish as publish_cmd
from meditod_hub.commands import push as push_cmd
from meditod_hub.errors import run_main

PROJECT = Path(__file__).resolve().parent.parent


# --- push --------------------------------------------------------------------------------------

@pytest.mark.parametrize("timeout", ["0", "-1", "nan", "inf"])
def test_push_timeout_must_be_a_positive_number(timeout, embedded_build, capsys, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_unused")
    outcome = run_case(f"push: --timeout {timeout}", push_cmd.main,
                       ["--folder", embedded_build, "--repo", "org/x", "--timeout", timeout], capsys)
    expect(outcome, "argument --timeout: must be a", code=2)


def test_push_of_a_missing_folder_is_refused(tmp_path, capsys):
    outcome = run_case("push: no such folder", push_cmd.main,
                       ["--folder", tmp_path / "nope", "--repo", "org/x"], capsys)
    expect(outcome, "no such folder")


# --- publish -----------------------------------------------------------------------------------

@pytest.mark.parametrize("timeout", ["0", "nan"])
def test_publish_timeout_must_be_a_positive_number(timeout, tmp_path, capsys):

    run = write_run(tmp_path / "run")
    (run / "adapter_config.json").write_text("{}")
    (run / "adapter_model.safetensors").write_bytes(b"x")
    outcome = run_case(f"publish: --timeout {timeout}", publish_cmd.main,
                       ["--run", run, "--repo", "org/x", "--timeout", timeout], capsys)
    expect(outcome, "argument --timeout: must be a", code=2)


# --- issue 26: a push that times out while the Hub still holds its commit ------------------------
def test_a_push_timing_out_mid_commit_says_it_may_land_and_the_next_push_sees_it(
        hub_server, embedded_build, tmp_path):
    """(before: "not done within --timeout", though the commit landed a moment later; the next
    push uploaded the whole build again)"""
    from helpers import push

    env = hub_server.client_env(tmp_path)
    hub_server.commit_fault = 6.0  # the server holds the commit, then applies it
    first = push(env, embedded_build, "local-tester/late", "--timeout", "3", guard=120)
    kind = classify(first.returncode, first.stdout, first.stderr, False, False)
    record("push: the commit lands after --timeout", kind)
    assert kind == "clear", first.stderr[-2000:]
    assert "the commit was sent but not confirmed within --timeout 3 s, so it may still land" \
        in first.stderr and "run the same push again" in first.stderr, first.stderr
    deadline = time.monotonic() + 30
    while "build_manifest.json" not in hub_server.files("dataset", "local-tester/late") \
            and time.monotonic() < deadline:
        time.sleep(0.2)
    commits = sum(path.endswith("/commit/main") for _, path, _ in hub_server.requests)
    again = push(env, embedded_build, "local-tester/late", "--timeout", "60", guard=120)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "already holds this build" in again.stderr, again.stderr
    assert sum(path.endswith("/commit/main") for _, path, _ in hub_server.requests) == commits, \
        "the build was uploaded again"


# --- issue 26: the upload record says which command owns a repo ----------------------------------
def test_a_space_owners_edits_and_another_commands_space_are_refused_until_take_over(
        hub_server, tmp_path):
    """(before: `meditod space` replaced an owner's edited app.py without a word, and
    `meditod leaderboard --repo <the assistant Space>` replaced its app and deleted models/)"""
    env = hub_server.client_env(tmp_path)
    ids = [f"--{t}=org/meditod-tiny-{t}" for t in ("nlu", "pol", "nlg")]
    assert meditod(env, "space", "--repo", "org/assistant", *ids).returncode == 0
    repo = hub_server.repo("space", "org/assistant")
    with hub_server.lock:  # the owner edits the app on the Hub
        hub_server.commit(repo, "main", "my app", "", {"app.py": b"# the owner's app\n"}, {})
    before = digests(hub_server.files("space", "org/assistant"))

    cases = [("space over an edited app.py", ["space", "--repo", "org/assistant", *ids],
              "app.py changed on the Hub since `meditod space` uploaded it"),
             ("leaderboard over the assistant Space", ["leaderboard", "--repo", "org/assistant",
                                                       "--dataset", "org/data"],
              "org/assistant was uploaded by `meditod space`, not `meditod leaderboard`")]
    for name, argv, phrase in cases:
        done = meditod(env, *argv)
        kind = classify(done.returncode, done.stdout, done.stderr, False, False)
        if digests(hub_server.files("space", "org/assistant")) != before:
            kind = "data lost or exposed"
        record(f"{name}: refused", kind)
        assert kind == "clear", done.stderr[-2000:]
        assert phrase in done.stderr and "--take_over" in done.stderr, done.stderr

    taken = meditod(env, "space", "--repo", "org/assistant", *ids, "--take_over")
    assert taken.returncode == 0, taken.stderr[-2000:]
    assert hub_server.files("space", "org/assistant")["app.py"] != b"# the owner's app\n"
    again = meditod(env, "space", "--repo", "org/assistant", *ids)  # its own files, unedited
    assert again.returncode == 0, again.stderr[-2000:]


# --- issue 36, the battery's licences: a push proves the licence again from the data -------------
def _claim(folder: Path, **claims) -> None:
    """Edit a build's manifest and card together, as a user could, so that they agree."""
    from huggingface_hub import DatasetCard

    from meditod_hub.data.manifest import file_sha256

    card = DatasetCard.load(folder / "README.md")
    synthetic = claims["licence"] == "synthetic"
    card.data.tags = [*(card.data.tags or []), "synthetic"] if synthetic else card.data.tags
    for key in [k for k in card.data.to_dict() if k.startswith("extra_gated_")]:
        card.data.pop(key)
    card.save(folder / "README.md")
    manifest = json.loads((folder / "build_manifest.json").read_text())
    manifest.update(synthetic=synthetic, gated=False, **claims)
    manifest["files"]["README.md"] = file_sha256(folder / "README.md")
    (folder / "build_manifest.json").write_text(json.dumps(manifest))


EDITED_CLAIMS = {
    "the embedded sample": {"licence": "synthetic", "provenance": {"kind": "embedded-sample"}},
    "a generated corpus": {"licence": "synthetic", "provenance": {"kind": "synthetic-corpus"},
                           "generator": {"name": "meditod_hub.data.synthetic", "seed": 3,
                                         "dialogues": 4}},
    "a corpus with no record": {"licence": "synthetic",
                                "provenance": {"kind": "synthetic-corpus"}},
    "own, licence invisible": {"licence": "own", "license": "\u200b"},
}


@pytest.mark.parametrize("claim", EDITED_CLAIMS)
def test_a_push_never_trusts_an_edited_manifest_and_card(claim, tmp_path, capsys, monkeypatch):
    """Before: a build of licence-restricted dialogues whose manifest and card were edited
    together to say synthetic pushed ungated and public. The push rebuilds the source a synthetic
    claim names and compares the data; nothing reaches the Hub before."""
    monkeypatch.setenv("HF_TOKEN", "hf_unusedWriteToken0123456789abcdefABC")
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    release = write_release(tmp_path / "release")
    assert run_main(build_cmd.main, ["--source", str(release), "--out", str(tmp_path / "m")]) == 0
    _claim(tmp_path / "m", **EDITED_CLAIMS[claim])
    capsys.readouterr()
    outcome = run_case(f"push: an edited manifest and card claiming {claim}", push_cmd.main,
                       ["--folder", tmp_path / "m", "--repo", "org/x", "--public"], capsys)
    expect(outcome, "build_manifest.json", code=1)
    assert "synthetic" in outcome.err or "visible licence" in outcome.err, outcome.err


# --- issue 36, the battery's catch-all messages: HF_HUB_OFFLINE is named, not "unexpected" --------
def test_a_push_with_the_hub_offline_says_so_in_one_line(embedded_build, capsys, monkeypatch):
    """Before: "unexpected OfflineModeIsEnabled"; the real synthetic build also proves its licence
    again on the way (proof.reprove_licence), so the push reaches the Hub client."""
    monkeypatch.setenv("HF_TOKEN", "hf_unusedWriteToken0123456789abcdefABC")
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    outcome = run_case("push: HF_HUB_OFFLINE set", push_cmd.main,
                       ["--folder", embedded_build, "--repo", "org/x"], capsys)
    expect(outcome, "HF_HUB_OFFLINE is set", code=1)
    assert "unexpected" not in outcome.err
