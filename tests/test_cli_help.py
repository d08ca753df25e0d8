"""`meditod <command> -h` helps: each default shown once, booleans as plain flags, numbers checked
at parse time, and `meditod train -h` (with or without a recipe) short and torch-free."""

from __future__ import annotations

import dataclasses
import importlib
import re
import subprocess
import sys
import typing
from pathlib import Path

import pytest
from helpers import command_argument_types

from meditod_hub import arguments, cli
from meditod_hub.errors import UsageError

PROJECT = Path(__file__).resolve().parent.parent
ARGUMENT_COMMANDS = [name for name in cli.COMMANDS if name != "train"]  # train: TrlParser + recipe


def _help(capsys, *argv: str) -> str:
    try:
        code = cli.main(list(argv))
    except SystemExit as exit_:
        code = exit_.code
    assert code in (0, None), capsys.readouterr()
    return capsys.readouterr().out


@pytest.mark.parametrize("command", ARGUMENT_COMMANDS)
def test_help_shows_each_default_once_and_booleans_as_flags(command, capsys):
    text = _help(capsys, command, "-h")
    assert text.startswith(f"usage: meditod {command}")
    assert "(default: None)" not in text
    entries = re.split(r"\n  (?=--)", text)
    for entry in entries:
        assert entry.count("(default:") <= 1, entry
        assert "(default:" not in entry or "default" not in entry.split("(default:")[0], entry
        assert "(default: None)" not in entry and "(default: False)" not in entry, entry
    assert not re.search(r"--(\w+) \[\1\]", text, re.IGNORECASE), "a boolean shown as --flag [FLAG]"
    assert not re.search(r"--[\w-]+ \[[A-Z_]+\]", text), text


@pytest.mark.parametrize("command", ARGUMENT_COMMANDS)
def test_every_flag_says_what_it_is(command, capsys):
    """Issue 25: `meditod tiny -h` listed `--out OUT` with no word on what it is."""
    options = _help(capsys, command, "-h").split("\noptions:\n", 1)[1]
    for entry in re.split(r"\n  (?=-)", "\n" + options)[1:]:
        first, _, rest = entry.partition("\n")
        assert re.search(r"\S {2,}\S", first) or rest.strip(), f"{command}: {first} has no help"


def test_a_default_written_in_the_help_text_is_not_repeated(capsys):
    text = _help(capsys, "predict", "-h")
    family = text.split("\n  --family", 1)[1].split("\n  --", 1)[0]
    assert "default: the run's run_info.json" in family and "(default:" not in family
    assert re.search(r"--show_state\s", _help(capsys, "chat", "-h"))


def test_no_command_help_imports_torch():
    """Every command's -h in one fresh interpreter: none may have pulled in torch."""
    code = ("import sys\nfrom meditod_hub import cli\n"
            "for name in cli.COMMANDS:\n"
            "    try:\n        cli.main([name, '-h'])\n    except SystemExit:\n        pass\n"
            "    assert 'torch' not in sys.modules, name\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=PROJECT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


def _numeric_fields():
    for name in ARGUMENT_COMMANDS:
        module = importlib.import_module(cli.COMMANDS[name][0])
        for cls in command_argument_types(module):
            hints = typing.get_type_hints(cls)
            for f in dataclasses.fields(cls):
                kind, _ = arguments._plain_type(hints[f.name])
                if kind in (int, float):
                    yield name, cls.__name__, f


def test_every_numeric_flag_declares_its_bounds():
    """One place validates numbers (arguments.parse_args), from bounds every numeric field declares."""
    fields = list(_numeric_fields())
    assert len(fields) > 20
    missing = [f"{cls}.{f.name}" for _, cls, f in fields
               if not {"min", "max", "above"} & set(f.metadata)]
    assert not missing, f"numeric flags without bounds: {missing}"


@pytest.mark.parametrize("argv,phrase", [
    (["--limit", "-1"], "argument --limit: must be at least 1, got -1"),
    (["--limit", "0"], "argument --limit: must be at least 1, got 0"),
    (["--batch_size", "0"], "argument --batch_size: must be at least 1, got 0"),
    (["--batch-size", "0"], "argument --batch_size: must be at least 1, got 0"),
    (["--max_new_tokens", "-5"], "must be at least 1, got -5"),
    (["--limit", "ten"], "must be a whole number, got 'ten'"),
    (["--load_in_4bit", "maybe"], "must be true or false, got 'maybe'"),
    (["--family", "gpt2"], "invalid choice: 'gpt2'"),
    (["--bogus", "1"], "unrecognized arguments: --bogus 1"),
])
def test_a_bad_value_is_a_one_line_usage_error_before_any_work(argv, phrase):
    from meditod_hub.commands.predict import PredictArguments

    with pytest.raises(UsageError) as error:
        arguments.parse_args((PredictArguments,), ["--model_path", "m", "--task", "nlu", "--out", "o",
                                             *argv], "meditod predict", "")
    assert phrase in str(error.value) and str(error.value).endswith("(see meditod predict -h)")
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "-inf"])
def test_every_timeout_and_rate_is_positive_and_finite(value):
    from meditod_hub.apps.chat import ChatArguments
    from meditod_hub.evaluation.fewshot.run import FewshotArguments

    for flag in ("--request_timeout", "--max_tokens", "--context_window", "--concurrency"):
        with pytest.raises(UsageError, match=f"argument {flag}: must be"):
            arguments.parse_args((FewshotArguments,), ["--model", "m", "--task", "nlu", f"{flag}={value}"],
                           "meditod fewshot", "")
    if value not in ("nan", "inf", "-inf"):
        with pytest.raises(UsageError, match="argument --max_patient_chars: must be at least 1"):
            arguments.parse_args((ChatArguments,), [f"--max_patient_chars={value}"], "meditod chat", "")


