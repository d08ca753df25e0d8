"""`meditod build` and `meditod synthetic`: bad releases, outputs it must not write over,
interruptions at every stage, a full disk, and the authors' dialogues hidden in a synthetic
release.

Part of the failure sweep (tests/test_failure_*.py): each case must end in a clear error
(non-zero exit, a one-line `error:` that is not an "unexpected" failure), never a traceback,
a silent success, a lost file or a secret in the output; helpers.py keeps the sweep table.
Offline, CPU.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import (
    dialogs_of,
    digests,
    edit_dialogs,
    eval_args,
    evaluated_run,
    expect,
    first_slot,
    record,
    run_case,
    write_release,
)

from meditod_hub.commands import build as build_cmd
from meditod_hub.commands import evaluate as evaluate_cmd
from meditod_hub.commands import publish as publish_cmd
from meditod_hub.commands import synthetic as synthetic_cmd
from meditod_hub.data import build as B
from meditod_hub.data import parquet, synthetic
from meditod_hub.data.build_lock import build_lock
from meditod_hub.data.manifest import verify_manifest
from meditod_hub.data.synthetic import generate_release
from meditod_hub.errors import run_main

PROJECT = Path(__file__).resolve().parent.parent


# --- build: bad releases -----------------------------------------------------------------------

BAD_RELEASES = {
    "slot value is an object": (lambda r: edit_dialogs(r, lambda d: first_slot(d).update(value={"a": 1})),
                                "dialogue 1, utterance 1: slot 'positive_symptom' `value` must be a string"),
    "slot value is a list": (lambda r: edit_dialogs(r, lambda d: first_slot(d).update(value=["a"])),
                             "`value` must be a string, got list"),
    "attribute holds an object": (lambda r: edit_dialogs(r, lambda d: first_slot(d).update(onset={"x": 1})),
                                  "attribute 'onset' on slot 'positive_symptom' holds an object"),
    "empty release": (lambda r: (r / "dialogs.json").write_text("{}"), "holds no dialogue"),
    "dialogue id listed twice": (
        lambda r: (r / "dialogs.json").write_text(
            '{"1": ' + json.dumps(dialogs_of(r)["1"]) + ', "2": ' + json.dumps(dialogs_of(r)["2"])
            + ', "3": ' + json.dumps(dialogs_of(r)["3"]) + ', "2": ' + json.dumps(dialogs_of(r)["1"]) + "}"),
        "dialogue id(s) listed twice: 2"),
    "invalid JSON": (lambda r: (r / "dialogs.json").write_text('{"1": '), "dialogs.json: invalid JSON"),
    "NaN in an attribute": (lambda r: edit_dialogs(r, lambda d: first_slot(d).update(
        onset=float("nan"))), "dialogs.json: holds NaN, which JSON has no number for"),
    "Infinity in a split file": (lambda r: (r / "test_ids.json").write_text('[Infinity]'),
                                 "test_ids.json: holds Infinity"),
    # issue 46: Python read 1e400 as inf, which no JSON reader or Parquet column takes back
    "1e400 in an attribute": (lambda r: (r / "dialogs.json").write_text(
        (r / "dialogs.json").read_text().replace('"utterances"', '"x": 1e400, "utterances"', 1)),
        "dialogs.json: holds the number 1e400, past what a double holds"),
    "an integer past 64 bits in a split file": (
        lambda r: (r / "test_ids.json").write_text("[" + "9" * 25 + "]"),
        "test_ids.json: holds the number 9999999999999999999999999, past a 64-bit integer"),
    "not UTF-8": (lambda r: (r / "dialogs.json").write_bytes(b"\xff\xfe{}"), "dialogs.json: not UTF-8"),
    "malformed release.json": (lambda r: (r / "release.json").write_text("{oops"),
                               "release.json: invalid JSON"),
    "release.json synthetic not a boolean": (
        lambda r: (r / "release.json").write_text('{"synthetic": "yes"}'),
        "`synthetic` must be true or false"),
    "missing split file": (lambda r: (r / "test_ids.json").unlink(), "test_ids.json: file not found"),
    "split names an unknown id": (lambda r: (r / "test_ids.json").write_text('["3", "99"]'),
                                  "dialogue 99: id listed in split 'test' is not in dialogs.json"),
}


@pytest.mark.parametrize("case", BAD_RELEASES)
def test_a_bad_release_is_refused_and_the_previous_build_stays(case, tmp_path, capsys):
    release = write_release(tmp_path / "release")
    out = tmp_path / "meditod"
    assert run_main(build_cmd.main, ["--source", str(release), "--out", str(out)]) == 0
    capsys.readouterr()
    damage, phrase = BAD_RELEASES[case]
    damage(release)
    outcome = run_case(f"build: {case}", build_cmd.main, ["--source", release, "--out", out], capsys,
                       protect=[out])
    expect(outcome, phrase, code=1)
    assert verify_manifest(out)  # the previous build, whole
    assert not list(tmp_path.glob(".meditod.*")), "no temporary folder or lock left behind"


OUT_CASES = {
    "--out is the release folder": (lambda t, r: r, "is the release folder or inside it"),
    "--out inside the release folder": (lambda t, r: r / "built", "is the release folder or inside it"),
    "--out holds other files (the project root)": (
        lambda t, r: PROJECT, "is the current folder or holds it"
        if PROJECT in (Path.cwd(), *Path.cwd().parents) else "holds files and no build_manifest.json"),
    "--out is a file": (lambda t, r: (t / "afile").write_text("x") and t / "afile", "is a file"),
    "--out under /proc": (lambda t, r: Path("/proc/meditod-test/meditod"), "cannot create"),
}


@pytest.mark.parametrize("case", OUT_CASES)
def test_build_never_writes_over_what_it_did_not_write(case, tmp_path, capsys):
    release = write_release(tmp_path / "release")
    out = OUT_CASES[case][0](tmp_path, release)
    # the project root: its tracked files (hashing all of it, .venv included, took 30 s, and other
    # tests write under out/ meanwhile), and nothing a build writes appears beside them
    protect = [release] + (tracked_files() if out == PROJECT else [])
    made = [PROJECT / name for name in ("build_manifest.json", "dialogues", "nlu", "pol", "nlg")]
    outcome = run_case(f"build: {case}", build_cmd.main, ["--source", release, "--out", out], capsys,
                       protect=protect)
    expect(outcome, OUT_CASES[case][1], code=2)
    assert not any(path.exists() for path in made)


def tracked_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=PROJECT, capture_output=True,
                            check=True).stdout.decode().split("\0")
    return [PROJECT / name for name in listed if name and (PROJECT / name).is_file()]


def test_a_previous_build_with_foreign_files_is_refused(tmp_path, capsys):
    release = write_release(tmp_path / "release")
    out = tmp_path / "meditod"
    assert run_main(build_cmd.main, ["--source", str(release), "--out", str(out)]) == 0
    (out / "notes.txt").write_text("mine")
    outcome = run_case("build: previous build plus a user file", build_cmd.main,
                       ["--source", release, "--out", out], capsys, protect=[out])
    expect(outcome, "also holds 1 other file(s) (notes.txt)")


def test_strict_refuses_warnings(tmp_path, capsys):
    release = write_release(tmp_path / "release", splits={"train": ["1", "2", "3"], "valid": [],
                                                          "test": []})
    outcome = run_case("build: --strict with warnings", build_cmd.main,
                       ["--source", release, "--out", tmp_path / "m", "--strict"], capsys)
    expect(outcome, "--strict", "split 'validation' is empty")
    assert not (tmp_path / "m").exists()


def test_a_concurrent_build_into_the_same_folder_is_refused(tmp_path, capsys):
    release = write_release(tmp_path / "release")
    out = tmp_path / "meditod"
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (tmp_path / ".meditod.build.lock").write_text(str(holder.pid))
        outcome = run_case("build: another build holds the folder", build_cmd.main,
                           ["--source", release, "--out", out], capsys)
        expect(outcome, f"another build into {out} is running (pid {holder.pid})")
    finally:
        holder.kill()
        holder.wait()
    assert run_main(build_cmd.main, ["--source", str(release), "--out", str(out)]) == 0, \
        "a lock left by a dead process is taken over"


def _hold_the_lock(out, barrier, log, hold_s):
    """One contender of the stale-lock race (a forked process): take the lock at the barrier,
    hold it `hold_s`, and log its interval, or the one line a losing build prints."""

    barrier.wait()
    try:
        with build_lock(out):
            start = time.monotonic()
            time.sleep(hold_s)
            line = f"held {start} {time.monotonic()}"
    except B.MeditodError as exc:
        line = f"refused {exc}"
    with open(log, "a") as f:
        f.write(line.replace("\n", " ") + "\n")


@pytest.mark.parametrize("stale", ["a dead build's pid", "an empty file (killed before its pid)"])
def test_builds_racing_for_a_stale_lock_never_both_hold_it(stale, tmp_path):
    """(before: every contender removed the stale file and created its own, so two held it,
    and the loser's message blamed the disk)"""
    import multiprocessing

    out, log = tmp_path / "meditod", tmp_path / "log"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / ".meditod.build.lock").write_text(str(dead.pid) if "pid" in stale else "")
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(6)
    racers = [context.Process(target=_hold_the_lock, args=(out, barrier, log, 0.5))
              for _ in range(6)]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join(60)
    lines = log.read_text().splitlines()
    held = sorted((float(a), float(b)) for _, a, b in (x.split() for x in lines
                                                      if x.startswith("held")))
    assert len(lines) == 6 and held, lines
    assert all(end <= start for (_, end), (start, _) in zip(held, held[1:])), \
        f"two builds held the lock at once: {held}"
    refused = [x for x in lines if x.startswith("refused")]
    assert all(f"another build into {out} is running" in x and "disk" not in x
               for x in refused), refused
    assert not (tmp_path / ".meditod.build.lock").exists()
    record(f"build: builds racing for a stale lock ({stale})", "clear")


