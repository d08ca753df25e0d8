"""`meditod train`: recipes -> run folders through `models.train`, on one process or many.

    meditod train llama3-8b nlu                     # recipes/llama3-8b/nlu.yaml -> runs/llama3-8b/nlu
    meditod train tiny-llama                        # nlu, pol and nlg in turn
    meditod train llama3-8b-multitask               # recipes/llama3-8b-multitask/multitask.yaml
    meditod train flan-t5-base nlu --gpus 2         # accelerate launch, recipes/accelerate/ddp.yaml
    meditod train recipes/tiny-llama/nlu.yaml --num_train_epochs=2 --output_dir=runs/x
    torchrun --nproc_per_node 2 -m meditod_hub.commands.train recipes/...   # CPU: gloo

`MODEL [TASK]` names a folder of `recipes/` (and one of its tasks; all its tasks without one), as
`trl sft` takes a model name; a recipe path works too. `--gpus N` (N > 1) relaunches the same
command under `accelerate launch` with `--accelerate_config` (default the DDP config; the FSDP
and ZeRO-3 ones shard); `--out DIR` puts the run folders at DIR/<task>. The tiny recipes' bases
(`build/tiny-models/tiny-*`) are made on first use from the recipe's dataset (`meditod tiny`).

A recipe's keys and every `--key=value` are parsed by TRL's `TrlParser` into `MeditodArguments`,
the trainer's dataclass and `ModelConfig` (a `models.train.Recipe`); numbers no run can train
with are refused before any work (`NUMBER_RULES`). `-h` shows the MediTOD keys with a recipe's
values without importing torch (`train_help`), `--help_all` every trainer key.
"""

from __future__ import annotations

import dataclasses
import difflib
import logging
import math
import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from meditod_hub import quiet
from meditod_hub.data.tasks import MULTITASK, TASK_NAMES
from meditod_hub.errors import UsageError, run_main
from meditod_hub.models import pretrained
from meditod_hub.models.families import FAMILIES, get_family
from meditod_hub.models.train_settings import (
    RECIPES,
    MeditodArguments,
    folder_tasks,
    load_recipe_yaml,
    recipe_models,
)

if TYPE_CHECKING:
    from meditod_hub.models.train import Recipe

USAGE = "usage: meditod train MODEL [TASK] [--key=value ...]   (or a <recipe.yaml> for MODEL [TASK])"
HELP_FLAGS = ("-h", "--help", "--help_all", "--help-all")


# --- -h: the MediTOD keys and a recipe's values, without torch ------------------------------------
def wants_help(argv: list[str]) -> bool:
    return any(arg in HELP_FLAGS for arg in argv)


def _yaml_value(value) -> str:
    return yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("\n...").strip()


def _help_recipe(argv: list[str]) -> Path | None:
    """The recipe `MODEL [TASK]` or `<recipe.yaml>` names (MODEL alone: its first task's)."""
    if not argv or argv[0].startswith("-"):
        return None
    path = Path(argv[0])
    if path.is_file():
        return path
    folder = path if folder_tasks(path) else RECIPES / argv[0]
    tasks = folder_tasks(folder)
    if not tasks:
        return path
    task = argv[1] if len(argv) > 1 and argv[1] in tasks else tasks[0]
    return folder / f"{task}.yaml"