def test_hyphenated_flags_and_boolean_switches_still_parse():
    from meditod_hub.evaluation.evaluate import EvaluateArguments

    (args,) = arguments.parse_args((EvaluateArguments,), ["--task", "nlu", "--predictions", "p",
                                                    "--out", "o", "--judge-threshold", "0.5",
                                                    "--no_chart"], "meditod evaluate", "")
    assert args.judge_threshold == 0.5 and args.chart is False and isinstance(args.out, Path)


@pytest.mark.parametrize("recipe", [None, "recipes/tiny-llama/nlu.yaml", "recipes/llama3-8b/pol.yaml"])
def test_train_help_fits_a_screen_and_shows_the_recipe(recipe, capsys):
    argv = ["train", *([recipe] if recipe else []), "-h"]
    text = _help(capsys, *argv)
    assert text.startswith("usage: meditod train MODEL [TASK]")
    assert len(text.splitlines()) <= 45, len(text.splitlines())
    for key in ("task", "family", "dataset_name", "max_new_tokens", "overwrite_output_dir"):
        assert re.search(rf"^  {key}\s", text, re.MULTILINE), key
    assert "--help_all" in text and "usage: cli.py" not in text
    if recipe:
        assert re.search(r"^  task\s+(nlu|pol)\s", text, re.MULTILINE)
        assert "learning_rate=" in text and f"output_dir=runs/{recipe.split('/')[1]}" in text


def test_train_without_a_recipe_prints_the_help_as_a_usage_error(capsys):
    assert cli.main(["train"]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("usage: meditod train MODEL [TASK]") and not captured.out


def test_train_help_names_every_recipe_folder_multitask_ones_included(capsys):
    """Issue 25: `meditod train -h` listed only the folders with an nlu.yaml (no multitask
    recipe), under a usage line `<recipe.yaml>` that disagreed with `train MODEL [TASK]`."""
    text = _help(capsys, "train", "-h")
    usage = text.split("\n\n", 1)[0]
    assert "meditod train MODEL [TASK]" in usage and "<recipe.yaml>" in usage
    listed = " ".join(line for line in text.splitlines() if line.startswith(("MODEL", "  ")))
    folders = sorted(p.parent.name for p in (PROJECT / "recipes").glob("*/*.yaml")
                     if p.parent.name != "accelerate")
    assert {"tiny-llama-multitask", "llama3-8b-multitask", "smollm2-135m-multitask"} <= set(folders)
    for folder in folders:
        assert re.search(rf"[ ,:]{re.escape(folder)}(,|$|\s)", listed), folder
    multitask = text.split("MODEL, multitask", 1)[1].split("\n\n", 1)[0]
    assert "tiny-llama-multitask" in multitask and "tiny-llama," not in multitask


@pytest.mark.parametrize("argv, task", [(["tiny-llama-multitask"], "multitask"),
                                        (["tiny-llama", "pol"], "pol"), (["tiny-llama"], "nlu")])
def test_train_help_of_model_and_task_shows_that_recipe(argv, task, capsys):
    text = _help(capsys, "train", *argv, "-h")
    assert re.search(rf"^  task\s+{task}\s", text, re.MULTILINE), text
    assert "is not a readable recipe" not in text


def test_train_help_is_answered_without_torch():
    done = subprocess.run([sys.executable, "-c",
                           "import sys\nfrom meditod_hub.cli import main\n"
                           "assert main(['train', 'recipes/tiny-llama/nlu.yaml', '-h']) == 0\n"
                           "assert 'torch' not in sys.modules"],
                          cwd=PROJECT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "MediTOD keys" in done.stdout


@pytest.mark.slow
def test_train_help_all_lists_the_trainers_keys(capsys):
    text = _help(capsys, "train", "recipes/tiny-t5/nlu.yaml", "--help_all")
    assert "MediTOD keys" in text
    for flag in ("--learning_rate", "--predict_with_generate", "--lora_r"):
        assert flag in text, flag
