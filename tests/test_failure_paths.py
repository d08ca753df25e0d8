"""The failure sweep: bad inputs and faults across build, push, train, predict, evaluate and
publish. Each case must end in a clear error (non-zero exit, a one-line `error:` that is not an
"unexpected" failure; a release's problems may follow, one line each), never a traceback, a
silent success or a lost file. `pytest tests/test_failure_paths.py` prints the sweep table
(cases / clear errors / tracebacks / silent / data lost) at the end. Offline, CPU.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_release import write_release

from meditod_hub import build as B
from meditod_hub import evaluate as E
from meditod_hub import hub as H
from meditod_hub import predict as P
from meditod_hub import publish as U
from meditod_hub import train as T
from meditod_hub.errors import run_main

PROJECT = Path(__file__).resolve().parent.parent
SWEEP: list[tuple[str, str]] = []  # (case, outcome), printed by conftest's terminal summary


def _digests(paths) -> dict[str, str]:
    out = {}
    for root in paths:
        root = Path(root)
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file()) \
            if root.exists() else []
        out.update({str(f): hashlib.sha256(f.read_bytes()).hexdigest() for f in files})
    return out


@dataclass
class Outcome:
    code: int
    err: str
    kind: str  # clear, traceback, silent, data lost


def run_case(name: str, main: Callable, argv: list[str], capsys, protect=()) -> Outcome:
    """Run one command in process and classify what a user would see."""
    before = _digests(protect)
    code = run_main(main, [str(a) for a in argv])
    err = capsys.readouterr().err
    lines = [line for line in err.strip().splitlines() if not line.startswith(("warning:", "  "))]
    if _digests(protect) != before:
        kind = "data lost"
    elif code == 0:
        kind = "silent"
    elif not lines or "Traceback" in err or lines[-1].startswith("error: unexpected") \
            or not lines[-1].startswith("error: ") or len(lines) > 2:
        kind = "traceback"
    else:
        kind = "clear"
    SWEEP.append((name, kind))
    return Outcome(code, err, kind)


def expect(outcome: Outcome, *phrases: str, code: int | None = None) -> None:
    assert outcome.kind == "clear", outcome.err[-2000:]
    for phrase in phrases:
        assert phrase in outcome.err, outcome.err[-2000:]
    if code is not None:
        assert outcome.code == code, outcome.err


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
    assert run_main(B.main, ["--source", str(release), "--out", str(out)]) == 0
    capsys.readouterr()
    damage, phrase = BAD_RELEASES[case]
    damage(release)
    outcome = run_case(f"build: {case}", B.main, ["--source", release, "--out", out], capsys,
                       protect=[out])
    expect(outcome, phrase, code=1)
    assert B.verify_manifest(out)  # the previous build, whole
    assert not list(tmp_path.glob(".meditod.*")), "no temporary folder or lock left behind"


OUT_CASES = {
    "--out is the release folder": (lambda t, r: r, "is the release folder or inside it"),
    "--out inside the release folder": (lambda t, r: r / "built", "is the release folder or inside it"),
    "--out holds other files (the project root)": (lambda t, r: PROJECT,
                                                   "holds files and no build_manifest.json"),
    "--out is a file": (lambda t, r: (t / "afile").write_text("x") and t / "afile", "is a file"),
    "--out under /proc": (lambda t, r: Path("/proc/meditod-test/meditod"), "cannot create"),
}


@pytest.mark.parametrize("case", OUT_CASES)
def test_build_never_writes_over_what_it_did_not_write(case, tmp_path, capsys):
    release = write_release(tmp_path / "release")
    out = OUT_CASES[case][0](tmp_path, release)
    protect = [release] + ([out] if out == PROJECT else [])
    outcome = run_case(f"build: {case}", B.main, ["--source", release, "--out", out], capsys,
                       protect=protect)
    expect(outcome, OUT_CASES[case][1], code=2)


def test_a_previous_build_with_foreign_files_is_refused(tmp_path, capsys):
    release = write_release(tmp_path / "release")
    out = tmp_path / "meditod"
    assert run_main(B.main, ["--source", str(release), "--out", str(out)]) == 0
    (out / "notes.txt").write_text("mine")
    outcome = run_case("build: previous build plus a user file", B.main,
                       ["--source", release, "--out", out], capsys, protect=[out])
    expect(outcome, "also holds 1 other file(s) (notes.txt)")


def test_strict_refuses_warnings(tmp_path, capsys):
    release = write_release(tmp_path / "release", splits={"train": ["1", "2", "3"], "valid": [],
                                                          "test": []})
    outcome = run_case("build: --strict with warnings", B.main,
                       ["--source", release, "--out", tmp_path / "m", "--strict"], capsys)
    expect(outcome, "--strict", "split 'validation' is empty")
    assert not (tmp_path / "m").exists()


def test_a_concurrent_build_into_the_same_folder_is_refused(tmp_path, capsys):
    release = write_release(tmp_path / "release")
    out = tmp_path / "meditod"
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (tmp_path / ".meditod.build.lock").write_text(str(holder.pid))
        outcome = run_case("build: another build holds the folder", B.main,
                           ["--source", release, "--out", out], capsys)
        expect(outcome, f"another build into {out} is running (pid {holder.pid})")
    finally:
        holder.kill()
        holder.wait()
    assert run_main(B.main, ["--source", str(release), "--out", str(out)]) == 0, \
        "a lock left by a dead process is taken over"


# --- build: interrupted at every stage ----------------------------------------------------------

KILL_POINTS = ["read_release", "write_parquet", "infos_json", "render_dataset_card", "write_manifest",
               "rename"]


@pytest.mark.parametrize("point", KILL_POINTS)
def test_a_build_killed_anywhere_leaves_the_previous_build_whole(point, tmp_path, monkeypatch):
    """A crash at each stage of a real-data build over a synthetic build: the synthetic build
    stays whole, and push would still see a synthetic, manifest-matching folder."""
    synthetic = write_release(tmp_path / "synthetic")
    (synthetic / "release.json").write_text('{"synthetic": true}')
    real = write_release(tmp_path / "real")
    out = tmp_path / "meditod"
    B.build(B.BuildArguments(source=synthetic, out=out))
    before = _digests([out])

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
    assert _digests([out]) == before
    assert B.verify_manifest(out)["synthetic"] is True
    leftovers = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".meditod"))
    assert all(".build-" in name or ".previous-" in name for name in leftovers), leftovers
    B.build(B.BuildArguments(source=real, out=out))  # the next build cleans up and goes through
    assert B.verify_manifest(out)["synthetic"] is False
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".meditod")]


def test_a_build_killed_between_the_two_renames_is_restored(tmp_path):
    """The one window where `out` is absent: the next build puts the previous build back first."""
    release = write_release(tmp_path / "release")
    out = tmp_path / "meditod"
    B.build(B.BuildArguments(source=release, out=out))
    before = _digests([out])
    os.rename(out, tmp_path / f".meditod.previous-{os.getpid()}")  # as a kill would leave it
    B._recover(out)
    assert _digests([out]) == before


def test_an_absurdly_long_utterance_is_reported_and_built(tmp_path, capsys):
    release = write_release(tmp_path / "release")
    _rewrite(release, lambda d: d["1"]["utterances"][1].update(text="x " * 15_000))
    built = B.build(B.BuildArguments(source=release, out=tmp_path / "m"))
    assert any("characters long" in str(p) and p.uttr_id == 1 for p in built.release.problems)


def test_rows_written_in_context_bounded_chunks_are_the_same_rows(tmp_path, monkeypatch):
    """A long context splits a dialogue's rows over several writes; the dataset must not change."""
    from meditod_hub.dataset import available_splits, read_parquet_split
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
    outcome = run_case(f"push: --timeout {timeout}", H.main,
                       ["--folder", embedded_build, "--repo", "org/x", "--timeout", timeout], capsys)
    expect(outcome, "--timeout must be a positive number of seconds", code=2)


