"""The failure sweep: bad inputs and faults across all twelve commands. Each case must end in a
clear error (non-zero exit, a one-line `error:` that is not an "unexpected" failure; a release's
problems may follow, one line each), never a traceback, a silent success, a lost file or a
secret in the output. The cases are tables: bad releases, outputs that cannot be written, every
command's damaged input files (DAMAGED_FILES x DAMAGE), issue 15's tracebacks and their siblings,
keys in the environment; test_failure_flags.py adds every impossible flag value. `pytest
tests/test_failure_paths.py tests/test_failure_flags.py` prints the sweep table (cases / clear /
tracebacks / silent / data lost or exposed, tests/helpers.py) at the end. Offline, CPU.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest
from helpers import (
    classify,
    digests,
    echo_assistant,
    expect,
    labels_of,
    meditod,
    offline_env,
    record,
    run_case,
    served_runs,
    write_release,
    write_run,
)
from transformers import TrainerCallback

from meditod_hub.commands import build as build_cmd
from meditod_hub.commands import evaluate as evaluate_cmd
from meditod_hub.commands import predict as predict_cmd
from meditod_hub.commands import publish as publish_cmd
from meditod_hub.commands import push as push_cmd
from meditod_hub.commands import synthetic as synthetic_cmd
from meditod_hub.commands import train as train_cmd
from meditod_hub.data import build as B
from meditod_hub.data import synthetic
from meditod_hub.data.synthetic import generate_release
from meditod_hub.errors import run_main
from meditod_hub.files import record_output
from meditod_hub.models import train as T

PROJECT = Path(__file__).resolve().parent.parent


# --- build: bad releases -----------------------------------------------------------------------

def _dialogs(release: Path) -> dict:
    return json.loads((release / "dialogs.json").read_text())


def _rewrite(release: Path, change) -> None:
    dialogs = _dialogs(release)
    change(dialogs)
    (release / "dialogs.json").write_text(json.dumps(dialogs))


def _first_entry(dialogs: dict) -> dict:
    return dialogs["1"]["utterances"][1]["nlu"][0]["slots"]["positive_symptom"][0]


BAD_RELEASES = {
    "slot value is an object": (lambda r: _rewrite(r, lambda d: _first_entry(d).update(value={"a": 1})),
                                "dialogue 1, utterance 1: slot 'positive_symptom' `value` must be a string"),
    "slot value is a list": (lambda r: _rewrite(r, lambda d: _first_entry(d).update(value=["a"])),
                             "`value` must be a string, got list"),
    "attribute holds an object": (lambda r: _rewrite(r, lambda d: _first_entry(d).update(onset={"x": 1})),
                                  "attribute 'onset' on slot 'positive_symptom' holds an object"),
    "empty release": (lambda r: (r / "dialogs.json").write_text("{}"), "holds no dialogue"),
    "dialogue id listed twice": (
        lambda r: (r / "dialogs.json").write_text(
            '{"1": ' + json.dumps(_dialogs(r)["1"]) + ', "2": ' + json.dumps(_dialogs(r)["2"])
            + ', "3": ' + json.dumps(_dialogs(r)["3"]) + ', "2": ' + json.dumps(_dialogs(r)["1"]) + "}"),
        "dialogue id(s) listed twice: 2"),
    "invalid JSON": (lambda r: (r / "dialogs.json").write_text('{"1": '), "dialogs.json: invalid JSON"),
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
    assert B.verify_manifest(out)  # the previous build, whole
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
    protect = [release] + ([out] if out == PROJECT else [])
    outcome = run_case(f"build: {case}", build_cmd.main, ["--source", release, "--out", out], capsys,
                       protect=protect)
    expect(outcome, OUT_CASES[case][1], code=2)


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
    import time

    barrier.wait()
    try:
        with B.build_lock(out):
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
    assert B.verify_manifest(out)["synthetic"] is True
    leftovers = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".meditod"))
    assert all(".build-" in name or ".previous-" in name for name in leftovers), leftovers
    B.build(B.BuildArguments(source=real, out=out))  # the next build cleans up and goes through
    assert B.verify_manifest(out)["synthetic"] is False
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
    dialogs = json.loads((edited / "dialogs.json").read_text())
    dialogs["1"]["utterances"][1]["text"] = "I have had a dry cough for a month."
    (edited / "dialogs.json").write_text(json.dumps(dialogs))
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
    _rewrite(release, lambda d: d["1"]["utterances"][1].update(text="x " * 15_000))
    built = B.build(B.BuildArguments(source=release, out=tmp_path / "m"))
    assert any("characters long" in str(p) and p.uttr_id == 1 for p in built.release.problems)


def test_rows_written_in_context_bounded_chunks_are_the_same_rows(tmp_path, monkeypatch):
    """A long context splits a dialogue's rows over several writes; the dataset must not change."""
    from meditod_hub.data.dataset import available_splits, read_parquet_split
    release = write_release(tmp_path / "release")
    whole = B.build(B.BuildArguments(source=release, out=tmp_path / "whole"))
    monkeypatch.setattr(B, "ROW_GROUP_BYTES", 1)  # every row its own chunk
    chunked = B.build(B.BuildArguments(source=release, out=tmp_path / "chunked"))
    assert whole.sizes == chunked.sizes
    for config in B.CONFIGS:
        for split in available_splits(tmp_path / "whole", config):
            assert read_parquet_split(tmp_path / "whole", config, split) \
                == read_parquet_split(tmp_path / "chunked", config, split), (config, split)


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


# --- evaluate ----------------------------------------------------------------------------------

@pytest.fixture
def predictions(embedded_build, tmp_path) -> Path:
    """Gold NLU labels of the test split as a predictions file."""
    from meditod_hub.data.dataset import load_split

    path = tmp_path / "predictions.jsonl"
    path.write_text("".join(json.dumps({"id": r["id"], "prediction": r["nlu"], "raw": "",
                                        "parse_ok": True}) + "\n"
                            for r in load_split(embedded_build, "nlu", "test")))
    return path


def _eval(data, preds, out, *extra):
    return [str(a) for a in ("--task", "nlu", "--data", data, "--split", "test", "--predictions",
                             preds, "--out", out, *extra)]


def test_evaluate_never_writes_over_its_input(embedded_build, predictions, capsys):
    outcome = run_case("evaluate: --out is the predictions file", evaluate_cmd.main,
                       _eval(embedded_build, predictions, predictions), capsys, protect=[predictions])
    expect(outcome, "is also an input of this command", code=2)
    assert not predictions.with_suffix(".md").exists()


def test_two_evaluations_in_one_folder_keep_their_own_side_files(embedded_build, predictions,
                                                                 tmp_path):
    for name in ("nlu-test", "nlu-again"):
        assert run_main(evaluate_cmd.main, _eval(embedded_build, predictions, tmp_path / f"{name}.json")) == 0
    for name in ("nlu-test", "nlu-again"):
        assert (tmp_path / f"{name}.md").read_text().startswith("# MediTOD NLU results (test)")
        assert (tmp_path / f"{name}.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("case", ["predictions is a folder", "out is a file", "predictions not UTF-8",
                                  "parse_ok is a string", "misspelled local data", "unknown split",
                                  "missing embedding judge model", "llm judge without url"])
def test_evaluate_bad_input(case, embedded_build, predictions, tmp_path, capsys):
    argv = _eval(embedded_build, predictions, tmp_path / "results.json")
    phrase = {
        "predictions is a folder": "is a folder: give the predictions .jsonl file",
        "out is a file": "is a file, not a folder",  # --out is a folder, as Make's OUT
        "predictions not UTF-8": "not UTF-8 text",
        "parse_ok is a string": "line 1: `parse_ok` must be true or false",
        "misspelled local data": "no such folder: meditd",
        "unknown split": "has no 'nlu' 'tset' split (splits: train, validation, test, test_ood)",
        "missing embedding judge model": "embedding judge",
        "llm judge without url": "--judge_url",
    }[case]
    if case == "predictions is a folder":
        argv[7] = str(tmp_path)
    elif case == "out is a file":
        (tmp_path / "notes.txt").write_text("mine\n")
        argv[9] = str(tmp_path / "notes.txt")
    elif case == "predictions not UTF-8":
        predictions.write_bytes(b"\xff\xfe garbage\n")
    elif case == "parse_ok is a string":
        lines = predictions.read_text().splitlines()
        lines[0] = lines[0].replace('"parse_ok": true', '"parse_ok": "false"')
        predictions.write_text("\n".join(lines) + "\n")
    elif case == "misspelled local data":
        argv[3] = "meditd"
    elif case == "unknown split":
        argv[5] = "tset"
    elif case == "missing embedding judge model":
        argv += ["--judge", "embedding", "--judge_model", str(tmp_path / "no-model")]
    elif case == "llm judge without url":
        argv += ["--judge", "llm"]
    outcome = run_case(f"evaluate: {case}", evaluate_cmd.main, argv, capsys, protect=[predictions])
    expect(outcome, phrase)
    assert not (tmp_path / "results.json").exists()


# --- predict -----------------------------------------------------------------------------------