# --- build: interrupted at every stage ----------------------------------------------------------

KILL_POINTS = ["read_release", "write_parquet", "infos_json", "render_dataset_card", "write_manifest",
               "rename"]


@pytest.mark.parametrize("point", KILL_POINTS)
def test_a_build_killed_anywhere_leaves_the_previous_build_whole(point, tmp_path, monkeypatch):
    """A crash at each stage of a real-data build over a synthetic build: the synthetic build
    stays whole, and push would still see a synthetic, manifest-matching folder."""
    synthetic = generate_release(tmp_path / "synthetic", dialogues=4)
    real = write_release(tmp_path / "real")
    out = tmp_path / "meditod"
    B.build(B.BuildArguments(source=synthetic, out=out))
    before = digests([out])

    class Killed(BaseException):
        pass

    def die(*args, **kwargs):
        raise Killed

    target = os if point == "rename" else B
    name = "rename" if point == "rename" else point
    original = getattr(target, name)
    calls = {"n": 0}

    def die_at_the_swap(*args, **kwargs):  # the swap's first rename, not the lock's
        calls["n"] += 1
        if Path(args[0]) == out:
            raise Killed
        return original(*args, **kwargs)

    monkeypatch.setattr(target, name, die_at_the_swap if point == "rename" else die)
    with pytest.raises(Killed):
        B.build(B.BuildArguments(source=real, out=out))
    monkeypatch.undo()
    assert digests([out]) == before
    assert verify_manifest(out)["synthetic"] is True
    leftovers = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".meditod"))
    assert all(".build-" in name or ".previous-" in name for name in leftovers), leftovers
    B.build(B.BuildArguments(source=real, out=out))  # the next build cleans up and goes through
    assert verify_manifest(out)["synthetic"] is False
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".meditod")]


