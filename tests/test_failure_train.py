"""`meditod train`: bad recipes and resumes, every numeric recipe key, a loss that becomes NaN.

Part of the failure sweep (tests/test_failure_*.py): each case must end in a clear error
(non-zero exit, a one-line `error:` that is not an "unexpected" failure), never a traceback,
a silent success, a lost file or a secret in the output; helpers.py keeps the sweep table.
Offline, CPU.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers import (
    TINY_NLU_RECIPE,
    expect,
    run_case,
)
from transformers import TrainerCallback

from meditod_hub.commands import train as train_cmd
from meditod_hub.errors import run_main
from meditod_hub.models import resume
from meditod_hub.models import train as T
from meditod_hub.models.recipes import NUMBER_RULES

PROJECT = Path(__file__).resolve().parent.parent


# --- train -------------------------------------------------------------------------------------

def _recipe(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "recipe.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("case", ["recipe missing", "invalid YAML", "not a mapping", "unknown key",
                                  "unknown family", "misspelled validation split",
                                  "misspelled dataset", "output_dir is a file"])
def test_train_bad_input(case, embedded_build, tiny_models, tmp_path, capsys):
    recipe = _recipe(tmp_path, TINY_NLU_RECIPE)
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
        recipe.write_text(TINY_NLU_RECIPE + "\nfoo: [unclosed\n")
    elif case == "not a mapping":
        recipe.write_text("- a\n- b\n")
    elif case == "unknown key":
        recipe.write_text(TINY_NLU_RECIPE + "learning_rte: 1\n")
    elif case == "unknown family":
        recipe.write_text(TINY_NLU_RECIPE.replace("family: chat", "family: gpt2"))
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
    before = resume.base_identity(str(base), None)
    weights = load_file(base / "model.safetensors")
    save_file({k: v + 1 for k, v in weights.items()}, base / "model.safetensors",
              metadata={"format": "pt"})  # the base rebuilt differently, at the same path
    after = resume.base_identity(str(base), None)
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
    assert resume.base_identity("org/no-such-local-folder", None) == "org/no-such-local-folder@main"
    assert resume.base_identity("org/no-such-local-folder", "v2") == "org/no-such-local-folder@v2"


# (flag, the allowed range the error names); each is refused while parsing, before any work
BAD_TRAIN_NUMBERS = {
    "--learning_rate=1e309": "--learning_rate=inf: must be a finite number from 1e-8 to 1",
    "--learning_rate=0": "--learning_rate=0.0: must be a finite number from 1e-8 to 1",
    "--learning_rate=-1e-4": "must be a finite number from 1e-8 to 1",
    # issue 46: a rate no weight moves with trained nothing, silently
    "--learning_rate=1e-300": "--learning_rate=1e-300: must be a finite number from 1e-8 to 1",
    # issue 36: finite but absurd, refused up front (before: it trained, and diverged)
    "--learning_rate=1e30": "--learning_rate=1e+30: must be a finite number from 1e-8 to 1",
    "--learning_rate=1.5": "--learning_rate=1.5: must be a finite number from 1e-8 to 1",
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
    recipe = _recipe(tmp_path, TINY_NLU_RECIPE.replace("learning_rate: 5.0e-3", "learning_rate: .inf"))
    outcome = run_case("train: recipe learning_rate inf", train_cmd.main, [recipe], capsys)
    expect(outcome, f"{recipe}: learning_rate: inf: must be a finite number from 1e-8 to 1", code=2)
    epochs = train_cmd.parse_recipe([str(PROJECT / "recipes" / "tiny-llama" / "nlu.yaml"),
                                     "--num_train_epochs=0", "--max_steps=3"])
    assert epochs.training.max_steps == 3, "epochs are not checked when max_steps decides"


class _LossBecomesNaN(TrainerCallback):
    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "loss" in logs and state.global_step >= 2:
            logs["loss"] = float("nan")


@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")
def test_a_loss_that_becomes_nan_stops_the_run(embedded_build, tiny_models, tmp_path, capsys):
    """(A learning rate of 1e30, which this test once trained to divergence, is now refused
    before any work: BAD_TRAIN_NUMBERS.)"""
    out = tmp_path / "run"
    argv = [PROJECT / "recipes" / "tiny-llama" / "nlu.yaml", f"--dataset_name={embedded_build}",
            f"--model_name_or_path={tiny_models / 'tiny-llama'}", f"--output_dir={out}",
            "--max_steps=4", "--save_strategy=no", "--logging_steps=1"]
    outcome = run_case("train: the loss becomes NaN", lambda a: train_cmd.main(a, [_LossBecomesNaN()]),
                       argv, capsys)
    assert "step 2: the training loss is nan" in outcome.err
    expect(outcome, "the run diverged and was stopped", "lower learning_rate", code=1)
    assert not (out / "run_info.json").exists()


# --- issue 26, the sweep's classes: every numeric recipe key -------------------------------------
def _numeric_recipe_keys() -> list[str]:
    """Every key some training recipe sets to a number, and every key train checks."""
    import yaml

    keys = set(NUMBER_RULES)
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
    recipe = _recipe(tmp_path, TINY_NLU_RECIPE.replace("logging_steps: 10", f"logging_steps: {text}"))
    outcome = run_case(f"train: recipe logging_steps {text}", _parse_only, [recipe], capsys)
    expect(outcome, f"{recipe}: logging_steps: ", "must be a finite number", code=2)


# --- issue 36, the battery's silent recipes: a key given twice, true/false where a number belongs --
SILENT_RECIPES = {
    "a key given twice": ("learning_rate: 5.0e-3", "learning_rate: 5.0e-3\nlearning_rate: 1.0e-4",
                          "the key 'learning_rate' is given twice"),
    "a boolean batch size": ("per_device_train_batch_size: 8", "per_device_train_batch_size: true",
                             "per_device_train_batch_size: True: must be a whole number"),
    "a boolean max_length": ("max_length: 1024", "max_length: false",
                             "max_length: False: must be a whole number"),
    # issue 46: epochs that max_steps overrides were not checked at all
    "a boolean num_train_epochs": ("num_train_epochs: 40", "num_train_epochs: true\nmax_steps: 3",
                                   "num_train_epochs: True: must be a finite number above 0"),
}


# --- issue 46: training publishes nothing by itself ------------------------------------------------
@pytest.mark.parametrize("setting", ["push_to_hub: true", "push_to_hub: false", "hub_model_id: me/x",
                                     "hub_token: hf_notarealtokenatall0123456789", "hub_private_repo: false",
                                     "hub_strategy: every_save", "--push_to_hub=true",
                                     "--hub_model_id=me/x", "--hub_token=x", "--hub_always_push"])
def test_the_trainers_own_upload_is_refused_naming_publish(setting, tmp_path, capsys):
    """The trainer's upload would make a repo (public) and upload training_args.bin, a pickle
    holding hub_token, past every check of `meditod publish`."""
    recipe, flags = PROJECT / "recipes" / "tiny-llama" / "nlu.yaml", []
    if setting.startswith("--"):
        flags = [setting]
    else:
        recipe = _recipe(tmp_path, TINY_NLU_RECIPE + setting + "\n")
    outcome = run_case(f"train: {setting}", train_cmd.main,
                       [str(recipe), *flags, f"--output_dir={tmp_path / 'run'}"], capsys)
    expect(outcome, "training never uploads", "meditod publish --run", code=2)
    assert "hf_notarealtoken" not in outcome.err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("case", SILENT_RECIPES)
def test_a_recipe_yaml_would_read_silently_otherwise_is_refused(case, tmp_path, capsys):
    """Before: YAML kept the last of two keys unseen, and true/false passed as 1/0."""
    old, new, phrase = SILENT_RECIPES[case]
    assert old in TINY_NLU_RECIPE
    recipe = _recipe(tmp_path, TINY_NLU_RECIPE.replace(old, new))
    outcome = run_case(f"train: {case} in the recipe", _parse_only, [str(recipe)], capsys)
    expect(outcome, str(recipe), phrase, code=2)


# --- issue 36, the battery's silent recipes: a token budget beyond the base model's positions ---
@pytest.mark.parametrize("where", ["flag", "recipe"])
def test_a_max_length_beyond_the_models_positions_is_refused_before_any_work(
        where, embedded_build, tiny_models, tmp_path, capsys):
    """Before: the tiny Llama (RoPE) trained on positions it never had, silently."""
    base = tiny_models / "tiny-llama"
    limit = json.loads((base / "config.json").read_text())["max_position_embeddings"]
    recipe = _recipe(tmp_path, TINY_NLU_RECIPE if where == "flag" else
                     TINY_NLU_RECIPE.replace("max_length: 1024", f"max_length: {limit + 1}"))
    argv = [recipe, f"--dataset_name={embedded_build}", f"--model_name_or_path={base}",
            f"--output_dir={tmp_path / 'run'}", "--max_steps=1",
            *([f"--max_length={limit * 2}"] if where == "flag" else [])]
    outcome = run_case(f"train: max_length beyond the positions ({where})", train_cmd.main, argv,
                       capsys)
    expect(outcome, f"{recipe}: max_length {limit * 2 if where == 'flag' else limit + 1} is "
                    f"beyond the {limit} positions of {base}", f"at most {limit}", code=2)
    assert not (tmp_path / "run").exists()


def test_a_tiny_base_whose_first_build_failed_is_built_on_its_next_use(
        embedded_release, embedded_build, tmp_path, monkeypatch):
    """Before: a tiny recipe's first use on a release folder (not a build) failed, leaving
    build/tiny-models/tiny-llama holding only the output guard's record; every later run took
    that folder for the base and failed on "Couldn't instantiate the backend tokenizer"."""
    from types import SimpleNamespace

    from transformers import AutoTokenizer

    from meditod_hub.errors import MeditodError
    from meditod_hub.models import tiny

    monkeypatch.setattr(tiny, "DEFAULT_OUT", tmp_path / "tiny-models")
    base = SimpleNamespace(model_name_or_path=str(tmp_path / "tiny-models" / "tiny-llama"))
    with pytest.raises(MeditodError, match="build it first"):
        T.ensure_tiny_base(base, str(embedded_release))
    assert not (Path(base.model_name_or_path) / "tiny.json").exists()
    T.ensure_tiny_base(base, str(embedded_build))
    assert len(AutoTokenizer.from_pretrained(base.model_name_or_path)) > 0