def test_push_of_a_missing_folder_is_refused(tmp_path, capsys):
    outcome = run_case("push: no such folder", H.main,
                       ["--folder", tmp_path / "nope", "--repo", "org/x"], capsys)
    expect(outcome, "no such folder")


# --- evaluate ----------------------------------------------------------------------------------

@pytest.fixture
def predictions(embedded_build, tmp_path) -> Path:
    """Gold NLU labels of the test split as a predictions file."""
    from meditod_hub.dataset import load_split

    path = tmp_path / "predictions.jsonl"
    path.write_text("".join(json.dumps({"id": r["id"], "prediction": r["nlu"], "raw": "",
                                        "parse_ok": True}) + "\n"
                            for r in load_split(embedded_build, "nlu", "test")))
    return path


def _eval(data, preds, out, *extra):
    return [str(a) for a in ("--task", "nlu", "--data", data, "--split", "test", "--predictions",
                             preds, "--out", out, *extra)]


def test_evaluate_never_writes_over_its_input(embedded_build, predictions, capsys):
    outcome = run_case("evaluate: --out is the predictions file", E.main,
                       _eval(embedded_build, predictions, predictions), capsys, protect=[predictions])
    expect(outcome, "is also an input of this command", code=2)
    assert not predictions.with_suffix(".md").exists()