# --- synthetic: interrupted generation, and what a generation never replaces --------------------

@pytest.mark.parametrize("point", ["generate_dialogues", "write_text", "rename"])
def test_a_generation_killed_anywhere_leaves_the_previous_release_whole(point, tmp_path,
                                                                       monkeypatch):
    """A crash before writing, between two files, or at the swap, while generating over an earlier
    synthetic release: that release stays whole and nothing is left beside it (before: files were
    written in place one by one, so a crash left a new dialogs.json beside the old id files)."""
    out = generate_release(tmp_path / "release", seed=1, dialogues=4)
    before = digests([out])

    class Killed(BaseException):
        pass

    original = {"generate_dialogues": synthetic.generate_dialogues, "write_text": Path.write_text,
                "rename": os.rename}[point]
    writes = []

    def die(*args, **kwargs):
        writes.append(args[0])
        if point == "write_text" and len(writes) < 2:  # dialogs.json written, then killed
            return original(*args, **kwargs)
        if point == "rename" and Path(args[0]) != out:  # the swap's first rename
            return original(*args, **kwargs)
        raise Killed

    monkeypatch.setattr(*{"generate_dialogues": (synthetic, "generate_dialogues"),
                          "write_text": (Path, "write_text"), "rename": (os, "rename")}[point], die)
    with pytest.raises(Killed):
        generate_release(out, seed=2, dialogues=4)
    monkeypatch.undo()
    assert digests([out]) == before
    assert [p.name for p in tmp_path.iterdir()] == ["release"]
    generate_release(out, seed=2, dialogues=4)  # the next generation goes through
    assert digests([out]) != before