def train_help(argv: list[str]) -> str:
    """The help for `meditod train [MODEL [TASK] | <recipe.yaml>] -h` (or `--help_all`): under
    a screen."""
    width = max(shutil.get_terminal_size((100, 24)).columns, 100)
    recipe_path = _help_recipe(argv)
    recipe: dict = {}
    if recipe_path is not None and recipe_path.is_file():
        try:
            loaded = yaml.safe_load(recipe_path.read_text(encoding="utf-8"))
            recipe = loaded if isinstance(loaded, dict) else {}
        except (yaml.YAMLError, UnicodeDecodeError, OSError):
            recipe = {}
    lines = [USAGE, "",
             "Train recipes/MODEL/TASK.yaml into a run folder (runs/MODEL/TASK; --out DIR: DIR/TASK);",
             "any recipe key can be overridden as --key=value.", ""]
    source = f"value in {recipe_path}" if recipe else "default"
    lines.append(f"MediTOD keys ({source}):")
    for f in dataclasses.fields(MeditodArguments):
        if f.name in recipe:
            value = _yaml_value(recipe[f.name])
        elif f.default is not dataclasses.MISSING:
            value = _yaml_value(f.default)
        else:
            value = "(required)"
        head = f"  {f.name:<22}{value:<16} "
        help_ = f.metadata.get("help", "")
        lines += textwrap.wrap(help_, width, initial_indent=head,
                               subsequent_indent=" " * len(head)) or [head.rstrip()]
    others = {k: v for k, v in recipe.items() if k not in {f.name for f in
                                                             dataclasses.fields(MeditodArguments)}}
    if others:
        lines += ["", f"Trainer and model keys in {recipe_path}:"]
        lines += textwrap.wrap("  ".join(f"{k}={_yaml_value(v)}" for k, v in others.items()),
                               width, initial_indent="  ", subsequent_indent="  ")
    elif recipe_path is not None and not recipe:
        lines += ["", f"({recipe_path} is not a readable recipe)"]
    models = recipe_models()
    single = [m for m, tasks in models.items() if MULTITASK not in tasks]
    multi = [m for m, tasks in models.items() if MULTITASK in tasks]
    wrap = dict(width=width, subsequent_indent="  ", break_on_hyphens=False)
    if recipe:  # that recipe's keys fill the screen: the folders are one `meditod train -h` away
        lines += ["", "meditod train -h lists every MODEL (recipes/ folder), multitask ones included."]
    if single and not recipe:
        lines += [""] + textwrap.wrap(f"MODEL, per task (TASK: {', '.join(TASK_NAMES)}; none: the "
                                      f"three in turn): {', '.join(single)}", **wrap)
    if multi and not recipe:
        lines += textwrap.wrap(f"MODEL, {MULTITASK} (one model on the three tasks' examples "
                               f"together): {', '.join(multi)}", **wrap)
    lines += ["", "--help_all lists every trainer key (TRL SFTConfig or Seq2SeqTrainingArguments, "
                  "and ModelConfig: LoRA, 4-bit)."]
    if "--help_all" in argv or "--help-all" in argv:
        lines += ["", _trainer_help(str(recipe.get("family", "llama")))]
    return "\n".join(lines)


def _trainer_help(family_name: str) -> str:
    """Every key of the trainer's dataclasses, as TRL's own parser lists them (imports TRL)."""
    from trl import ModelConfig, TrlParser

    family = FAMILIES.get(family_name, FAMILIES["llama"])
    parser = TrlParser((family.trainer_arguments_class(), ModelConfig), prog="meditod train")
    return parser.format_help()


