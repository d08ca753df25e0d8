"""The command surface: `meditod` subcommands, `meditod train MODEL [TASK]`, and the Make targets
that call them (checked with `make -n`, which runs nothing)."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from meditod_hub import cli
from meditod_hub.commands import train as train_cmd
from meditod_hub.errors import UsageError
from meditod_hub.models import train as T

PROJECT = Path(__file__).resolve().parent.parent
# Targets that run pip, ruff, pytest, the bench scripts or the demo script, not one subcommand.
NOT_SUBCOMMANDS = {"setup", "lock", "harness-env", "harness-lock", "test", "lint", "bench",
                   "bench-quick", "demo", "screenshot", "clean", "infos", "data", "eval",
                   "push-data"}
ALIASES = {"data": "build", "eval": "evaluate", "push-data": "push"}


def make_n(*args: str) -> subprocess.CompletedProcess:
    """`make -n`: prints the commands a target would run, runs none (not even `setup`)."""
    return subprocess.run(["make", "-n", *args], cwd=PROJECT, capture_output=True, text=True,
                          timeout=60)


def commands(target: str, *args: str) -> list[str]:
    """The commands `make -n target` prints, without setup's (shown when its stamp is stale)."""
    done = make_n(target, *args)
    assert done.returncode == 0, done.stderr
    setup = ("test -x ", ".venv/bin/python -m pip ", ".venv/bin/python -m meditod_hub.cli pretrained",
             "touch .venv/")
    return [line for line in done.stdout.replace("\\\n", " ").splitlines()
            if line.strip() and not line.startswith(setup)]


# --- meditod ---------------------------------------------------------------------------------
def test_version_is_the_projects(capsys):
    assert cli.main(["--version"]) == 0
    expected = tomllib.loads((PROJECT / "pyproject.toml").read_text())["project"]["version"]
    assert capsys.readouterr().out.strip() == f"meditod {expected}"


def test_usage_lists_tiny_and_app(capsys):
    assert cli.main(["-h"]) == 0
    listed = re.findall(r"^  (\S+) ", capsys.readouterr().out, re.M)
    assert {"tiny", "app", "train"} <= set(listed)