def test_a_generation_never_replaces_what_it_did_not_write(tmp_path, capsys):
    """A real release, a synthetic one with a file added or a dialogue edited, a file: each
    refused in one line and left as it was (before: a synthetic release.json was enough, and the
    folder's other files were written over or kept beside the new release)."""
    real = write_release(tmp_path / "real")
    added = generate_release(tmp_path / "added", dialogues=4)
    (added / "notes.txt").write_text("my notes")
    edited = generate_release(tmp_path / "edited", seed=3, dialogues=4)
    edit_dialogs(edited, lambda d: d["1"]["utterances"][1].update(
        text="I have had a dry cough for a month."))
    a_file = tmp_path / "file"
    a_file.write_text("not a folder")
    for target, phrase in [(real, "no synthetic release.json"), (added, "added to since it was "
                           "generated (notes.txt)"), (edited, "(dialogs.json)"), (a_file, "is a file")]:
        outcome = run_case(f"synthetic: --out {target.name}", synthetic_cmd.main,
                           ["--out", target, "--dialogues", 4], capsys, protect=[target])
        expect(outcome, phrase, code=2)
    same = generate_release(tmp_path / "same", seed=5, dialogues=4)  # a rerun replaces its own
    assert generate_release(same, seed=5, dialogues=4) == same


def test_a_build_killed_between_the_two_renames_is_restored(tmp_path):
    """The one window where `out` is absent: the next build puts the previous build back first."""
    release = write_release(tmp_path / "release")
    out = tmp_path / "meditod"
    B.build(B.BuildArguments(source=release, out=out))
    before = digests([out])
    os.rename(out, tmp_path / f".meditod.previous-{os.getpid()}")  # as a kill would leave it
    B._recover(out)
    assert digests([out]) == before


def test_an_absurdly_long_utterance_is_reported_and_built(tmp_path, capsys):
    release = write_release(tmp_path / "release")
    edit_dialogs(release, lambda d: d["1"]["utterances"][1].update(text="x " * 15_000))
    built = B.build(B.BuildArguments(source=release, out=tmp_path / "m"))
    assert any("characters long" in str(p) and p.uttr_id == 1 for p in built.release.problems)


def test_rows_written_in_context_bounded_chunks_are_the_same_rows(tmp_path, monkeypatch):
    """A long context splits a dialogue's rows over several writes; the dataset must not change."""
    from meditod_hub.data.dataset import available_splits, read_parquet_split
    release = write_release(tmp_path / "release")
    whole = B.build(B.BuildArguments(source=release, out=tmp_path / "whole"))
    monkeypatch.setattr(parquet, "ROW_GROUP_BYTES", 1)  # every row its own chunk
    chunked = B.build(B.BuildArguments(source=release, out=tmp_path / "chunked"))
    assert whole.sizes == chunked.sizes
    for config in B.CONFIGS:
        for split in available_splits(tmp_path / "whole", config):
            assert read_parquet_split(tmp_path / "whole", config, split) \
                == read_parquet_split(tmp_path / "chunked", config, split), (config, split)


# --- build: outputs that cannot be swapped in one rename; a full disk ---------------------------

def test_build_out_a_symlink_to_a_previous_build_is_refused_and_both_stay(tmp_path, capsys):
    release = write_release(tmp_path / "release")
    target = tmp_path / "meditod"
    assert run_main(build_cmd.main, ["--source", str(release), "--out", str(target)]) == 0
    link = tmp_path / "link"
    link.symlink_to(target)
    outcome = run_case("build: --out a symlink to a previous build", build_cmd.main,
                       ["--source", release, "--out", link], capsys, protect=[target])
    expect(outcome, f"--out {link} is a symbolic link (to {target})", code=2)
    assert link.is_symlink() and verify_manifest(target)