@pytest.fixture
def run_folder(tiny_models, tmp_path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(tiny_models / "tiny-llama", run)
    (run / "run_info.json").write_text(json.dumps({"family": "llama", "task": "nlu",
                                                   "quantization": None}))
    (run / "recipe.yaml").write_text("max_new_tokens: 4\n")
    (run / "checkpoints").mkdir()
    return run


@pytest.mark.parametrize("case", ["model path missing", "checkpoints folder", "not a model folder",
                                  "model path is a file", "wrong family", "unknown split",
                                  "trained for another task", "upstream for nlu",
                                  "out is a file", "model without run_info or family",
                                  "hub model unreachable"])
def test_predict_bad_input(case, run_folder, embedded_build, tmp_path, capsys, monkeypatch):
    argv = ["--model_path", run_folder, "--task", "nlu", "--data", embedded_build,
            "--split", "test", "--out", tmp_path / "p.jsonl"]
    phrase, code = {
        "model path missing": (f"no such folder: {tmp_path / 'nope'}", 2),
        "checkpoints folder": ("holds trainer checkpoints: give the run folder", 2),
        "not a model folder": ("is not a model folder", 2),
        "model path is a file": ("is a file", 2),
        "wrong family": ("invalid choice", 2),
        "unknown split": ("has no 'nlu' 'tset' split", 1),
        "trained for another task": ("was trained for nlu, not pol", 2),
        "upstream for nlu": ("--upstream needs --task pol", 2),
        "out is a file": ("is a file, not a folder", 2),
        "model without run_info or family": ("has no run_info.json: pass --family", 2),
        "hub model unreachable": ("cannot download org/some-model", 1),
    }[case]
    if case == "model path missing":
        argv[1] = tmp_path / "nope"
    elif case == "checkpoints folder":
        argv[1] = run_folder / "checkpoints"
    elif case == "not a model folder":
        argv[1] = tmp_path
    elif case == "model path is a file":
        argv[1] = run_folder / "run_info.json"
    elif case == "wrong family":
        argv += ["--family", "gpt2"]
    elif case == "unknown split":
        argv[7] = "tset"
    elif case == "trained for another task":
        argv[3] = "pol"
    elif case == "upstream for nlu":
        argv += ["--upstream", tmp_path / "up.jsonl"]
        (tmp_path / "up.jsonl").write_text("")
    elif case == "out is a file":
        (tmp_path / "notes.txt").write_text("mine\n")
        argv[9] = tmp_path / "notes.txt"
    elif case == "model without run_info or family":
        (run_folder / "run_info.json").unlink()
    elif case == "hub model unreachable":  # the Hub is never reached in tests
        monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
        argv[1] = "org/some-model"
    outcome = run_case(f"predict: {case}", predict_cmd.main, argv, capsys, protect=[run_folder])
    expect(outcome, phrase, code=code)


# --- train -------------------------------------------------------------------------------------

def _recipe(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "recipe.yaml"
    path.write_text(text)
    return path


TINY = (PROJECT / "recipes" / "tiny-llama" / "nlu.yaml").read_text()


@pytest.mark.parametrize("case", ["recipe missing", "invalid YAML", "not a mapping", "unknown key",
                                  "unknown family", "misspelled validation split",
                                  "misspelled dataset", "output_dir is a file"])
def test_train_bad_input(case, embedded_build, tiny_models, tmp_path, capsys):
    recipe = _recipe(tmp_path, TINY)
    extra: list = [f"--dataset_name={embedded_build}",
                   f"--model_name_or_path={tiny_models / 'tiny-llama'}",
                   f"--output_dir={tmp_path / 'run'}", "--max_steps=1"]
    phrase = {
        "recipe missing": "no recipe",
        "invalid YAML": "invalid YAML at line",
        "not a mapping": "a recipe is a YAML mapping",
        "unknown key": "unknown setting(s) learning_rte (did you mean learning_rate?)",
        "unknown family": "unknown model family 'gpt2'",
        "misspelled validation split": "has no 'nlu' 'valid' split (splits: train, validation",
        "misspelled dataset": "no such folder: meditd",
        "output_dir is a file": "is a file: give a folder",
    }[case]
    if case == "recipe missing":
        recipe = tmp_path / "nope.yaml"
    elif case == "invalid YAML":
        recipe.write_text(TINY + "\nfoo: [unclosed\n")
    elif case == "not a mapping":
        recipe.write_text("- a\n- b\n")
    elif case == "unknown key":
        recipe.write_text(TINY + "learning_rte: 1\n")
    elif case == "unknown family":
        recipe.write_text(TINY.replace("family: llama", "family: gpt2"))
    elif case == "misspelled validation split":
        extra += ["--dataset_eval_split=valid", "--eval_strategy=steps", "--eval_steps=1"]
    elif case == "misspelled dataset":
        extra[0] = "--dataset_name=meditd"
    elif case == "output_dir is a file":
        (tmp_path / "run").write_text("x")
    outcome = run_case(f"train: {case}", train_cmd.main, [recipe, *extra], capsys, protect=[recipe])
    expect(outcome, phrase)


def _train(embedded_build, tiny_models, out, *extra):
    return run_main(train_cmd.main, [str(PROJECT / "recipes" / "tiny-llama" / "nlu.yaml"),
                                     f"--dataset_name={embedded_build}",
                                     f"--model_name_or_path={tiny_models / 'tiny-llama'}",
                                     f"--output_dir={out}", "--max_steps=2", "--save_steps=1",
                                     "--save_total_limit=3", *extra])


@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")
def test_resume_only_what_was_started(embedded_build, tiny_models, tmp_path, capsys, caplog):
    out = tmp_path / "run"
    assert _train(embedded_build, tiny_models, out) == 0
    first = json.loads((out / "run_info.json").read_text())
    record = json.loads((out / "checkpoints" / "checkpoint-2" / "meditod_resume.json").read_text())
    assert record["data"].startswith("sha256:") and record["runtime_s"] > 0
    capsys.readouterr()

    # another learning rate into the same folder: refused, checkpoints untouched
    outcome = run_case("train: resume with another recipe", train_cmd.main,
                               [PROJECT / "recipes" / "tiny-llama" / "nlu.yaml",
                                f"--dataset_name={embedded_build}",
                                f"--model_name_or_path={tiny_models / 'tiny-llama'}",
                                f"--output_dir={out}", "--max_steps=2", "--save_steps=1",
                                "--save_total_limit=3", "--learning_rate=1e-3"], capsys,
                               protect=[out / "checkpoints"])
    expect(outcome, "holds checkpoints of another run (changed: learning_rate 0.005 -> 0.001)",
           "--overwrite_output_dir=true")

    # an incomplete last checkpoint: the one before it is resumed, and runtimes add up
    (out / "checkpoints" / "checkpoint-2" / "meditod_resume.json").unlink()
    caplog.clear()
    assert _train(embedded_build, tiny_models, out) == 0
    assert "checkpoint-2 is incomplete" in caplog.text and "resuming from" in caplog.text
    resumed = json.loads((out / "run_info.json").read_text())
    earlier = json.loads((out / "checkpoints" / "checkpoint-1" / "meditod_resume.json").read_text())
    assert resumed["train_runtime_s"] > earlier["runtime_s"], "the segments add up"
    assert resumed["global_step"] == first["global_step"] == 2

    # --overwrite_output_dir starts over with the new recipe
    assert _train(embedded_build, tiny_models, out, "--learning_rate=1e-3",
                  "--overwrite_output_dir=true") == 0
    record = json.loads((out / "checkpoints" / "checkpoint-2" / "meditod_resume.json").read_text())
    assert record["settings"]["learning_rate"] == 1e-3


@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")
def test_a_resume_names_another_base_model_or_dataset_with_both_values(embedded_build, tiny_models,
                                                                       tmp_path, capsys):
    from safetensors.torch import load_file, save_file

    base, out = tmp_path / "base", tmp_path / "run"
    shutil.copytree(tiny_models / "tiny-llama", base)
    argv = [PROJECT / "recipes" / "tiny-llama" / "nlu.yaml", f"--dataset_name={embedded_build}",
            f"--model_name_or_path={base}", f"--output_dir={out}", "--max_steps=2",
            "--save_steps=1"]
    assert run_main(train_cmd.main, [str(a) for a in argv]) == 0
    before = T.base_identity(str(base), None)
    weights = load_file(base / "model.safetensors")
    save_file({k: v + 1 for k, v in weights.items()}, base / "model.safetensors",
              metadata={"format": "pt"})  # the base rebuilt differently, at the same path
    after = T.base_identity(str(base), None)
    assert before != after and str(base) in after
    capsys.readouterr()
    outcome = run_case("train: resume on another base model", train_cmd.main, argv, capsys,
                               protect=[out / "checkpoints"])
    expect(outcome, f"changed: base model {before} -> {after}", "--overwrite_output_dir=true",
           code=2)

    save_file(weights, base / "model.safetensors", metadata={"format": "pt"})
    data = tmp_path / "data"
    shutil.copytree(embedded_build, data)
    outcome = run_case("train: resume on another dataset_name", train_cmd.main,
                               [*argv[:1], f"--dataset_name={data}", *argv[2:]], capsys,
                               protect=[out / "checkpoints"])
    expect(outcome, f"changed: dataset_name {embedded_build} -> {data}", code=2)


def test_a_hub_base_is_known_by_its_id_and_revision():
    assert T.base_identity("org/no-such-local-folder", None) == "org/no-such-local-folder@main"
    assert T.base_identity("org/no-such-local-folder", "v2") == "org/no-such-local-folder@v2"


# (flag, the allowed range the error names); each is refused while parsing, before any work
BAD_TRAIN_NUMBERS = {
    "--learning_rate=1e309": "--learning_rate=inf: must be a finite number above 0",
    "--learning_rate=0": "--learning_rate=0.0: must be a finite number above 0",
    "--learning_rate=-1e-4": "must be a finite number above 0",
    "--num_train_epochs=0": "--num_train_epochs=0.0: must be a finite number above 0",
    "--max_steps=-2": "--max_steps=-2: must be -1 (unset: num_train_epochs decides) or at least 1",
    "--max_length=0": "--max_length=0: must be a whole number of at least 1",
    "--max_length=-8": "--max_length=-8: must be a whole number of at least 1",
    "--max_new_tokens=0": "--max_new_tokens=0: must be a whole number of at least 1",
    "--gradient_accumulation_steps=0": "--gradient_accumulation_steps=0: must be a whole number",
    "--per_device_train_batch_size=0": "--per_device_train_batch_size=0: must be a whole number",
}


@pytest.mark.parametrize("flag", BAD_TRAIN_NUMBERS)
def test_train_numbers_out_of_range_are_usage_errors(flag, tmp_path, capsys):
    outcome = run_case(f"train: {flag}", train_cmd.main, [PROJECT / "recipes" / "tiny-llama" / "nlu.yaml",
                                                         flag, f"--output_dir={tmp_path / 'run'}"], capsys)
    expect(outcome, BAD_TRAIN_NUMBERS[flag], code=2)
    assert not (tmp_path / "run").exists()


def test_a_bad_number_in_the_recipe_names_the_recipe(tmp_path, capsys):
    recipe = _recipe(tmp_path, TINY.replace("learning_rate: 5.0e-3", "learning_rate: .inf"))
    outcome = run_case("train: recipe learning_rate inf", train_cmd.main, [recipe], capsys)
    expect(outcome, f"{recipe}: learning_rate: inf: must be a finite number above 0", code=2)
    epochs = train_cmd.parse_recipe([str(PROJECT / "recipes" / "tiny-llama" / "nlu.yaml"),
                                     "--num_train_epochs=0", "--max_steps=3"])
    assert epochs.training.max_steps == 3, "epochs are not checked when max_steps decides"


class _LossBecomesNaN(TrainerCallback):
    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "loss" in logs and state.global_step >= 2:
            logs["loss"] = float("nan")


@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("cause", ["a NaN logged at step 2", "learning_rate 1e30"])
def test_a_loss_that_becomes_nan_stops_the_run(cause, embedded_build, tiny_models, tmp_path, capsys):
    out = tmp_path / "run"
    argv = [PROJECT / "recipes" / "tiny-llama" / "nlu.yaml", f"--dataset_name={embedded_build}",
            f"--model_name_or_path={tiny_models / 'tiny-llama'}", f"--output_dir={out}",
            "--max_steps=4", "--save_strategy=no"]
    if cause == "learning_rate 1e30":  # the final train_loss diverges (logged every 10 steps)
        outcome = run_case("train: the loss diverges", train_cmd.main, [*argv, "--learning_rate=1e30"],
                                   capsys)
    else:
        outcome = run_case("train: the loss becomes NaN", lambda a: train_cmd.main(a, [_LossBecomesNaN()]),
                                   [*argv, "--logging_steps=1"], capsys)
        assert "step 2: the training loss is nan" in outcome.err
    expect(outcome, "the run diverged and was stopped", "lower learning_rate", code=1)
    assert not (out / "run_info.json").exists()


# --- publish -----------------------------------------------------------------------------------

@pytest.mark.parametrize("timeout", ["0", "nan"])
def test_publish_timeout_must_be_a_positive_number(timeout, tmp_path, capsys):
    from helpers import write_run

    run = write_run(tmp_path / "run")
    (run / "adapter_config.json").write_text("{}")
    (run / "adapter_model.safetensors").write_bytes(b"x")
    outcome = run_case(f"publish: --timeout {timeout}", publish_cmd.main,
                       ["--run", run, "--repo", "org/x", "--timeout", timeout], capsys)
    expect(outcome, "argument --timeout: must be a", code=2)


# --- make --------------------------------------------------------------------------------------

def test_make_train_without_a_model_says_what_to_give():
    done = subprocess.run(["make", "-s", "-o", "setup", "train", "TASK=nlu"], cwd=PROJECT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "make train needs MODEL=<recipes folder>" in done.stderr
    record("make: train without MODEL", "clear")


def test_make_targets_take_paths_with_spaces(tmp_path):
    out = tmp_path / "with space" / "meditod"
    done = subprocess.run(["make", "-s", "-o", "setup", "build", f"DATA={out}"], cwd=PROJECT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert B.verify_manifest(out)


# --- every command: damaged files it reads ------------------------------------------------------

def _replace_with_folder(path: Path) -> None:
    if path.exists():
        path.unlink()
    path.mkdir()


# How a file the kit reads can be damaged: cut off, garbage, a folder in its place, the wrong
# shape, nested past Python's recursion limit, empty.
DAMAGE = {
    "truncated": lambda p: p.write_text('{"a": [1, '),
    "garbage": lambda p: p.write_bytes(b"\x00\xff\xfegarbage"),
    "a folder": _replace_with_folder,
    "wrong schema": lambda p: p.write_text("[1, 2, 3]"),
    "nested 200k deep": lambda p: p.write_text("[" * 200_000 + "]" * 200_000),
    "empty": lambda p: p.write_text(""),
}
YAML_DAMAGE = {**DAMAGE, "truncated": lambda p: p.write_text("a: [1, "),
               "wrong schema": lambda p: p.write_text("- a\n- b\n")}


def _evaluated_run(path: Path) -> Path:

    run = write_run(path)
    (run / "adapter_config.json").write_text("{}")
    (run / "adapter_model.safetensors").write_bytes(b"x")
    return run


@pytest.fixture
def fake_model_run(tmp_path) -> Path:
    """A run folder with run_info.json and recipe.yaml but no weights: enough for every check
    that comes before a model loads."""
    run = tmp_path / "model-run"
    run.mkdir()
    (run / "config.json").write_text('{"model_type": "llama"}')
    (run / "run_info.json").write_text(json.dumps({"family": "llama", "task": "nlu"}))
    (run / "recipe.yaml").write_text("max_new_tokens: 4\n")
    return run


def _no_model_loads(monkeypatch):
    from meditod_hub.models import predictor

    def refuse(*args, **kwargs):
        raise AssertionError("a model was loaded: the damaged file went unnoticed")
    monkeypatch.setattr(predictor, "load_model", refuse)


# (command, file damaged, damages, argv builder(ctx) -> (main, argv, damaged path, protect))
def _agreement(ctx):
    from meditod_hub.commands import agreement

    a = write_release(ctx.tmp / "a")
    b = write_release(ctx.tmp / "b")
    return agreement.main, ["--a", a, "--b", b, "--out", ctx.tmp / "agreement.json"], \
        a / "dialogs.json", [b]


def _build_release_json(ctx):
    release = write_release(ctx.tmp / "release")
    (release / "release.json").write_text('{"synthetic": false}')
    return build_cmd.main, ["--source", release, "--out", ctx.tmp / "m"], release / "release.json", []


def _build_split(ctx):
    release = write_release(ctx.tmp / "release")
    return build_cmd.main, ["--source", release, "--out", ctx.tmp / "m"], release / "train_ids.json", []


def _build_dialogs(ctx):
    release = write_release(ctx.tmp / "release")
    return build_cmd.main, ["--source", release, "--out", ctx.tmp / "m"], release / "dialogs.json", []


def _push_manifest(ctx):
    folder = ctx.tmp / "built"
    shutil.copytree(ctx.build, folder)
    return push_cmd.main, ["--folder", folder, "--repo", "org/x"], folder / "build_manifest.json", []


def _predict_run_info(ctx):
    return predict_cmd.main, ["--model_path", ctx.model_run, "--task", "nlu", "--data", ctx.build,
                              "--out", ctx.tmp / "p.jsonl"], ctx.model_run / "run_info.json", []


def _predict_recipe(ctx):
    return predict_cmd.main, ["--model_path", ctx.model_run, "--task", "nlu", "--data", ctx.build,
                              "--out", ctx.tmp / "p.jsonl"], ctx.model_run / "recipe.yaml", []


def _evaluate_predictions(ctx):
    preds = ctx.tmp / "p.jsonl"
    preds.write_text("")
    return evaluate_cmd.main, _eval(ctx.build, preds, ctx.tmp / "r.json"), preds, []


def _publish_run_info(ctx):
    run = _evaluated_run(ctx.tmp / "run")
    return publish_cmd.main, ["--run", run, "--repo", "org/x", "--dry_run"], run / "run_info.json", []


def _publish_results(ctx):
    run = _evaluated_run(ctx.tmp / "run")
    return publish_cmd.main, ["--run", run, "--repo", "org/x", "--dry_run"], \
        run / "eval" / "test" / "results.json", []


def _publish_record(ctx):
    run = _evaluated_run(ctx.tmp / "runs" / "run")
    (run / "published.json").write_text("{}")
    return publish_cmd.main, ["--table", ctx.tmp / "runs"], run / "published.json", [run / "run_info.json"]


def _fewshot_run_info(ctx):
    from meditod_hub.commands import fewshot
    from meditod_hub.models.runs import FEWSHOT_INFO

    out = ctx.tmp / "fewshot"
    out.mkdir()
    (out / FEWSHOT_INFO).write_text("{}")
    return fewshot.main, ["--model", "m", "--task", "nlu", "--data", ctx.build, "--out", out,
                          "--dry_run"], out / FEWSHOT_INFO, []


def _chat_run_info(ctx):
    from meditod_hub.commands import chat

    return chat.main, ["--nlu", ctx.model_run, "--pol", ctx.model_run, "--nlg", ctx.model_run], \
        ctx.model_run / "run_info.json", []


def _cascade_run_info(ctx):
    from meditod_hub.commands import eval_cascade

    return eval_cascade.main, ["--nlu", ctx.model_run, "--pol", ctx.model_run, "--nlg",
                               ctx.model_run, "--data", ctx.build, "--out", ctx.tmp / "c"], \
        ctx.model_run / "run_info.json", []


def _space_run_info(ctx):
    from meditod_hub.commands import space

    run = ctx.model_run
    (run / "model.safetensors").write_bytes(b"x")
    return space.main, ["--repo", "org/x", "--nlu", run, "--pol", run, "--nlg", run, "--dry_run"], \
        run / "run_info.json", []


def _annotate_dialogs(ctx):
    from meditod_hub.commands import annotate

    release = write_release(ctx.tmp / "release")
    return annotate.main, ["--source", release, "--port", "0"], release / "dialogs.json", []


def _train_recipe(ctx):
    recipe = ctx.tmp / "recipe.yaml"
    recipe.write_text(TINY)
    return train_cmd.main, [recipe, f"--dataset_name={ctx.build}"], recipe, []


def _train_resume_record(ctx):
    recipe = PROJECT / "recipes" / "tiny-llama" / "nlu.yaml"
    checkpoint = ctx.tmp / "run" / "checkpoints" / "checkpoint-1"
    checkpoint.mkdir(parents=True)
    record_output(ctx.tmp / "run", "train")  # an earlier `meditod train` run, as the guard knows it
    (checkpoint / "meditod_resume.json").write_text("{}")
    return train_cmd.main, [recipe, f"--dataset_name={ctx.build}", f"--output_dir={ctx.tmp / 'run'}",
                            "--model_name_or_path=no/such-model-is-loaded"], \
        checkpoint / "meditod_resume.json", []


DAMAGED_FILES = {
    "agreement: A's dialogs.json": _agreement,
    "build: dialogs.json": _build_dialogs,
    "build: release.json": _build_release_json,
    "build: train_ids.json": _build_split,
    "push: build_manifest.json": _push_manifest,
    "predict: run_info.json": _predict_run_info,
    "predict: recipe.yaml": _predict_recipe,
    "evaluate: predictions": _evaluate_predictions,
    "publish: run_info.json": _publish_run_info,
    "publish: eval/test/results.json": _publish_results,
    "publish --table: published.json": _publish_record,
    "fewshot: the --out run's fewshot_info.json": _fewshot_run_info,
    "chat: a model's run_info.json": _chat_run_info,
    "eval-cascade: a model's run_info.json": _cascade_run_info,
    "space: a run's run_info.json": _space_run_info,
    "annotate: dialogs.json": _annotate_dialogs,
    "train: the recipe": _train_recipe,
    "train: meditod_resume.json": _train_resume_record,
}
YAML_FILES = {"predict: recipe.yaml", "train: the recipe"}
# damage that leaves a file some readers accept on purpose: an empty predictions file is zero
# predictions (refused by the row check), an empty recipe.yaml beside a model is no settings
ACCEPTED = {("predict: recipe.yaml", "empty")}


@dataclass
class Context:
    tmp: Path
    build: Path
    model_run: Path


@pytest.mark.parametrize("damage", list(DAMAGE))
@pytest.mark.parametrize("case", list(DAMAGED_FILES))
def test_a_damaged_input_file_is_named_in_one_line(case, damage, embedded_build, fake_model_run,
                                                   tmp_path, capsys, monkeypatch):
    if (case, damage) in ACCEPTED:
        pytest.skip("an empty recipe.yaml beside a model means no recorded settings")
    _no_model_loads(monkeypatch)
    import uvicorn

    monkeypatch.setattr(uvicorn.Server, "run", lambda *a, **k: pytest.fail("the server started"))
    main, argv, damaged, protect = DAMAGED_FILES[case](Context(tmp_path, embedded_build,
                                                               fake_model_run))
    (YAML_DAMAGE if case in YAML_FILES else DAMAGE)[damage](damaged)
    outcome = run_case(f"{case} {damage}", main, argv, capsys, protect=[*protect, damaged])
    assert outcome.kind == "clear", (outcome.kind, outcome.err[-1500:], outcome.out[-300:])
    named = {str(damaged), damaged.name, str(damaged.parent)}
    assert any(name in outcome.err for name in named), outcome.err[-1500:]
    assert "weights_only" not in outcome.err


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
    assert link.is_symlink() and B.verify_manifest(target)


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
        assert run_main(evaluate_cmd.main, _eval(embedded_build, predictions, out)) == 0
        main, argv = evaluate_cmd.main, _eval(embedded_build, predictions, out)
    elif command == "train run files":
        from meditod_hub.models.runs import write_run_files

        out = tmp_path / "run" / "run_info.json"
        write_run_files(out.parent, {"task": "nlu"}, {"seed": 1})
        main, argv = (lambda argv: write_run_files(out.parent, {"task": "pol"}, {}) or 0), []
    else:
        run = _evaluated_run(tmp_path / "run")
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


# --- one case per item of issue 15's list of tracebacks, and their siblings --------------------

def test_chat_skips_a_line_that_is_not_utf8_and_goes_on(capsys):
    import io

    from meditod_hub.apps.chat import converse

    stdin = io.TextIOWrapper(io.BytesIO(b"I have a cough.\n\xff\xfe\xc3 fever\nNo fever.\n"),
                             encoding="utf-8", errors="surrogateescape")
    out = io.StringIO()
    replies = converse(echo_assistant(), stdin, out, show_state=False, interactive=False)
    err = capsys.readouterr().err
    assert replies == 2 and out.getvalue().count("doctor: ") == 1 + 2  # the opening, 2 replies
    assert "not UTF-8 text, so no model saw it" in err
    record("chat: a non-UTF-8 line", "clear")


def test_chat_reads_stdin_so_that_a_bad_byte_cannot_end_it(monkeypatch, capsys):
    import io

    from meditod_hub.commands import chat

    stdin = io.TextIOWrapper(io.BytesIO(b"\xff\xfe\n\xe9t\xe9\nI cough.\n"), encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", stdin)
    monkeypatch.setattr(chat.Assistant, "load", lambda *a, **k: echo_assistant())
    code = run_main(chat.main, ["--nlu", "a/b", "--pol", "a/b", "--nlg", "a/b"])
    captured = capsys.readouterr()
    assert code == 0 and captured.out.count("doctor: ") == 1 + 1, captured  # opening + reply
    assert captured.err.count("not UTF-8 text") == 2 and "unexpected" not in captured.err
    record("chat: command with non-UTF-8 lines on stdin", "clear")


@pytest.mark.parametrize("damage", ["truncated", "garbage", "a folder", "wrong schema",
                                    "nested 200k deep"])
def test_annotate_damaged_provenance_refuses_the_save_before_writing(damage, embedded_release,
                                                                     release_copy):
    from fastapi.testclient import TestClient

    from meditod_hub.apps.annotate.server import LOOPBACK_HOSTS, PortalSettings, create_app

    release = release_copy(embedded_release)
    client = TestClient(create_app(PortalSettings(source=release, allowed_hosts=LOOPBACK_HOSTS)),
                        base_url="http://127.0.0.1")
    opened = client.get("/api/dialogues/9001").json()
    labels = labels_of(opened)
    labels[1] = []
    provenance = release / "provenance.json"
    if damage == "wrong schema":
        provenance.write_text('{"9001": [1, 2]}')
    else:
        provenance.write_text("{}")
        DAMAGE[damage](provenance)
    before = digests([release / "dialogs.json"])
    saved = client.put("/api/dialogues/9001", json={"version": opened["version"], "labels": labels,
                                                    "origins": [["manual"] * len(x) for x in labels]})
    detail = saved.json().get("detail", "")
    kind = "clear" if saved.status_code == 400 and "provenance.json" in detail else "traceback"
    if digests([release / "dialogs.json"]) != before:
        kind = "data lost or exposed"
    record(f"annotate: save with provenance.json {damage}", kind)
    assert kind == "clear", (saved.status_code, saved.text[:500])
    assert "fix or delete it" in detail


@pytest.mark.parametrize("damage", ["truncated", "garbage", "a folder", "wrong schema"])
def test_fewshot_damaged_answer_cache_is_named_before_any_request(damage, embedded_build,
                                                                  tiny_models, tiny_retriever,
                                                                  tmp_path, capsys):
    import sqlite3

    from meditod_hub.commands import fewshot

    cache = tmp_path / "answers.sqlite"
    if damage == "wrong schema":
        with sqlite3.connect(cache) as db:
            db.execute("CREATE TABLE answers (key TEXT, answer BLOB)")
    else:
        cache.write_text("{}")
        DAMAGE[damage](cache)
        if damage == "truncated":
            cache.write_bytes(b"SQLite format 3\x00" + b"\x00" * 40)
    argv = ["--model", "stub", "--task", "nlu", "--endpoint", "http://127.0.0.1:9/v1",
            "--data", embedded_build, "--shots", "1", "--limit", "2", "--out", tmp_path / "out",
            "--retriever", tiny_retriever, "--tokenizer", tiny_models / "tiny-llama",
            "--max_tokens", "8", "--context_window", "16384", "--cache", cache,
            "--retrieval_cache", tmp_path / "retrieval",
            "--max_retries", "0", "--request_timeout", "2"]
    outcome = run_case(f"fewshot: answer cache {damage}", fewshot.main, argv, capsys,
                       protect=[cache])
    expect(outcome, str(cache), code=1)


@pytest.mark.parametrize("case", ["truncated weights", "garbage config.json",
                                  "garbage tokenizer.json"])
def test_predict_damaged_model_files_are_named(case, run_folder, embedded_build, tmp_path, capsys):
    target = {"truncated weights": "model.safetensors", "garbage config.json": "config.json",
              "garbage tokenizer.json": "tokenizer.json"}[case]
    path = run_folder / target
    data = path.read_bytes()
    path.write_bytes(data[:500] if case == "truncated weights" else b"{garbage")
    outcome = run_case(f"predict: {case}", predict_cmd.main,
                       ["--model_path", run_folder, "--task", "nlu", "--data", embedded_build,
                        "--limit", "1", "--out", tmp_path / "p.jsonl"], capsys)
    expect(outcome, f"{run_folder}: cannot load the model or tokenizer", "retrain or download",
           code=1)
    assert "weights_only" not in outcome.err


@pytest.mark.parametrize("command", ["evaluate", "eval-cascade"])
@pytest.mark.parametrize("case", ["missing folder", "a file", "a folder without config.json",
                                  "no layer for a non-paper model"])
def test_a_bad_bertscore_model_is_refused_before_scoring(command, case, embedded_build,
                                                         fake_model_run, tmp_path, capsys):
    from meditod_hub.commands import eval_cascade

    model, layer = {"missing folder": (tmp_path / "nope", "1"),
                    "a file": (tmp_path / "afile", "1"),
                    "a folder without config.json": (tmp_path, "1"),
                    "no layer for a non-paper model": (fake_model_run, None)}[case]
    (tmp_path / "afile").write_text("x")
    flags = ["--bertscore_model", model] + (["--bertscore_layer", layer] if layer else [])
    if command == "evaluate":
        preds = tmp_path / "p.jsonl"
        preds.write_text("")
        main, argv = evaluate_cmd.main, ["--task", "nlg", "--data", embedded_build, "--predictions", preds,
                                         "--out", tmp_path / "r.json", *flags]
    else:
        main, argv = eval_cascade.main, ["--nlu", "x", "--pol", "x", "--nlg", "x", "--data",
                                         embedded_build, *flags]
    outcome = run_case(f"{command}: --bertscore_model {case}", main, argv, capsys)
    expect(outcome, f"--bertscore_model {model}", code=2)


@pytest.mark.parametrize("case", ["fewshot --out", "eval-cascade --out", "publish --card_dir",
                                  "agreement --out folder", "evaluate --out file",
                                  "predict --out file", "build --out", "push --folder",
                                  "publish --run", "annotate --source"])
def test_a_file_where_a_folder_belongs_and_back(case, embedded_build, fake_model_run, tmp_path,
                                                capsys):
    from meditod_hub.commands import agreement, annotate, eval_cascade, fewshot

    afile, folder = tmp_path / "afile", tmp_path / "folder"
    afile.write_text("mine")
    folder.mkdir()
    release = write_release(tmp_path / "release")
    main, argv = {
        "fewshot --out": (fewshot.main, ["--model", "m", "--task", "nlu", "--data", embedded_build,
                                         "--out", afile, "--dry_run"]),
        "eval-cascade --out": (eval_cascade.main, ["--nlu", fake_model_run, "--pol",
                                                   fake_model_run, "--nlg", fake_model_run,
                                                   "--data", embedded_build, "--out", afile]),
        "publish --card_dir": (publish_cmd.main, ["--run", _evaluated_run(tmp_path / "run"), "--repo",
                                                  "org/x", "--dry_run", "--card_dir", afile]),
        "agreement --out folder": (agreement.main, ["--a", release, "--b", release,
                                                    "--out", folder]),
        # --out of predict and evaluate is a folder (as Make's OUT): a file there is refused
        "evaluate --out file": (evaluate_cmd.main, ["--task", "nlu", "--data", embedded_build,
                                                    "--predictions", folder / "p.jsonl", "--out", afile]),
        "predict --out file": (predict_cmd.main, ["--model_path", fake_model_run, "--task", "nlu",
                                                  "--data", embedded_build, "--out", afile]),
        "build --out": (build_cmd.main, ["--source", release, "--out", afile]),
        "push --folder": (push_cmd.main, ["--folder", afile, "--repo", "org/x"]),
        "publish --run": (publish_cmd.main, ["--run", afile, "--repo", "org/x", "--dry_run"]),
        "annotate --source": (annotate.main, ["--source", afile, "--port", "0"]),
    }[case]
    outcome = run_case(f"{case}: a file where a folder belongs or back", main, argv, capsys,
                       protect=[afile, folder, release])
    assert outcome.kind == "clear", outcome.err[-1500:]
    assert str(afile) in outcome.err or str(folder) in outcome.err


def test_train_with_a_base_model_that_is_not_there_says_so(embedded_build, tmp_path, capsys):
    outcome = run_case("train: model_name_or_path not there", train_cmd.main,
                               [PROJECT / "recipes" / "tiny-llama" / "nlu.yaml",
                                f"--dataset_name={embedded_build}", f"--output_dir={tmp_path / 'run'}",
                                f"--model_name_or_path={tmp_path / 'no-base'}"], capsys)
    expect(outcome, f"model_name_or_path {tmp_path / 'no-base'}: cannot load", code=1)


@pytest.fixture
def damaged_checkpoint(embedded_build, tiny_models, tmp_path):
    """A run folder whose checkpoint matches the recipe (so it is resumed) but whose files are
    the caller's to damage: no training needed to get there."""
    argv = [str(PROJECT / "recipes" / "tiny-llama" / "nlu.yaml"),
            f"--dataset_name={embedded_build}", f"--model_name_or_path={tiny_models / 'tiny-llama'}",
            f"--output_dir={tmp_path / 'run'}", "--max_steps=1", "--save_steps=1"]
    checkpoint = tmp_path / "run" / "checkpoints" / "checkpoint-1"
    shutil.copytree(tiny_models / "tiny-llama", checkpoint)
    record_output(tmp_path / "run", "train")
    record_ = T.resume_fingerprint(train_cmd.parse_recipe(argv))
    (checkpoint / "meditod_resume.json").write_text(json.dumps({**record_, "runtime_s": 1.0}))
    (checkpoint / "trainer_state.json").write_text(json.dumps(
        {"global_step": 0, "max_steps": 1, "num_train_epochs": 1, "log_history": []}))
    return argv, checkpoint


@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("case", ["garbage optimizer.pt", "truncated weights"])
def test_a_damaged_checkpoint_is_named_never_with_weights_only_advice(case, damaged_checkpoint,
                                                                      capsys):
    argv, checkpoint = damaged_checkpoint
    if case == "garbage optimizer.pt":
        import torch

        (checkpoint / "optimizer.pt").write_bytes(b"garbage, not a pickle")
        torch.save({}, checkpoint / "scheduler.pt")  # the trainer loads the optimizer only beside one
    else:
        weights = checkpoint / "model.safetensors"
        weights.write_bytes(weights.read_bytes()[:700])
    outcome = run_case(f"train: resume from a checkpoint with {case}", train_cmd.main, argv, capsys,
                               protect=[checkpoint])
    expect(outcome, f"{checkpoint}: cannot resume from this checkpoint", "delete it",
           "--overwrite_output_dir=true", code=1)
    assert "weights_only" not in outcome.err.lower() and "weights only" not in outcome.err.lower()


# --- secrets: a key in the environment never reaches a message or a written file ----------------

SENTINEL_KEY = "sk-sweep-SECRET-0123456789abcdef"
SENTINEL_TOKEN = "hf_sweepSECRETtoken0123456789abcdef"


@pytest.mark.parametrize("case", ["fewshot to a dead endpoint", "predict --endpoint dead",
                                  "push a tampered build"])
def test_a_failing_command_never_shows_or_writes_a_key(case, embedded_build, fake_model_run,
                                                       tiny_models, tiny_retriever, tmp_path,
                                                       capsys, monkeypatch):
    from meditod_hub.commands import fewshot

    monkeypatch.setenv("OPENAI_API_KEY", SENTINEL_KEY)
    monkeypatch.setenv("HF_TOKEN", SENTINEL_TOKEN)
    dead = "http://127.0.0.1:9/v1"
    if case == "fewshot to a dead endpoint":
        main, argv = fewshot.main, [
            "--model", "stub", "--task", "nlu", "--endpoint", dead, "--api_key_env",
            "OPENAI_API_KEY", "--data", embedded_build, "--shots", "1", "--limit", "1",
            "--out", tmp_path / "out", "--retriever", tiny_retriever, "--tokenizer",
            tiny_models / "tiny-llama", "--max_tokens", "8", "--context_window", "16384",
            "--cache", tmp_path / "answers.sqlite", "--retrieval_cache", tmp_path / "retrieval",
            "--max_retries", "0", "--request_timeout", "2"]
    elif case == "predict --endpoint dead":
        main, argv = predict_cmd.main, ["--model_path", fake_model_run, "--task", "nlu", "--data",
                                        embedded_build, "--limit", "1", "--endpoint", dead,
                                        "--out", tmp_path / "p.jsonl"]
    else:
        folder = tmp_path / "built"
        shutil.copytree(embedded_build, folder)
        next(folder.rglob("*.parquet")).write_bytes(b"tampered")
        main, argv = push_cmd.main, ["--folder", folder, "--repo", "org/x"]
    outcome = run_case(f"{case} (key in the environment)", main, argv, capsys,
                       secrets=[SENTINEL_KEY, SENTINEL_TOKEN], written=[tmp_path])
    assert outcome.kind == "clear", outcome


# --- issue 26 -------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, code", [(["build", "--source", "data/sample", "--out", "{out}"], 0),
                                        (["build", "--no_such_flag"], 2), (["--version"], 0)])
def test_a_command_with_stdout_closed_ends_as_usual(args, code, tmp_path):
    """`meditod ... >&-`: the work is done, the exit code and stderr are as they would be."""
    argv = [a.format(out=tmp_path / "built") for a in args]
    done = subprocess.run(["bash", "-c", '"$@" >&-', "-", sys.executable, "-m", "meditod_hub.cli",
                           *argv], cwd=PROJECT, capture_output=True, text=True, timeout=300)
    assert done.returncode == code and "Traceback" not in done.stderr, done.stderr
    if code == 2:
        assert done.stderr.startswith("error: unrecognized arguments: --no_such_flag")
    if args[0] == "build":
        assert (tmp_path / "built" / "build_manifest.json").exists() == (code == 0)


def test_predict_refuses_a_readme_as_its_vocabulary(embedded_build, tmp_path, capsys):
    outcome = run_case("predict --constrained --vocabulary README.md", predict_cmd.main, [
        "--model_path", "org/model", "--endpoint", "http://127.0.0.1:9/v1", "--family", "llama",
        "--task", "nlu", "--data", embedded_build, "--constrained", "--vocabulary",
        PROJECT / "README.md", "--out", tmp_path / "p.jsonl"], capsys)
    expect(outcome, f"{PROJECT / 'README.md'}, line ", "expected one canonical medical value per "
           "line", code=2)
    assert not (tmp_path / "p.jsonl").exists()


@pytest.mark.parametrize("leaderboard", ["bad id !!", "no-owner", "org/a--b"])
def test_publish_refuses_a_leaderboard_that_is_no_hub_repo_id(leaderboard, tmp_path, capsys):
    """(before: the card linked to https://huggingface.co/spaces/bad id !!)"""
    outcome = run_case(f"publish --leaderboard {leaderboard!r}", publish_cmd.main, [
        "--run", tmp_path / "run", "--repo", "org/model", "--dry_run", "--leaderboard",
        leaderboard], capsys)
    expect(outcome, f"--leaderboard {leaderboard!r} is not a Hub repo id", "give ORG/NAME",
           code=2)


# --- issue 26, the sweep's classes: dead servers -------------------------------------------------
# Every command that takes an endpoint or talks to the Hub, at a socket that accepts connections
# and never answers a byte, with a short --timeout: a one-line error within a minute, never a hang.
DEAD_DEADLINE_S = 90


def _dead_in_process(case, url, ctx):
    from meditod_hub.commands import chat, eval_cascade, fewshot

    fewshot_argv = ["--model", "stub", "--task", "nlu", "--data", ctx.build, "--shots", "1",
                    "--limit", "1", "--out", ctx.tmp / "fewshot", "--retriever", ctx.retriever,
                    "--tokenizer", ctx.tokenizer, "--max_tokens", "8", "--context_window",
                    "16384", "--cache", ctx.tmp / "answers.sqlite", "--retrieval_cache",
                    ctx.tmp / "retrieval", "--max_retries", "0"]
    served = served_runs(ctx.tmp / "served")
    return {
        "predict --endpoint": (predict_cmd.main, ["--model_path", ctx.model_run, "--task", "nlu", "--data",
                                                  ctx.build, "--limit", "1", "--endpoint", f"{url}/v1",
                                                  "--timeout", "2", "--out", ctx.tmp / "p.jsonl"]),
        "fewshot --endpoint": (fewshot.main, [*fewshot_argv, "--endpoint", f"{url}/v1",
                                              "--timeout", "2", "--request_timeout", "1"]),
        "chat --endpoint": (chat.main, [*served, "--endpoint", f"{url}/v1", "--timeout", "2"]),
        "eval-cascade --endpoint": (eval_cascade.main, [
            *served, "--endpoint", f"{url}/v1", "--timeout", "2", "--data", ctx.build,
            "--split", "train", "--limit", "1", "--out", ctx.tmp / "cascade"]),
    }[case]


@pytest.mark.parametrize("case", ["predict --endpoint", "fewshot --endpoint", "chat --endpoint",
                                  "eval-cascade --endpoint"])
def test_every_endpoint_flag_at_a_server_that_never_answers_stops_at_its_timeout(
        case, embedded_build, fake_model_run, tiny_models, tiny_retriever, tmp_path, capsys,
        monkeypatch):
    import io

    from hub_server import silent_endpoint

    monkeypatch.setattr(sys, "stdin", io.StringIO("I have a cough.\n"))
    ctx = SimpleNamespace(tmp=tmp_path, build=embedded_build, model_run=fake_model_run,
                          retriever=tiny_retriever, tokenizer=tiny_models / "tiny-llama")
    with silent_endpoint() as url:
        main, argv = _dead_in_process(case, url, ctx)
        outcome = run_case(f"{case}: a server that never answers", main, argv, capsys,
                           deadline=DEAD_DEADLINE_S)
    assert outcome.kind == "clear", (outcome.kind, outcome.err[-1500:])
    assert "timeout" in outcome.err or "did not answer" in outcome.err, outcome.err


HUB_COMMANDS = ["push", "publish", "space", "leaderboard", "results --hub_dataset",
                "predict a Hub model", "chat with Hub models", "evaluate --judge_url"]


@pytest.mark.parametrize("case", HUB_COMMANDS)
def test_every_hub_command_at_a_hub_that_never_answers_stops_at_its_timeout(
        case, embedded_build, tmp_path):
    """HF_ENDPOINT is read when huggingface_hub is imported: each case is a `meditod` process."""
    from hub_server import silent_endpoint

    run = _evaluated_run(tmp_path / "run")
    whole = write_run(tmp_path / "whole", adapter=False)  # a full model, as a Space serves one
    (whole / "model.safetensors").write_bytes(b"x")
    (whole / "config.json").write_text('{"model_type": "llama"}')
    argv = {
        "push": ["push", "--folder", embedded_build, "--repo", "org/x"],
        "publish": ["publish", "--run", run, "--repo", "org/x"],
        "space": ["space", "--repo", "org/x-space", "--nlu", whole, "--pol", whole, "--nlg",
                  whole],
        "leaderboard": ["leaderboard", "--repo", "org/board", "--dataset", "org/data"],
        "results --hub_dataset": ["results", "--hub_dataset", "org/data", "--out",
                                  tmp_path / "results"],
        "predict a Hub model": ["predict", "--model_path", "org/model", "--task", "nlu",
                                "--data", embedded_build, "--limit", "1", "--out",
                                tmp_path / "p.jsonl"],
        "chat with Hub models": ["chat", "--nlu", "org/a", "--pol", "org/b", "--nlg", "org/c"],
        "evaluate --judge_url": ["evaluate", "--task", "nlu", "--data", embedded_build,
                                 "--predictions", _judged_predictions(embedded_build, tmp_path),
                                 "--out", tmp_path / "r.json", "--judge", "llm", "--judge_model",
                                 "m", "--judge_url", "{url}/v1"],
    }[case]
    flag = "--judge_timeout" if case == "evaluate --judge_url" else "--timeout"
    with silent_endpoint() as url:
        argv = [str(a).format(url=url) for a in argv] + [flag, "2"]
        env = {**offline_env(tmp_path), "HF_ENDPOINT": url, "HF_TOKEN": "hf_sweep_token_0123456789"}
        try:
            done = meditod(env, *argv, timeout=DEAD_DEADLINE_S)
        except subprocess.TimeoutExpired:
            record(f"{case}: a Hub that never answers", "hangs")
            raise
    kind = classify(done.returncode, done.stdout, done.stderr, False, False)
    record(f"{case}: a Hub that never answers", kind)
    assert kind == "clear", (done.returncode, done.stderr[-1500:])
    assert flag in done.stderr or "did not answer" in done.stderr, done.stderr


def _judged_predictions(build: Path, tmp_path: Path) -> Path:
    """NLU predictions whose every value differs from the gold one: the judge is asked."""
    from meditod_hub.data.dataset import load_split

    path = tmp_path / "judged.jsonl"
    path.write_text("".join(json.dumps({"id": r["id"], "prediction": json.loads(json.dumps(
        r["nlu"]).replace('"value": "', '"value": "x')), "raw": "", "parse_ok": True}) + "\n"
        for r in load_split(build, "nlu", "test")))
    return path


# --- issue 26, the sweep's classes: lone surrogates in every text input ----------------------------
def _first_patient(dialogs: dict) -> dict:
    return next(u for u in dialogs["1"]["utterances"] if u["speaker"] == "patient")


SURROGATE = "cough \ud800"  # valid JSON ("\ud800"), not Unicode text: no file or Parquet holds it
SURROGATE_RELEASES = {
    "utterance text": (lambda r: _rewrite(r, lambda d: _first_patient(d).update(text=SURROGATE)),
                       "dialogue 1, utterance 1: `text` holds a lone surrogate"),
    "slot value": (lambda r: _rewrite(r, lambda d: _first_entry(d).update(value=SURROGATE)),
                   "dialogue 1, utterance 1: `utterances.1.nlu.0.slots.positive_symptom.0.value`"),
    "a dialogue-level key's value": (lambda r: _rewrite(r, lambda d: d["1"].update(notes=SURROGATE)),
                                     "dialogue 1: `notes` holds a lone surrogate"),
    "a key's name": (lambda r: _rewrite(r, lambda d: d["1"].update({SURROGATE: 1})),
                     "dialogue 1: `a key` holds a lone surrogate"),
    "keywords": (lambda r: _rewrite(r, lambda d: _first_patient(d).update(keywords=[SURROGATE])),
                 "dialogue 1, utterance 1: `utterances.1.keywords.0` holds a lone surrogate"),
    "release.json name": (lambda r: (r / "release.json").write_text(json.dumps({"name": SURROGATE})),
                          "release.json: `name` holds a lone surrogate"),
    "a split id": (lambda r: (r / "test_ids.json").write_text(json.dumps([SURROGATE])),
                   "test_ids.json: `0` holds a lone surrogate"),
}


@pytest.mark.parametrize("case", SURROGATE_RELEASES)
def test_a_lone_surrogate_anywhere_in_a_release_is_named(case, tmp_path, capsys):
    """(before: build ended in "unexpected UnicodeEncodeError ... report it")"""
    release = write_release(tmp_path / "release")
    damage, phrase = SURROGATE_RELEASES[case]
    damage(release)
    outcome = run_case(f"build: a lone surrogate in the release's {case}", build_cmd.main,
                       ["--source", release, "--out", tmp_path / "m"], capsys)
    expect(outcome, phrase, "fix that \\u escape", code=1)
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("uttr_id", [0.0, 1.0, True, "1", None])
def test_an_utterance_id_that_is_no_whole_number_is_named(uttr_id, tmp_path, capsys):
    """(before: 0.0 and true equal 0 and 1 in Python, passed, and failed later as "unexpected")"""
    release = write_release(tmp_path / "release")
    _rewrite(release, lambda d: _first_patient(d).update(uttr_id=uttr_id))
    outcome = run_case(f"build: uttr_id {json.dumps(uttr_id)}", build_cmd.main,
                       ["--source", release, "--out", tmp_path / "m"], capsys)
    expect(outcome, "dialogue 1, utterance 1: `uttr_id` must be the whole number 1 (the "
           f"utterance's position), got {json.dumps(uttr_id)}", code=1)


@pytest.mark.parametrize("command", ["results", "publish"])
def test_a_results_file_holding_nan_is_named(command, tmp_path, capsys):
    """(before: results ended in "unexpected ValueError: cannot convert float NaN to integer")"""
    run = _evaluated_run(tmp_path / "runs" / "run")
    path = run / "eval" / "test" / "results.json"
    path.write_text(path.read_text().replace('"f1": 0.5614', '"f1": NaN'))
    from meditod_hub.commands import results

    if command == "results":
        code = run_main(results.main, ["--runs", str(tmp_path / "runs"),
                                       "--out", str(tmp_path / "out")])
        err = capsys.readouterr().err
        assert code == 0 and f"skipped: {path}: 'f1' is nan, not a score" in err, err
        assert "unexpected" not in err
        record("results: a results.json holding NaN (skipped and said)", "clear")
    else:
        outcome = run_case("publish: a results.json holding NaN", publish_cmd.main,
                           ["--run", run, "--repo", "org/x", "--dry_run"], capsys)
        expect(outcome, f"{path}: 'f1' is nan, not a score", "rerun `meditod evaluate`")


@pytest.mark.parametrize("names", ["one-name", "a,b", "a,,c", "a,b,c,d"])
def test_chat_served_models_must_name_three(names, capsys):
    """(before: one name without --endpoint ended in "unexpected TypeError")"""
    from meditod_hub.commands import chat

    outcome = run_case(f"chat --served_models {names}", chat.main,
                       ["--nlu", "a/b", "--pol", "a/b", "--nlg", "a/b", "--served_models", names],
                       capsys)
    expect(outcome, f"--served_models {names!r}: give three names (NLU,POL,NLG)", code=2)


# --- issue 26, the sweep's classes: every numeric recipe key -------------------------------------
def _numeric_recipe_keys() -> list[str]:
    """Every key some training recipe sets to a number, and every key train checks."""
    import yaml

    keys = set(train_cmd.NUMBER_RULES)
    for path in (PROJECT / "recipes").rglob("*.yaml"):
        config = yaml.safe_load(path.read_text())
        if isinstance(config, dict) and "task" in config:  # not an accelerate config
            keys |= {k for k, v in config.items()
                     if isinstance(v, (int, float)) and not isinstance(v, bool)}
    return sorted(keys)


NUMERIC_KEYS = _numeric_recipe_keys()
# values that mean something: no dropout, no warmup, no decay, no clipping, beta 0, seed 0,
# max_steps unset
MEANINGFUL = {*((key, "0") for key in ("lora_dropout", "warmup_steps", "weight_decay",
                                       "max_grad_norm", "adam_beta1", "adam_beta2", "seed")),
              ("max_steps", "-1")}


def _parse_only(argv: list[str]) -> int:
    train_cmd.parse_recipe(argv)
    return 0


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0", "1e309"])
@pytest.mark.parametrize("key", NUMERIC_KEYS)
def test_every_numeric_recipe_key_refuses_what_no_run_can_train_with(key, value, tmp_path,
                                                                     capsys):
    """(before: logging_steps=inf ended in "unexpected OverflowError", and NaN/inf/negative
    dropout, decay, warmup, clipping and betas trained silently)"""
    argv = [PROJECT / "recipes" / "tiny-llama" / "nlu.yaml", f"--{key}={value}",
            f"--output_dir={tmp_path / 'run'}"]
    if (key, value) in MEANINGFUL:
        assert run_main(_parse_only, [str(a) for a in argv]) == 0
        return
    outcome = run_case(f"train: --{key}={value}", _parse_only, argv, capsys)
    expect(outcome, key, code=2)
    assert any(why in outcome.err for why in ("must be", "Expected", "requires", "invalid int")), \
        outcome.err


@pytest.mark.parametrize("text", [".nan", ".inf", "-.inf", "1e309"])
def test_a_non_finite_number_in_the_recipe_names_the_recipe_and_key(text, tmp_path, capsys):
    recipe = _recipe(tmp_path, TINY.replace("logging_steps: 10", f"logging_steps: {text}"))
    outcome = run_case(f"train: recipe logging_steps {text}", _parse_only, [recipe], capsys)
    expect(outcome, f"{recipe}: logging_steps: ", "must be a finite number", code=2)


# --- issue 26, the sweep's classes: a token inside a binary file, in every upload ----------------
SWEEP_TOKEN = "hf_sweepBinaryToken0123456789abcdefABCDEF"


def _safetensors_with_token(path: Path) -> None:
    import torch
    from safetensors.torch import save_file

    save_file({"w": torch.zeros(2)}, path, metadata={"format": "pt", "note": SWEEP_TOKEN})


@pytest.mark.parametrize("command", ["push", "publish", "space", "leaderboard"])
def test_every_upload_refuses_a_token_inside_a_binary_file(command, embedded_release, tmp_path,
                                                           capsys, monkeypatch):
    """Binary files are scanned as text ones (before: publish uploaded a token held in
    model.safetensors metadata). Nothing reaches the Hub: the scan comes first."""
    from meditod_hub.commands import leaderboard, space

    monkeypatch.setenv("HF_TOKEN", "hf_unusedWriteToken0123456789abcdefABC")
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    if command == "push":  # the token in a dialogue, so inside the compressed Parquet files
        release = tmp_path / "release"
        shutil.copytree(embedded_release, release)
        _rewrite(release, lambda d: d[next(iter(d))].update(notes=f"token {SWEEP_TOKEN}"))
        assert run_main(build_cmd.main, ["--source", str(release), "--out", str(tmp_path / "m")]) == 0
        capsys.readouterr()
        main, argv, named = push_cmd.main, ["--folder", tmp_path / "m", "--repo", "org/x"], "parquet"
    elif command == "publish":
        run = _evaluated_run(tmp_path / "run")
        _safetensors_with_token(run / "adapter_model.safetensors")
        main, argv, named = publish_cmd.main, ["--run", run, "--repo", "org/x", "--dry_run"], \
            "adapter_model.safetensors"
    elif command == "space":
        run = write_run(tmp_path / "whole", adapter=False)
        (run / "config.json").write_text('{"model_type": "llama"}')
        _safetensors_with_token(run / "model.safetensors")
        main, argv, named = space.main, ["--repo", "org/x", "--nlu", run, "--pol", run,
                                         "--nlg", run, "--dry_run"], "model.safetensors"
    else:  # the leaderboard uploads the kit's files and its settings: the token in a flag
        main, argv, named = leaderboard.main, ["--repo", "org/board", "--dataset", "org/data",
                                               "--models", f"org/{SWEEP_TOKEN}", "--dry_run"], \
            "leaderboard"
    outcome = run_case(f"{command}: a token inside a binary file", main, argv, capsys,
                       secrets=[SWEEP_TOKEN])
    expect(outcome, "contains a Hugging Face token", code=1)
    assert named in outcome.err, outcome.err


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


# --- issue 26: a make variable the shell would read as a quote's end or a command ----------------
@pytest.mark.parametrize("assignment", ['SOURCE=x"; touch {pwned}; "', "DATA=$(shell touch {pwned})",
                                        "OUT=a`touch {pwned}`", "SOURCE=a\\b", "REPO=org/$x"])
def test_make_refuses_a_value_that_would_break_its_quotes_and_runs_nothing(assignment, tmp_path):
    """(before: SOURCE='x"; ...' ended the recipe's quotes and ran the rest as a command)"""
    pwned = tmp_path / "pwned"
    name, value = assignment.format(pwned=pwned).split("=", 1)
    done = subprocess.run(["make", "-s", "-o", "setup", "build", f"{name}={value}"], cwd=PROJECT,
                          capture_output=True, text=True, timeout=60)
    kind = "data lost or exposed" if pwned.exists() else \
        "clear" if done.returncode != 0 and len(done.stderr.strip().splitlines()) == 1 else "silent"
    record(f"make: {name} holding a quote, $, ` or \\", kind)
    assert kind == "clear", done.stderr
    assert f"{name} holds a \", $, ` or \\" in done.stderr and "rename that path" in done.stderr


# --- issue 26, the sweep's classes: licensed dialogues hidden at any key of a synthetic release -----
def _nested(release: Path, where, authors: dict) -> None:
    _rewrite(release, lambda d: where(d).update(notes={"deeper": [authors]}))


HIDDEN = {
    "a dialogue-level key": lambda r, a: _rewrite(r, lambda d: d[next(iter(d))].update(notes=a)),
    "an utterance's key": lambda r, a: _nested(r, lambda d: d[next(iter(d))]["utterances"][0], a),
    "an NLU item's key": lambda r, a: _nested(r, lambda d: next(
        u for u in d[next(iter(d))]["utterances"] if u["speaker"] == "patient")["nlu"][0], a),
    "a slot entry's key": lambda r, a: _nested(r, lambda d: next(
        s for u in d[next(iter(d))]["utterances"] if u["speaker"] == "patient"
        for item in u["nlu"] for entries in item.get("slots", {}).values() for s in entries), a),
    "dialogs.json, in no split": lambda r, a: _rewrite(r, lambda d: d.update(
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
    manifest = B.verify_manifest(tmp_path / "m") if code == 0 else {"synthetic": False,
                                                                      "gated": True}
    kind = "clear" if (manifest["synthetic"], manifest["gated"]) == (False, True) \
        else "data lost or exposed"
    record(f"build: the authors' sample in {base}'s {place}", kind)
    assert kind == "clear", manifest


# --- issue 26, the sweep's classes: lone surrogates in every portal and app request --------------
PORTAL_WRITES = [("post", "/api/dialogues/9001/states"), ("put", "/api/dialogues/9001"),
                 ("post", "/api/dialogues/9001/suggest"), ("post", "/api/import"),
                 ("post", "/api/vocabulary"), ("put", "/api/dialogues/9001/split")]
PORTAL_READS = ["/api/dialogues/%ED%A0%80", "/api/dialogues/9001?x=%ED%A0%80",
                "/api/values?q=%ED%A0%80", "/api/dialogues?q=%ED%A0%80"]


@pytest.mark.parametrize("route", [f"{m.upper()} {p}" for m, p in PORTAL_WRITES] + PORTAL_READS)
def test_a_lone_surrogate_in_any_portal_request_is_refused_and_the_portal_stays_well(
        route, embedded_release, release_copy):
    from fastapi.testclient import TestClient

    from meditod_hub.apps.annotate.server import LOOPBACK_HOSTS, PortalSettings, create_app

    release = release_copy(embedded_release)
    client = TestClient(create_app(PortalSettings(source=release, allowed_hosts=LOOPBACK_HOSTS)),
                        base_url="http://127.0.0.1", raise_server_exceptions=False)
    before = digests([release])
    method, path = route.split(" ") if " " in route else ("GET", route)
    body = r'{"text": "a \ud800", "labels": [["\ud800"]], "values": ["\ud800"], "split": "\ud800"}'
    answer = client.request(method, path, content=body if method != "GET" else None,
                            headers={"Content-Type": "application/json"})
    opened = client.get("/api/dialogues/9001")
    handled = (400, 404, 422) + ((200,) if method == "GET" else ())  # an unused query: ignored
    kind = "clear" if answer.status_code in handled and opened.status_code == 200 \
        else "traceback" if answer.status_code >= 500 or opened.status_code != 200 else "silent"
    if digests([release]) != before:
        kind = "data lost or exposed"
    record(f"annotate: a lone surrogate in {route}", kind)
    assert kind == "clear", (answer.status_code, answer.text[:300], opened.status_code)


@pytest.mark.parametrize("where", ["the message", "the chat history the browser sends"])
def test_a_lone_surrogate_in_an_app_request_is_no_turn_and_no_traceback(where, tmp_path):
    from meditod_hub.apps import webapp

    assistant = echo_assistant()
    history = webapp.opening_history()
    message = "a \ud800"
    if where != "the message":
        history = [*history, {"role": "user", "content": "a \ud800"}]
        message = "I cough."
    try:
        outputs = webapp.respond(assistant, tmp_path, message, history, None, True)
    except Exception as exc:  # noqa: BLE001 - what a user would see as a broken page
        record(f"app: a lone surrogate in {where}", "traceback")
        raise AssertionError(f"the handler raised {exc!r}") from None
    status = outputs[-1]
    if where == "the message":
        kind = "clear" if status.startswith("Nothing sent:") and "not UTF-8 text" in status \
            else "silent"
    else:  # the turn is the patient's new line; every saved transcript is UTF-8 text
        saved = [p.read_bytes().decode("utf-8") for p in tmp_path.rglob("*") if p.is_file()]
        kind = "clear" if all("\ud800" not in text for text in saved) else "data lost or exposed"
    record(f"app: a lone surrogate in {where}", kind)
    assert kind == "clear", status


def test_the_app_at_a_server_that_never_answers_ends_the_turn_at_its_timeout(tmp_path):
    """(before: a turn at MEDITOD_ENDPOINT waited an hour, the endpoint's own default)"""
    from hub_server import silent_endpoint

    from meditod_hub.apps import webapp

    flags = served_runs(tmp_path / "runs")
    environ = {f"MEDITOD_{t.upper()}": flags[i * 2 + 1] for i, t in enumerate(("nlu", "pol", "nlg"))}
    assert webapp.settings({**environ, "MEDITOD_TIMEOUT": "2"}, tmp_path).specs[0] \
        .endpoint_options["timeout"] == 2
    with silent_endpoint() as url:
        settings = webapp.settings({**environ, "MEDITOD_ENDPOINT": f"{url}/v1",
                                    "MEDITOD_TIMEOUT": "2"}, tmp_path)
        start = time.monotonic()
        outcome: dict = {}

        def turn():
            try:
                assistant = webapp.Assistant.load(*settings.specs)
                outcome["status"] = webapp.respond(assistant, None, "I cough.",
                                                   webapp.opening_history(), None, False)[-1]
            except Exception as exc:  # noqa: BLE001 - a one-line failure is what is expected
                outcome["error"] = str(exc)
        import threading

        worker = threading.Thread(target=turn, daemon=True)
        worker.start()
        worker.join(DEAD_DEADLINE_S)
    seconds = time.monotonic() - start
    kind = "hangs" if worker.is_alive() else "clear" if "2 s" in str(outcome) else "silent"
    record("app: MEDITOD_ENDPOINT at a server that never answers", kind)
    assert kind == "clear", (seconds, outcome)
    with pytest.raises(webapp.UsageError, match="MEDITOD_TIMEOUT=0: give the seconds"):
        webapp.settings({**environ, "MEDITOD_TIMEOUT": "0"}, tmp_path)