@pytest.mark.parametrize("command", ["tiny", "app"])
def test_tiny_and_app_answer_help(command):
    done = subprocess.run([sys.executable, "-m", "meditod_hub.cli", command, "-h"], cwd=PROJECT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"usage: meditod {command}" in done.stdout


# --- meditod train MODEL [TASK] --------------------------------------------------------------
@pytest.fixture
def in_project(monkeypatch):
    monkeypatch.chdir(PROJECT)


def test_model_and_task_name_one_recipe(in_project):
    command = train_cmd.resolve_command(["tiny-llama", "pol", "--learning_rate=1e-3"])
    assert command.recipes == [Path("recipes/tiny-llama/pol.yaml")]
    assert command.overrides == ["--learning_rate=1e-3"] and command.launch.gpus == 1
    assert command.launcher() == [sys.executable, "-m", "meditod_hub.commands.train"]


def test_model_alone_trains_the_three_tasks_in_turn(in_project):
    command = train_cmd.resolve_command(["tiny-t5", "--num_train_epochs=1"])
    assert [r.stem for r in command.recipes] == ["nlu", "pol", "nlg"]
    assert command.overrides == ["--num_train_epochs=1"]
    flags_first = train_cmd.resolve_command(["--gpus=1", "recipes/tiny-t5/", "nlg"])
    assert flags_first.recipes == [Path("recipes/tiny-t5/nlg.yaml")]


def test_a_multitask_model_names_its_one_recipe(in_project):
    assert train_cmd.resolve_command(["llama3-8b-multitask"]).recipes == [
        Path("recipes/llama3-8b-multitask/multitask.yaml")]
    assert train_cmd.resolve_command(["tiny-llama-multitask", "multitask"]).recipes == [
        Path("recipes/tiny-llama-multitask/multitask.yaml")]
    with pytest.raises(UsageError, match="no task 'nlu' in recipes/llama3-8b-multitask: give "
                                         "one of multitask"):
        train_cmd.resolve_command(["llama3-8b-multitask", "nlu"])


def test_a_recipe_path_still_works_and_out_places_each_task(in_project, tmp_path):
    command = train_cmd.resolve_command(["recipes/tiny-llama/nlg.yaml", "--out", str(tmp_path)])
    assert command.argv(command.recipes[0]) == ["recipes/tiny-llama/nlg.yaml",
                                                f"--output_dir={tmp_path / 'nlg'}"]


def test_gpus_launch_accelerate_with_the_ddp_config(in_project, monkeypatch):
    launched = []
    monkeypatch.setattr(train_cmd.subprocess, "run", lambda argv: launched.append(argv)
                                or subprocess.CompletedProcess(argv, 0))
    assert train_cmd.main(["flan-t5-base", "nlu", "--gpus", "2", "--learning_rate=5e-5"]) == 0
    (argv,) = launched
    assert argv[:8] == [sys.executable, "-m", "accelerate.commands.launch", "--config_file",
                        "recipes/accelerate/ddp.yaml", "--num_processes", "2", "-m"]
    assert argv[8:] == ["meditod_hub.commands.train", "recipes/flan-t5-base/nlu.yaml",
                        "--learning_rate=5e-5"]


def test_a_failed_launch_stops_the_remaining_tasks(in_project, monkeypatch):
    launched = []
    monkeypatch.setattr(train_cmd.subprocess, "run", lambda argv: launched.append(argv)
                                or subprocess.CompletedProcess(argv, 3))
    assert train_cmd.main(["tiny-llama", "--gpus=2"]) == 3
    assert len(launched) == 1


@pytest.mark.parametrize("argv,message", [
    (["no-such-model"], "no recipe or model 'no-such-model': give a recipes/ folder (biogpt"),
    (["tiny-llama", "dst"], "no task 'dst' in recipes/tiny-llama: give one of nlu, pol, nlg"),
    (["tiny-llama", "--gpus", "two"], "argument --gpus: must be a whole number, got 'two'"),
    (["tiny-llama", "--gpus", "0"], "argument --gpus: must be at least 1, got 0"),
    (["--gpus=2"], "give MODEL [TASK] (a recipes/ folder and one of its tasks) or a <recipe.yaml>"),
    (["tiny-llama", "--gpus", "2", "--accelerate_config", "nope.yaml"], "no accelerate config nope.yaml"),
])
def test_train_command_mistakes_say_what_to_give(in_project, argv, message):
    with pytest.raises(UsageError, match=re.escape(message)):
        train_cmd.resolve_command(argv)


def test_a_missing_tiny_base_is_made_on_first_use(embedded_build, tmp_path, monkeypatch):
    """A fresh checkout has no build/tiny-models: the tiny recipes make their base themselves
    (before: `Repo id must be in the form 'repo_name' ...: 'build/tiny-models/tiny-llama'`)."""
    from transformers import AutoTokenizer

    monkeypatch.chdir(tmp_path)
    recipe = train_cmd.parse_recipe([str(PROJECT / "recipes/tiny-llama/nlu.yaml"),
                                     f"--dataset_name={embedded_build}"])
    base = Path("build/tiny-models/tiny-llama")
    assert recipe.model.model_name_or_path == str(base) and not base.exists()
    T.ensure_tiny_base(recipe.model, recipe.script.dataset_name)
    assert (base / "tiny.json").is_file()
    assert AutoTokenizer.from_pretrained(base).eos_token == "<|eot_id|>"
    assert [p.name for p in base.parent.iterdir()] == ["tiny-llama"]  # no partial folder left


def test_a_missing_tiny_base_without_data_names_the_build(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    recipe = train_cmd.parse_recipe([str(PROJECT / "recipes/tiny-llama/nlu.yaml")])
    with pytest.raises(UsageError, match=r"no such folder: meditod \(build one with `meditod build"):
        T.ensure_tiny_base(recipe.model, recipe.script.dataset_name)


# --- make --------------------------------------------------------------------------------------
PIPELINE = {  # target -> what it needs to print its command
    "build": [], "tiny": [], "train": ["MODEL=tiny-llama"], "predict": ["MODEL_PATH=r", "TASK=nlu"],
    "fewshot": ["MODEL=m", "TASK=nlu"], "evaluate": ["TASK=nlu", "PREDICTIONS=p/x.jsonl"],
    "publish": ["RUN=r", "REPO=o/x"], "push": ["REPO=o/x"], "annotate": [],
    "agreement": ["A=a", "B=b"], "eval-cascade": ["NLU=a", "POL=b", "NLG=c"], "chat": [],
    "app": [], "space": ["REPO=o/x"], "results": [], "pretrained": [], "harness": [],
    "eval-state": [], "eval-policy": [], "eval-nlg": [], "eval-conversations": []}
# named for what they make (issue 20's `make leaderboard-space` runs `meditod leaderboard`)
OTHER_TARGETS = {"tiny-runs", "published", "leaderboard-space"}


@pytest.mark.parametrize("target", PIPELINE)
def test_every_pipeline_target_runs_the_subcommand_it_is_named_after(target):
    (command,) = [c for c in commands(target, *PIPELINE[target]) if not c.startswith("test -n")]
    if target == "app":  # after `make demo`, the demo's runs are its environment's defaults
        assert command.rstrip().endswith('".venv/bin/meditod" app'), command
    else:
        assert command.startswith(f'".venv/bin/meditod" {target} '.rstrip()), command


def test_the_makefile_names_every_target_and_tiny_runs_calls_meditod_only():
    names = set(re.findall(r"^([a-z][a-z-]*):(?!=)", (PROJECT / "Makefile").read_text(), re.M))
    assert names == set(PIPELINE) | NOT_SUBCOMMANDS | OTHER_TARGETS
    tiny = commands("tiny-runs", "-B")  # -B: what it runs with no runs there yet
    assert len(tiny) == 3 and all(c.startswith('".venv/bin/meditod" ') for c in tiny)
    assert not (PROJECT / "scripts" / "train.sh").exists()


@pytest.mark.parametrize("alias,target", ALIASES.items())
def test_old_names_still_run_the_new_target_and_say_so(alias, target):
    done = make_n(alias, "REPO=org/x")
    assert done.returncode == 0, done.stderr
    assert f"'make {alias}' is 'make {target}' now" in done.stdout
    assert f'.venv/bin/meditod" {target} ' in done.stdout


def test_old_make_push_of_a_run_still_publishes_it():
    done = make_n("push", "RUN=runs/x", "REPO=org/x")
    assert '.venv/bin/meditod" publish --run "runs/x" --repo "org/x"' in done.stdout
    assert "is `make publish` now" in done.stderr


def test_make_train_calls_meditod_train_with_model_task_and_gpus():
    done = make_n("train", "MODEL=tiny-llama", "TASK=nlu", "GPUS=2", "OUT=runs/mine")
    assert '.venv/bin/meditod" train "tiny-llama" nlu --gpus 2 --dataset_name="meditod" ' \
           '--out "runs/mine"' in done.stdout


@pytest.mark.parametrize("target", ["app", "annotate"])
def test_host_and_port_are_where_a_server_target_listens(target):
    """Issue 25: `meditod app` had no --host or --port; HOST and PORT mean the same for both."""
    done = make_n(target, "HOST=0.0.0.0", "PORT=7999")
    assert done.returncode == 0, done.stderr
    assert re.search(rf'meditod" {target} .*--host "0\.0\.0\.0" --port 7999', done.stdout.replace(
        "\\\n", " ")), done.stdout


@pytest.mark.parametrize("args,expected", [
    (["predict", "MODEL_PATH=runs/m/nlu", "TASK=nlu", "OUT=p"], '--split "test" --out "p"'),
    (["evaluate", "TASK=nlu", "PREDICTIONS=x.jsonl", "OUT=s"], '--predictions "x.jsonl" --out "s"'),
    (["agreement", "A=a", "B=b", "OUT=s"], '--out "s/agreement.json"'),
    (["fewshot", "MODEL=m", "TASK=nlu", "OUT=s"], '--out "s"'),
    (["eval-cascade", "NLU=a", "POL=b", "NLG=c", "OUT=s"], '--out "s"'),
])
def test_out_is_the_folder_every_target_writes_into(args, expected):
    done = make_n(*args)
    assert done.returncode == 0, done.stderr
    assert expected in done.stdout


@pytest.mark.parametrize("target,args", [
    ("predict", ["MODEL_PATH=runs/m/nlu", "TASK=nlu"]),
    ("evaluate", ["TASK=nlu", "PREDICTIONS=runs/m/nlu/eval/test/predictions.jsonl"]),
    ("eval-cascade", ["NLU=a", "POL=b", "NLG=c"])])
def test_data_and_out_are_the_runs_own_unless_given(target, args):
    """Before: `--data "meditod"` always, so a run trained on the synthetic sample was scored on
    whatever ./meditod held; now the command takes the run's own dataset (and its eval folder)."""
    plain = make_n(target, *args).stdout
    assert "--data" not in plain and "--out" not in plain
    given = make_n(target, *args, "DATA=other build").stdout
    assert '--data "other build"' in given


def test_out_naming_a_file_is_the_old_meaning_and_refused():
    done = make_n("evaluate", "TASK=nlu", "PREDICTIONS=p.jsonl", "OUT=runs/x/results.json")
    assert done.returncode != 0
    assert "OUT is the folder a target writes into (e.g. OUT=runs/x)" in done.stderr


# --- the test suite's own fast loop ------------------------------------------------------------
def test_tests_that_train_through_a_fixture_are_slow():
    """`-m "not slow"` leaves out every test whose fixtures train (conftest.TRAINING_FIXTURES)."""
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m",
                           "not slow", "-p", "no:cacheprovider", "tests/test_eval_cascade.py"],
                          cwd=PROJECT, capture_output=True, text=True, timeout=600)
    assert "test_gold_nlu_makes_both_columns_equal_and_generates_each_row_once" in done.stdout
    assert "tiny_runs" not in done.stdout and "test_the_command_on_the_tiny_runs" not in done.stdout


def test_training_three_tasks_says_which_task_of_three_and_ends_on_a_sentence(in_project,
                                                                              monkeypatch, capsys):
    """(before: `make tiny-runs` ended on a raw JSON line, with no `task 2/3`)"""
    monkeypatch.setattr(train_cmd, "train_recipe", lambda argv, callbacks=(): f"trained {argv[0]}")
    assert train_cmd.main(["tiny-llama"]) == 0
    out, err = capsys.readouterr()
    assert [line for line in err.splitlines() if line.startswith("==")] == [
        f"== task {n}/3: recipes/tiny-llama/{task}.yaml ==" for n, task in
        enumerate(("nlu", "pol", "nlg"), 1)]
    assert out.splitlines()[-1] == "trained recipes/tiny-llama/nlg.yaml"