@pytest.mark.parametrize("out", [".", ".."])
def test_build_out_the_current_folder_is_refused(out, tmp_path, capsys, monkeypatch):
    release = write_release(tmp_path / "release")
    work = tmp_path / "work" / "here"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    outcome = run_case(f"build: --out {out}", build_cmd.main, ["--source", release, "--out", out], capsys)
    expect(outcome, "is the current folder or holds it", code=2)
    assert not any(work.iterdir()) and not list(work.parent.glob(".*lock"))


def test_build_out_a_mount_point_is_refused(tmp_path, capsys, monkeypatch):
    release = write_release(tmp_path / "release")
    mount = tmp_path / "mnt"
    mount.mkdir()
    real = os.path.ismount
    monkeypatch.setattr(os.path, "ismount", lambda p: Path(p) == mount or real(p))
    outcome = run_case("build: --out an empty mount point", build_cmd.main,
                       ["--source", release, "--out", mount], capsys)
    expect(outcome, "is a mount point", f"--out {mount / 'meditod'}", code=2)
    assert not any(mount.iterdir())


def _disk_full(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_build_on_a_full_disk_names_the_build_and_keeps_the_previous_one(tmp_path, capsys,
                                                                         monkeypatch):
    release = write_release(tmp_path / "release")
    out = tmp_path / "meditod"
    assert run_main(build_cmd.main, ["--source", str(release), "--out", str(out)]) == 0
    monkeypatch.setattr(B, "write_parquet", _disk_full)
    outcome = run_case("build: disk full", build_cmd.main, ["--source", release, "--out", out], capsys,
                       protect=[out])
    expect(outcome, f"cannot write the build of {out}", "the disk is full", code=1)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".meditod")]


@pytest.mark.parametrize("command", ["evaluate", "train run files", "publish card"])
def test_a_full_disk_while_writing_names_the_file_and_keeps_the_old_one(
        command, embedded_build, predictions, tmp_path, capsys, monkeypatch):
    """atomic_write's siblings: every file the kit writes whole names itself when the disk fills."""
    if command == "evaluate":
        out = tmp_path / "results.json"
        assert run_main(evaluate_cmd.main, eval_args(embedded_build, predictions, out)) == 0
        main, argv = evaluate_cmd.main, eval_args(embedded_build, predictions, out)
    elif command == "train run files":
        from meditod_hub.models.runs import write_run_files

        out = tmp_path / "run" / "run_info.json"
        write_run_files(out.parent, {"task": "nlu"}, {"seed": 1})
        main, argv = (lambda argv: write_run_files(out.parent, {"task": "pol"}, {}) or 0), []
    else:
        run = evaluated_run(tmp_path / "run")
        out = tmp_path / "card" / "README.md"
        assert run_main(publish_cmd.main, ["--run", str(run), "--repo", "org/x", "--dry_run",
                                           "--card_dir", str(out.parent)]) == 0
        main, argv = publish_cmd.main, ["--run", run, "--repo", "org/x", "--dry_run", "--card_dir",
                                        out.parent]
    capsys.readouterr()
    monkeypatch.setattr(os, "fsync", _disk_full)
    if command == "publish card":  # huggingface_hub's ModelCard.save writes without fsync
        from huggingface_hub import ModelCard

        monkeypatch.setattr(ModelCard, "save", lambda self, path: _disk_full())
    outcome = run_case(f"{command}: disk full", main, argv, capsys, protect=[out])
    assert outcome.kind == "clear", outcome.err
    assert "the disk is full" in outcome.err and str(out.parent) in outcome.err


# --- issue 26, the sweep's classes: licensed dialogues hidden at any key of a synthetic release -----
def _nested(release: Path, where, authors: dict) -> None:
    edit_dialogs(release, lambda d: where(d).update(notes={"deeper": [authors]}))


