"""Every command's damaged input files (DAMAGED_FILES x DAMAGE), issue 15's tracebacks and their
siblings, lone surrogates and NaN in inputs.

Part of the failure sweep (tests/test_failure_*.py): each case must end in a clear error
(non-zero exit, a one-line `error:` that is not an "unexpected" failure), never a traceback,
a silent success, a lost file or a secret in the output; helpers.py keeps the sweep table.
Offline, CPU.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import (
    TINY_NLU_RECIPE,
    digests,
    echo_assistant,
    edit_dialogs,
    eval_args,
    evaluated_run,
    expect,
    first_slot,
    labels_of,
    record,
    run_case,
    write_release,
)

from meditod_hub.commands import build as build_cmd
from meditod_hub.commands import evaluate as evaluate_cmd
from meditod_hub.commands import predict as predict_cmd
from meditod_hub.commands import publish as publish_cmd
from meditod_hub.commands import push as push_cmd
from meditod_hub.commands import train as train_cmd
from meditod_hub.errors import run_main
from meditod_hub.files import record_output
from meditod_hub.models.resume import resume_fingerprint

PROJECT = Path(__file__).resolve().parent.parent


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
    return evaluate_cmd.main, eval_args(ctx.build, preds, ctx.tmp / "r.json"), preds, []


def _publish_run_info(ctx):
    run = evaluated_run(ctx.tmp / "run")
    return publish_cmd.main, ["--run", run, "--repo", "org/x", "--dry_run"], run / "run_info.json", []


def _publish_results(ctx):
    run = evaluated_run(ctx.tmp / "run")
    return publish_cmd.main, ["--run", run, "--repo", "org/x", "--dry_run"], \
        run / "eval" / "test" / "results.json", []


def _publish_record(ctx):
    run = evaluated_run(ctx.tmp / "runs" / "run")
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
    recipe.write_text(TINY_NLU_RECIPE)
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


ESCAPES = {"a colour": "\x1b[31m", "clear the screen": "\x1b[2J", "a window title": "\x1b]0;x\x07",
           "a C1 control": "\x9b31m", "a backspace": "\x08\x08"}


@pytest.mark.parametrize("where", ["the patient's line", "the models' outputs"])
@pytest.mark.parametrize("escape", ESCAPES)
def test_chat_shows_control_characters_escaped_never_raw(where, escape, capsys):
    """Before: an ANSI escape in a piped patient line, or in what a model answered (the reply,
    a state value), reached the terminal raw: it could recolour, clear or retitle it."""
    import io

    from helpers import scripted_assistant

    from meditod_hub.apps.chat import converse

    code = ESCAPES[escape]
    said = f"I have a {code}cough." if where == "the patient's line" else "I have a cough."
    taint = code if where == "the models' outputs" else ""

    def answer(task, row):
        if task == "nlu":
            return [{"intent": "inform", "slots": {"positive_symptom": [
                {"value": f"cough{taint}"}]}}], True
        if task == "pol":
            return [{"action": "inquire", "symptom": [{"value": "fever"}]}], True
        return f"Any {taint}fever?", True

    out = io.StringIO()
    converse(scripted_assistant(answer)[0], io.StringIO(f"{said}\n/state\n"), out,
             show_state=True, interactive=False)
    shown = out.getvalue() + capsys.readouterr().err
    raw = [c for c in code if (c < " " or "\x7f" <= c <= "\x9f") and c in shown]
    record(f"chat: {escape} in {where}", "silent" if raw else "clear")
    assert not raw, shown
    assert code.encode("unicode_escape").decode() in shown  # shown escaped, not dropped


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
        "publish --card_dir": (publish_cmd.main, ["--run", evaluated_run(tmp_path / "run"), "--repo",
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
    record_ = resume_fingerprint(train_cmd.parse_recipe(argv))
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
        "--model_path", "org/model", "--endpoint", "http://127.0.0.1:9/v1", "--family", "chat",
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


# --- issue 26, the sweep's classes: lone surrogates in every text input ----------------------------
def _first_patient(dialogs: dict) -> dict:
    return next(u for u in dialogs["1"]["utterances"] if u["speaker"] == "patient")


SURROGATE = "cough \ud800"  # valid JSON ("\ud800"), not Unicode text: no file or Parquet holds it
SURROGATE_RELEASES = {
    "utterance text": (lambda r: edit_dialogs(r, lambda d: _first_patient(d).update(text=SURROGATE)),
                       "dialogue 1, utterance 1: `text` holds a lone surrogate"),
    "slot value": (lambda r: edit_dialogs(r, lambda d: first_slot(d).update(value=SURROGATE)),
                   "dialogue 1, utterance 1: `utterances.1.nlu.0.slots.positive_symptom.0.value`"),
    "a dialogue-level key's value": (lambda r: edit_dialogs(r, lambda d: d["1"].update(notes=SURROGATE)),
                                     "dialogue 1: `notes` holds a lone surrogate"),
    "a key's name": (lambda r: edit_dialogs(r, lambda d: d["1"].update({SURROGATE: 1})),
                     "dialogue 1: `a key` holds a lone surrogate"),
    "keywords": (lambda r: edit_dialogs(r, lambda d: _first_patient(d).update(keywords=[SURROGATE])),
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
    edit_dialogs(release, lambda d: _first_patient(d).update(uttr_id=uttr_id))
    outcome = run_case(f"build: uttr_id {json.dumps(uttr_id)}", build_cmd.main,
                       ["--source", release, "--out", tmp_path / "m"], capsys)
    expect(outcome, "dialogue 1, utterance 1: `uttr_id` must be the whole number 1 (the "
           f"utterance's position), got {json.dumps(uttr_id)}", code=1)


@pytest.mark.parametrize("command", ["results", "publish"])
def test_a_results_file_holding_nan_is_named(command, tmp_path, capsys):
    """(before: results ended in "unexpected ValueError: cannot convert float NaN to integer")"""
    run = evaluated_run(tmp_path / "runs" / "run")
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