def test_two_evaluations_in_one_folder_keep_their_own_side_files(embedded_build, predictions,
                                                                 tmp_path):
    for name in ("nlu-test", "nlu-again"):
        assert run_main(E.main, _eval(embedded_build, predictions, tmp_path / f"{name}.json")) == 0
    for name in ("nlu-test", "nlu-again"):
        assert (tmp_path / f"{name}.md").read_text().startswith("# MediTOD NLU results (test)")
        assert (tmp_path / f"{name}.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("case", ["predictions is a folder", "out is a folder", "predictions not UTF-8",
                                  "parse_ok is a string", "misspelled local data", "unknown split",
                                  "missing embedding judge model", "llm judge without url"])
def test_evaluate_bad_input(case, embedded_build, predictions, tmp_path, capsys):
    argv = _eval(embedded_build, predictions, tmp_path / "results.json")
    phrase = {
        "predictions is a folder": "is a folder: give the predictions .jsonl file",
        "out is a folder": "is a folder: give a file path",
        "predictions not UTF-8": "not UTF-8 text",
        "parse_ok is a string": "line 1: `parse_ok` must be true or false",
        "misspelled local data": "no such folder: meditd",
        "unknown split": "has no 'nlu' 'tset' split (splits: train, validation, test, test_ood)",
        "missing embedding judge model": "embedding judge",
        "llm judge without url": "--judge_url",
    }[case]
    if case == "predictions is a folder":
        argv[7] = str(tmp_path)
    elif case == "out is a folder":
        argv[9] = str(tmp_path)
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
    outcome = run_case(f"evaluate: {case}", E.main, argv, capsys, protect=[predictions])
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
                                  "out is a folder", "model without run_info or family",
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
        "out is a folder": ("is a folder: give a file path", 2),
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
    elif case == "out is a folder":
        argv[9] = tmp_path
    elif case == "model without run_info or family":
        (run_folder / "run_info.json").unlink()
    elif case == "hub model unreachable":  # the Hub is never reached in tests
        monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
        argv[1] = "org/some-model"
    if case == "wrong family":  # argparse's own usage error (exit 2), not run_main's
        with pytest.raises(SystemExit) as exit_:
            P.main([str(a) for a in argv])
        assert exit_.value.code == 2 and phrase in capsys.readouterr().err
        SWEEP.append((f"predict: {case}", "clear"))
        return
    outcome = run_case(f"predict: {case}", P.main, argv, capsys, protect=[run_folder])
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
    outcome = run_case(f"train: {case}", T.main, [recipe, *extra], capsys, protect=[recipe])
    expect(outcome, phrase)


def _train(embedded_build, tiny_models, out, *extra):
    return run_main(T.main, [str(PROJECT / "recipes" / "tiny-llama" / "nlu.yaml"),
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
    outcome = run_case("train: resume with another recipe", T.main,
                       [PROJECT / "recipes" / "tiny-llama" / "nlu.yaml",
                        f"--dataset_name={embedded_build}",
                        f"--model_name_or_path={tiny_models / 'tiny-llama'}",
                        f"--output_dir={out}", "--max_steps=2", "--save_steps=1",
                        "--save_total_limit=3", "--learning_rate=1e-3"], capsys,
                       protect=[out / "checkpoints"])
    expect(outcome, "holds checkpoints of another run (changed: learning_rate)",
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


# --- publish -----------------------------------------------------------------------------------

@pytest.mark.parametrize("timeout", ["0", "nan"])
def test_publish_timeout_must_be_a_positive_number(timeout, tmp_path, capsys):
    from test_model_card import write_run

    run = write_run(tmp_path / "run")
    (run / "adapter_config.json").write_text("{}")
    (run / "adapter_model.safetensors").write_bytes(b"x")
    outcome = run_case(f"publish: --timeout {timeout}", U.main,
                       ["--run", run, "--repo", "org/x", "--timeout", timeout], capsys)
    expect(outcome, "--timeout must be a positive number", code=2)


# --- make --------------------------------------------------------------------------------------

def test_make_train_without_a_model_says_what_to_give():
    done = subprocess.run(["make", "-s", "train", "TASK=nlu"], cwd=PROJECT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "make train needs MODEL=<recipes folder>" in done.stderr
    SWEEP.append(("make: train without MODEL", "clear"))


def test_make_targets_take_paths_with_spaces(tmp_path):
    out = tmp_path / "with space" / "meditod"
    done = subprocess.run(["make", "-s", "data", f"DATA={out}"], cwd=PROJECT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert B.verify_manifest(out)