HIDDEN = {
    "a dialogue-level key": lambda r, a: edit_dialogs(r, lambda d: d[next(iter(d))].update(notes=a)),
    "an utterance's key": lambda r, a: _nested(r, lambda d: d[next(iter(d))]["utterances"][0], a),
    "an NLU item's key": lambda r, a: _nested(r, lambda d: next(
        u for u in d[next(iter(d))]["utterances"] if u["speaker"] == "patient")["nlu"][0], a),
    "a slot entry's key": lambda r, a: _nested(r, lambda d: next(
        s for u in d[next(iter(d))]["utterances"] if u["speaker"] == "patient"
        for item in u["nlu"] for entries in item.get("slots", {}).values() for s in entries), a),
    "dialogs.json, in no split": lambda r, a: edit_dialogs(r, lambda d: d.update(
        {f"x{k}": v for k, v in a.items()})),
    "release.json": lambda r, a: (r / "release.json").write_text(json.dumps(
        {**json.loads((r / "release.json").read_text()), "notes": a})),
    "a file in a subfolder": lambda r, a: (r / "extra").mkdir() or (r / "extra" / "x.json")
    .write_text(json.dumps(a)),
}


@pytest.mark.parametrize("base", ["embedded sample", "generated corpus"])
@pytest.mark.parametrize("place", HIDDEN)
def test_the_authors_dialogues_at_any_key_never_build_as_synthetic(base, place, sample_release,
                                                                   embedded_release, tmp_path,
                                                                   capsys):
    """Every licence proof (the embedded sample's fingerprint, a corpus regenerated from its
    seed) covers every key at every level and every file: the authors' sample hidden anywhere
    makes the build licence-restricted and gated (before: a dialogue-level key rode along)."""
    release = tmp_path / "release"
    if base == "embedded sample":
        shutil.copytree(embedded_release, release)
    else:
        generate_release(release, seed=3, dialogues=4)
    HIDDEN[place](release, json.loads((sample_release / "dialogs.json").read_text()))
    code = run_main(build_cmd.main, ["--source", str(release), "--out", str(tmp_path / "m")])
    capsys.readouterr()
    manifest = verify_manifest(tmp_path / "m") if code == 0 else {"synthetic": False,
                                                                      "gated": True}
    kind = "clear" if (manifest["synthetic"], manifest["gated"]) == (False, True) \
        else "data lost or exposed"
    record(f"build: the authors' sample in {base}'s {place}", kind)
    assert kind == "clear", manifest


# --- issue 36, the battery's licences: a licence no reader can see declares nothing --------------
BLANK_LICENCES = {"zero-width space": "\u200b", "no-break space": "\u00a0",
                  "word joiner and zero-width joiner": "\u2060\u200d", "byte order mark": "\ufeff",
                  "tab and newline": "\t\n", "right-to-left mark": "\u200f"}


@pytest.mark.parametrize("how", ["release.json", "--license"])
@pytest.mark.parametrize("blank", BLANK_LICENCES)
def test_a_blank_looking_licence_declares_nothing(blank, how, sample_release, tmp_path, capsys):
    """Before: release.json's {"license": "\\u200b"} built the authors' dialogues as the user's
    own, ungated, and the push made them public."""
    release, extra = tmp_path / "release", []
    shutil.copytree(sample_release, release)
    if how == "release.json":
        (release / "release.json").write_text(json.dumps({"license": BLANK_LICENCES[blank]}))
    else:
        extra = [f"--license={BLANK_LICENCES[blank]}"]
    code = run_main(build_cmd.main, ["--source", str(release), "--out", str(tmp_path / "m"), *extra])
    capsys.readouterr()
    manifest = verify_manifest(tmp_path / "m") if code == 0 else {"licence": "meditod",
                                                                      "gated": True}
    kind = "clear" if (manifest["licence"], manifest["gated"]) == ("meditod", True) \
        else "data lost or exposed"
    record(f"build: the authors' dialogues under a {blank} licence ({how})", kind)
    assert kind == "clear", manifest


# --- issue 36, the battery's catch-all messages: a synthetic corpus too small to split ------------
@pytest.mark.parametrize("count", ["0", "-3", "3"])
def test_synthetic_with_fewer_dialogues_than_splits_says_how_many(count, tmp_path, capsys):
    """Before: "unexpected ValueError ... need at least 4 dialogues", asking for a report."""
    outcome = run_case(f"synthetic: --dialogues {count}", synthetic_cmd.main,
                       ["--out", tmp_path / "corpus", "--dialogues", count], capsys)
    expect(outcome, f"--dialogues {count}: give at least 4 (one per split: train, validation, "
                    "test, test_ood)", code=2)
    assert not (tmp_path / "corpus").exists()