# --- a recipe and its overrides -> a Recipe -------------------------------------------------------
def _read_recipe(path: Path) -> dict:
    if not path.is_file():
        models = _models()
        raise UsageError(f"no recipe {path}" + (f"; models: {models}" if models else ""))
    try:
        config = load_recipe_yaml(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 (byte {exc.start}): save the recipe as UTF-8") from None
    except RecursionError:
        raise UsageError(f"{path}: nested too deeply to read: not a recipe") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        why = f" ({exc.problem})" if isinstance(exc, yaml.constructor.ConstructorError) else ""
        raise UsageError(f"{path}: invalid YAML{where}{why}: fix the recipe") from None
    if not isinstance(config, dict):
        raise UsageError(f"{path}: a recipe is a YAML mapping of settings, got "
                         f"{type(config).__name__}")
    return config


def parse_recipe(argv: list[str]) -> Recipe:
    """`<recipe.yaml> [--key=value ...]` -> the three dataclasses (TrlParser: YAML, then CLI)."""
    # torch, TRL and the trainer load only to parse a recipe: `meditod train -h` needs none
    import torch
    from trl import ModelConfig, TrlParser

    from meditod_hub.models.train import Recipe

    if wants_help(argv):
        print(train_help(argv))
        raise SystemExit(0)
    if not argv or argv[0].startswith("-"):
        raise UsageError("give MODEL [TASK] (a recipes/ folder and one of its tasks) or a "
                         "<recipe.yaml>: meditod train -h lists them")
    path, overrides = Path(argv[0]), list(argv[1:])
    config = _read_recipe(path)
    cli_keys = [a[2:].split("=", 1)[0].replace("-", "_") for a in overrides if a.startswith("--")]
    family = get_family(_cli_value(overrides, "family") or config.get("family") or "(missing)")
    parser = TrlParser((MeditodArguments, family.trainer_arguments_class(), ModelConfig))
    parser.error = _usage_error  # one line, as every command's flags (not the whole usage)
    known = {a.dest for a in parser._actions} - {"help", "config"}
    unknown = sorted((set(config) | set(cli_keys)) - known)
    if unknown:
        hints = [f"{k} (did you mean {m[0]}?)" if (m := difflib.get_close_matches(k, known, 1))
                 else k for k in unknown]
        raise UsageError(f"{path}: unknown setting(s) {', '.join(hints)}: recipe keys are fields "
                         f"of MeditodArguments, ModelConfig and "
                         f"{family.trainer_arguments_class().__name__}")
    # Without CUDA, TrainingArguments must be told so at construction: it then runs several
    # processes as gloo DDP (otherwise each trains alone) and accepts bf16 recipes.
    device = [] if torch.cuda.is_available() else ["--use_cpu=true"]
    _check_finite(path, config, overrides, {a.dest: a.type for a in parser._actions})
    try:
        script, training, model = parser.parse_args_and_config(["--config", str(path), *device,
                                                                *overrides])
    except (ValueError, TypeError, OverflowError) as exc:
        raise UsageError(f"{path}: {str(exc).splitlines()[0]}") from None
    values = {**_plain(model), **training.to_dict(), **_plain(script)}
    resolved = {k: values[k] for k in dict.fromkeys([*config, *cli_keys]) if k in values}
    _check_numbers(path, values, cli_keys)
    return Recipe(path, script, training, model, resolved)


# Numbers no run can train with, which TRL and transformers take silently (a zero batch fails
# minutes later, an infinite learning rate trains NaN): key -> (allowed?, the allowed range).
# None (unset) is always allowed.
NUMBER_RULES = {
    "learning_rate": (lambda v: math.isfinite(v) and v > 0, "a finite number above 0"),
    "max_steps": (lambda v: v == -1 or v >= 1, "-1 (unset: num_train_epochs decides) or at least 1"),
    "num_train_epochs": (lambda v: math.isfinite(v) and v > 0, "a finite number above 0 (or set "
                                                               "max_steps)"),
    **{key: (lambda v: v >= 1, "a whole number of at least 1")
       for key in ("max_length", "max_source_length", "max_new_tokens", "effective_batch_size",
                   "gradient_accumulation_steps", "per_device_train_batch_size",
                   "per_device_eval_batch_size", "eval_max_examples", "lora_r",
                   "save_total_limit")},
    **{key: (lambda v: v > 0, "above 0 (a whole number of steps, or below 1 a fraction of the "
                              "run's steps)")
       for key in ("logging_steps", "save_steps", "eval_steps")},
    "warmup_steps": (lambda v: v >= 0, "at least 0 (steps, or below 1 a fraction of the run)"),
    "weight_decay": (lambda v: v >= 0, "at least 0"),
    "max_grad_norm": (lambda v: v >= 0, "at least 0 (0 turns clipping off)"),
    "lora_alpha": (lambda v: v > 0, "above 0"),
    "adam_epsilon": (lambda v: v > 0, "above 0"),
    **{key: (lambda v: 0 <= v < 1, "at least 0 and below 1")
       for key in ("lora_dropout", "adam_beta1", "adam_beta2")},
    "seed": (lambda v: 0 <= v < 2 ** 32, "a whole number from 0 to 2**32 - 1"),
}


def _usage_error(message: str):
    message = re.sub(r"(--\w+)/--[\w-]+", r"\1", message)  # `--max_steps`, not its alias too
    raise UsageError(f"{message} (see meditod train -h)")


def _check_finite(path: Path, config: dict, overrides: list[str], types: dict) -> None:
    """Refuse NaN and infinity (1e309 reads as infinity) in any setting that is not text, before
    the parser turns one into an int (OverflowError) or a run trains on it."""
    def infinite(value) -> bool:
        try:
            return not math.isfinite(float(value))
        except (TypeError, ValueError):
            return False

    def checked_later(key: str) -> bool:  # NUMBER_RULES says its finite range
        return key in NUMBER_RULES and "finite" in NUMBER_RULES[key][1]

    for key, value in config.items():
        if checked_later(key):
            continue
        if not isinstance(value, bool) and isinstance(value, (int, float, str)) \
                and (isinstance(value, float) or types.get(key) is not str) and infinite(value):
            raise UsageError(f"{path}: {key}: {value}: must be a finite number")
    for key in {a[2:].split("=", 1)[0].replace("-", "_") for a in overrides if a.startswith("--")}:
        text = _cli_value(overrides, key) or _cli_value(overrides, key.replace("_", "-"))
        if text is not None and types.get(key) is not str and not checked_later(key) \
                and infinite(text):
            raise UsageError(f"--{key}={text}: must be a finite number")


def _check_numbers(path: Path, values: dict, cli_keys: list[str]) -> None:
    """Refuse a numeric setting outside `NUMBER_RULES` before any work, naming where it was set."""
    for key, (allowed, range_) in NUMBER_RULES.items():
        value = values.get(key)
        if value is None or (key == "num_train_epochs" and values.get("max_steps", -1) >= 1):
            continue  # unset, or epochs that max_steps overrides
        if isinstance(value, bool) or not (math.isfinite(value) and allowed(value)):
            where = f"--{key}={value}" if key in cli_keys else f"{path}: {key}: {value}"
            raise UsageError(f"{where}: must be {range_}")


def _cli_value(args: list[str], key: str) -> str | None:
    for i, arg in enumerate(args):
        if arg.startswith(f"--{key}="):
            return arg.split("=", 1)[1]
        if arg == f"--{key}" and i + 1 < len(args):
            return args[i + 1]
    return None


def _plain(instance) -> dict:
    return {f.name: getattr(instance, f.name) for f in dataclasses.fields(instance)}


# --- MODEL [TASK] or a recipe, on one process or under accelerate -------------------------------
DEFAULT_ACCELERATE_CONFIG = RECIPES / "accelerate" / "ddp.yaml"


@dataclass
class TrainCommand:
    """What `meditod train ...` asked for: the recipes in turn, and how to launch each."""

    recipes: list[Path]
    overrides: list[str]
    gpus: int = 1
    accelerate_config: Path = DEFAULT_ACCELERATE_CONFIG
    out: Path | None = None  # run folders at out/<task>; None: each recipe's own output_dir

    def argv(self, recipe: Path) -> list[str]:
        """The arguments `parse_recipe` gets for one recipe."""
        task = (_cli_value(self.overrides, "task") or _read_recipe(recipe).get("task")
                or recipe.stem)
        out = [f"--output_dir={self.out / task}"] if self.out else []
        return [str(recipe), *out, *self.overrides]

    def launcher(self) -> list[str]:
        """The process command that runs one recipe: this Python, or `accelerate launch`."""
        if self.gpus <= 1:
            return [sys.executable, "-m", "meditod_hub.commands.train"]
        return [sys.executable, "-m", "accelerate.commands.launch", "--config_file",
                str(self.accelerate_config), "--num_processes", str(self.gpus),
                "-m", "meditod_hub.commands.train"]


def _models() -> str:
    return ", ".join(recipe_models())


def _pop_flag(args: list[str], key: str) -> str | None:
    """Remove `--key V` / `--key=V` from `args` and return V (None when absent)."""
    for i, arg in enumerate(args):
        if arg.startswith(f"--{key}="):
            del args[i]
            return arg.split("=", 1)[1]
        if arg == f"--{key}":
            if i + 1 >= len(args):
                raise UsageError(f"--{key} needs a value")
            value = args[i + 1]
            del args[i:i + 2]
            return value
    return None


def resolve_command(argv: list[str]) -> TrainCommand:
    """`MODEL [TASK] | recipe.yaml` + `--gpus N --accelerate_config FILE --out DIR` + overrides."""
    args = list(argv)
    gpus = _pop_flag(args, "gpus")
    config = _pop_flag(args, "accelerate_config")
    out = _pop_flag(args, "out")
    try:
        gpus = int(gpus) if gpus is not None else 1
    except ValueError:
        raise UsageError(f"--gpus takes a number of processes, got {gpus!r}") from None
    if gpus < 1:
        raise UsageError(f"--gpus must be at least 1, got {gpus}")
    config = Path(config) if config else DEFAULT_ACCELERATE_CONFIG
    if gpus > 1 and not config.is_file():
        raise UsageError(f"no accelerate config {config}: give --accelerate_config, one of "
                         f"{', '.join(map(str, sorted((RECIPES / 'accelerate').glob('*.yaml'))))}")
    if not args or args[0].startswith("-"):  # no recipe: parse_recipe says what to give
        parse_recipe(args)
    target, rest = args[0], args[1:]
    path = Path(target)
    folder = path if folder_tasks(path) else RECIPES / target  # recipes/MODEL works too
    if path.suffix in (".yaml", ".yml") or path.is_file():
        recipes = [path]
    elif folder.is_dir():
        tasks = folder_tasks(folder)
        if rest and not rest[0].startswith("-"):
            if rest[0] not in tasks:
                raise UsageError(f"no task {rest[0]!r} in {folder}: give one of "
                                 f"{', '.join(tasks)}, or none to train "
                                 + ("all three in turn" if len(tasks) > 1 else "it"))
            tasks, rest = [rest[0]], rest[1:]
        recipes = [folder / f"{task}.yaml" for task in tasks]
    else:
        raise UsageError(f"no recipe or model {target!r}: give a recipes/ folder ({_models()}) "
                         "or a recipe .yaml")
    return TrainCommand(recipes, rest, gpus, config, Path(out) if out else None)


def train_recipe(argv: list[str], callbacks=()) -> str:
    """Train one recipe (`<recipe.yaml> [--key=value ...]`); returns its one-line summary."""
    from meditod_hub.models import train  # torch: see parse_recipe

    recipe = parse_recipe(argv)
    run_dir = recipe.training.output_dir
    train.ensure_tiny_base(recipe.model, recipe.script.dataset_name)
    pretrained.ensure_recipe_base(recipe.model.model_name_or_path)
    info = train.run(recipe, callbacks)
    return (f"{info['model']}/{info['task']}: {info['global_step']} steps on "
            f"{info['train_examples']} examples ({info['truncated_examples']} cut to fit, "
            f"{info['skipped_examples']} skipped) -> {run_dir}")


def main(argv: list[str], callbacks=()) -> int:
    logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
    # the trainer's figures; libraries stay at WARNING
    logging.getLogger("meditod_hub.models.train").setLevel(logging.INFO)
    quiet.progress_bars_off()
    command = resolve_command(argv)
    total = len(command.recipes)
    for n, recipe in enumerate(command.recipes, 1):
        if total > 1:
            print(f"== task {n}/{total}: {recipe} ==", file=sys.stderr, flush=True)
        args = command.argv(recipe)
        if command.gpus > 1:
            code = subprocess.run([*command.launcher(), *args]).returncode
            if code:
                return code
            continue
        print(train_recipe(args, callbacks), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main, sys.argv[1:]))
