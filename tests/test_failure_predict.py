"""`meditod predict` and `meditod evaluate`: bad inputs, outputs they must not write over.

Part of the failure sweep (tests/test_failure_*.py): each case must end in a clear error
(non-zero exit, a one-line `error:` that is not an "unexpected" failure), never a traceback,
a silent success, a lost file or a secret in the output; helpers.py keeps the sweep table.
Offline, CPU.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import (
    eval_args,
    expect,
    run_case,
)

from meditod_hub.commands import evaluate as evaluate_cmd
from meditod_hub.commands import harness as harness_cmd
from meditod_hub.commands import predict as predict_cmd
from meditod_hub.errors import run_main

PROJECT = Path(__file__).resolve().parent.parent


# --- evaluate ----------------------------------------------------------------------------------

def test_evaluate_never_writes_over_its_input(embedded_build, predictions, capsys):
    outcome = run_case("evaluate: --out is the predictions file", evaluate_cmd.main,
                       eval_args(embedded_build, predictions, predictions), capsys, protect=[predictions])
    expect(outcome, "is also an input of this command", code=2)
    assert not predictions.with_suffix(".md").exists()


def test_two_evaluations_in_one_folder_keep_their_own_side_files(embedded_build, predictions,
                                                                 tmp_path):
    for name in ("nlu-test", "nlu-again"):
        out = tmp_path / f"{name}.json"
        assert run_main(evaluate_cmd.main, eval_args(embedded_build, predictions, out)) == 0
    for name in ("nlu-test", "nlu-again"):
        assert (tmp_path / f"{name}.md").read_text().startswith("# NLU results (test) on ")
        assert (tmp_path / f"{name}.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("case", ["predictions is a folder", "out is a file", "predictions not UTF-8",
                                  "parse_ok is a string", "misspelled local data", "unknown split",
                                  "missing embedding judge model", "llm judge without url"])
def test_evaluate_bad_input(case, embedded_build, predictions, tmp_path, capsys):
    argv = eval_args(embedded_build, predictions, tmp_path / "results.json")
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

@pytest.mark.parametrize("case", ["model path missing", "checkpoints folder", "not a model folder",
                                  "model path is a file", "wrong family", "unknown split",
                                  "trained for another task", "upstream for nlu",
                                  "out is a file", "model without run_info or family",
                                  "run_info without a family", "hub model unreachable"])
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
        "run_info without a family": ("run_info.json records no family: pass --family", 2),
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
    elif case == "run_info without a family":  # before: "has no run_info.json", beside one
        (run_folder / "run_info.json").write_text("{}")
    elif case == "hub model unreachable":  # the Hub is never reached in tests
        monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
        argv[1] = "org/some-model"
    outcome = run_case(f"predict: {case}", predict_cmd.main, argv, capsys, protect=[run_folder])
    expect(outcome, phrase, code=code)


# --- a run_info.json a user or another tool edited: each key the kit reads has its shape -------
BROKEN_RUN_INFO = {  # before: 4 of these were "unexpected TypeError/ValueError", 2 ran on
    "family a list": ({"family": ["chat"]}, "`family` must be a string, got a list"),
    "task a list": ({"task": ["nlu"]}, "`task` must be a string, got a list"),
    "tasks a string": ({"tasks": "nlu"}, "`tasks` must be a list of task names, got a string"),
    "budget a string": ({"budget": "big"}, "`budget` must be an object of max_length"),
    "budget negative": ({"budget": {"max_length": 64, "max_new_tokens": -5}},
                        "`budget` must be an object of max_length"),
    "quantization a boolean": ({"quantization": True}, "`quantization` must be null or a string"),
}


@pytest.mark.parametrize("case", BROKEN_RUN_INFO)
def test_a_run_info_key_of_the_wrong_shape_is_one_line_naming_it(case, run_folder, embedded_build,
                                                                  tmp_path, capsys):
    change, phrase = BROKEN_RUN_INFO[case]
    info = json.loads((run_folder / "run_info.json").read_text())
    (run_folder / "run_info.json").write_text(json.dumps({**info, **change}))
    outcome = run_case(f"predict: run_info.json with {case}", predict_cmd.main,
                       ["--model_path", run_folder, "--task", "nlu", "--data", embedded_build,
                        "--split", "test", "--out", tmp_path / "p"], capsys, protect=[run_folder])
    expect(outcome, f"{run_folder / 'run_info.json'}: {phrase}", code=1)


BROKEN_RUN_RECIPE = {  # before: the first three were "unexpected TypeError/ValueError", the rest ran on
    "max_new_tokens a string": "max_new_tokens: x\n",
    "max_new_tokens negative": "max_new_tokens: -1\n",
    "max_new_tokens a list": "max_new_tokens: [1]\n",
    "max_new_tokens a fraction": "max_new_tokens: 2.5\n",
    "max_length zero": "max_new_tokens: 4\nmax_length: 0\n",
    "max_length a word": "max_new_tokens: 4\nmax_length: big\n",
}


@pytest.mark.parametrize("case", BROKEN_RUN_RECIPE)
def test_a_run_recipe_budget_of_the_wrong_shape_is_one_line_naming_it(case, run_folder,
                                                                       embedded_build, tmp_path,
                                                                       capsys):
    """A run whose run_info.json records no budget takes it from its recipe.yaml."""
    (run_folder / "recipe.yaml").write_text(BROKEN_RUN_RECIPE[case])
    key = case.split(" ")[0]
    outcome = run_case(f"predict: recipe.yaml with {case}", predict_cmd.main,
                       ["--model_path", run_folder, "--task", "nlu", "--data", embedded_build,
                        "--split", "test", "--out", tmp_path / "p"], capsys, protect=[run_folder])
    expect(outcome, f"{run_folder / 'recipe.yaml'}: `{key}` must be a positive whole number",
           code=1)


# --- issue 36, the battery's silent harness: a folder with no tasks in it ------------------------
@pytest.mark.parametrize("case", ["a folder of notes", "an empty nlu folder", "--splits ,"])
def test_harness_on_a_folder_with_no_tasks_fails_saying_what_it_expected(case, embedded_build,
                                                                        tmp_path, capsys):
    """Before: `0 tasks, 0 rows () -> out` and exit 0."""
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "notes.txt").write_text("not a dataset\n")
    argv = ["--data", junk, "--out", tmp_path / "out", "--settings", "ft"]
    phrase = {"a folder of notes": "has no nlu/ folder: not a dataset built by `meditod build`",
              "an empty nlu folder": "has no test or test_ood split in nlu/: the harness expects "
                                     "a dataset built by `meditod build`",
              "--splits ,": "--splits ',' names no split"}[case]
    if case == "an empty nlu folder":
        (junk / "nlu").mkdir()
    elif case == "--splits ,":
        argv = ["--data", embedded_build, "--out", tmp_path / "out", "--settings", "ft",
                "--splits", ","]
    outcome = run_case(f"harness: {case}", harness_cmd.main, argv, capsys)
    expect(outcome, phrase)
    assert not (tmp_path / "out").exists()


# --- issue 46, the battery's silent cases: a model, a family, a budget or a URL that cannot be ---
# what the command would run. Before: each ran (or printed commands) without a word.
SILENT_PREDICT = {
    "--max_length beyond the positions": (["--max_length", "5000"],
                                          "--max_length 5000 is beyond the model's 4096 positions"),
    "--max_new_tokens 1e9": (["--max_new_tokens", "1000000000"],
                             "--max_new_tokens 1000000000 is beyond the model's 4096 positions"),
    "--family of another family than the run's": (["--family", "biogpt"],
                                                  "was trained as the chat family"),
    "--family of another architecture": (["--family", "flan-t5"], "is a decoder (its config.json)"),
}


@pytest.mark.parametrize("case", sorted(SILENT_PREDICT))
def test_predict_refuses_what_the_model_cannot_be(case, run_folder, embedded_build, tmp_path,
                                                  capsys):
    extra, phrase = SILENT_PREDICT[case]
    if case == "--family of another architecture":  # a model folder without run files
        (run_folder / "run_info.json").unlink()
    argv = ["--model_path", run_folder, "--task", "nlu", "--data", embedded_build,
            "--split", "test", "--out", tmp_path / "p.jsonl", *extra]
    outcome = run_case(f"predict: {case}", predict_cmd.main, argv, capsys, protect=[run_folder])
    expect(outcome, phrase, code=2)
    assert not (tmp_path / "p.jsonl").exists()


def test_predict_refuses_4bit_without_a_gpu(run_folder, embedded_build, tmp_path, capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA GPU is here: 4-bit loads")
    argv = ["--model_path", run_folder, "--task", "nlu", "--data", embedded_build,
            "--split", "test", "--out", tmp_path / "p.jsonl", "--load_in_4bit", "true"]
    outcome = run_case("predict: --load_in_4bit true on a CPU", predict_cmd.main, argv, capsys)
    expect(outcome, "4-bit loading (bitsandbytes NF4) is for a CUDA GPU", code=2)


SILENT_HARNESS = {
    "--model a README": (lambda t, run: ["--model", PROJECT / "README.md"], "is a file"),
    "--model a missing folder": (lambda t, run: ["--model", t / "runs/llama3-8b/nlu"],
                                 "no such folder"),
    "--model a folder without a model": (lambda t, run: ["--model", t], "is not a model folder"),
    "--endpoint ftp://": (lambda t, run: ["--endpoint", "ftp://127.0.0.1/v1"],
                          "is not an http:// or https:// URL"),
    "--endpoint without a host": (lambda t, run: ["--endpoint", "http:///v1"], "is not a URL"),
    "--family of another family than --model's run": (
        lambda t, run: ["--model", run, "--family", "pptod"], "was trained as the chat family"),
}


@pytest.mark.parametrize("case", sorted(SILENT_HARNESS))
def test_harness_refuses_a_model_or_endpoint_it_cannot_name(case, run_folder, embedded_build,
                                                            tmp_path, capsys):
    extra, phrase = SILENT_HARNESS[case]
    argv = ["--data", embedded_build, "--out", tmp_path / "out", "--settings", "ft",
            *extra(tmp_path, run_folder)]
    outcome = run_case(f"harness: {case}", harness_cmd.main, argv, capsys)
    expect(outcome, phrase)
    assert not (tmp_path / "out").exists()


# --- issue 36, the battery's silent scores: predictions of another task's shape ------------------
WRONG_SHAPES = {
    "a number": (5, "(it is a number)"),
    "a string": ("inform", "(it is a string)"),
    "one object, not a list": ({"intent": "inform", "slots": {}}, "(it is an object)"),
    "a list of numbers": ([1, 2], "(item 1 is a number)"),
    "items without an intent": ([{"action": "inquire"}], "(item 1 has no string `intent`)"),
    "an intent that is a number": ([{"intent": 3, "slots": {}}], "(item 1 has no string `intent`)"),
    "slots that are a list": ([{"intent": "inform", "slots": ["fever"]}],
                              "(item 1's `slots` is a list)"),
    "null": (None, "(it is null)"),
}


@pytest.mark.parametrize("case", WRONG_SHAPES)
def test_evaluate_refuses_a_prediction_of_the_wrong_shape_naming_file_and_row(
        case, embedded_build, predictions, tmp_path, capsys):
    """Before: any JSON value was scored (as no match) and evaluate exited 0."""
    import json

    value, phrase = WRONG_SHAPES[case]
    lines = predictions.read_text().splitlines()
    second = json.loads(lines[1])
    lines[1] = json.dumps({**second, "prediction": value})
    predictions.write_text("\n".join(lines) + "\n")
    outcome = run_case(f"evaluate: an nlu prediction that is {case}", evaluate_cmd.main,
                       eval_args(embedded_build, predictions, tmp_path / "results.json"), capsys,
                       protect=[predictions])
    expect(outcome, f"{predictions}, line 2 ({second['id']}): the nlu prediction is not a list of "
                    "objects", phrase, "or set parse_ok to false", code=1)
    assert not (tmp_path / "results.json").exists()


@pytest.mark.parametrize("value", [["Any fever?"], {"text": "Any fever?"}, 7])
def test_evaluate_refuses_an_nlg_prediction_that_is_no_text(value, embedded_build, tmp_path,
                                                           capsys):
    import json

    from meditod_hub.data.dataset import load_split

    rows = load_split(embedded_build, "nlg", "test")
    path = tmp_path / "nlg.jsonl"
    path.write_text("".join(json.dumps({"id": r["id"], "prediction": value if n == 0 else
                                        r["response"], "parse_ok": True}) + "\n"
                            for n, r in enumerate(rows)))
    argv = eval_args(embedded_build, path, tmp_path / "results.json")
    argv[1] = "nlg"
    outcome = run_case(f"evaluate: an nlg prediction that is {type(value).__name__}",
                       evaluate_cmd.main, argv, capsys)
    expect(outcome, f"{path}, line 1 ({rows[0]['id']}): the nlg prediction is not a string",
           code=1)
