"""`meditod train`: recipes -> run folders through `models.train`, on one process or many.

    meditod train llama3-8b nlu                     # recipes/llama3-8b/nlu.yaml -> runs/llama3-8b/nlu
    meditod train tiny-llama                        # nlu, pol and nlg in turn
    meditod train llama3-8b-multitask               # recipes/llama3-8b-multitask/multitask.yaml
    meditod train flan-t5-base nlu --gpus 2         # accelerate launch, recipes/accelerate/ddp.yaml
    meditod train recipes/tiny-llama/nlu.yaml --num_train_epochs=2 --output_dir=runs/x
    torchrun --nproc_per_node 2 -m meditod_hub.commands.train recipes/...   # CPU: gloo

This module is the one that reads `meditod train`'s command line; `cli` only asks it whether a
line is answered by help, and `models.recipes` gets what was read (a recipe path, its settings,
the keys and values given as flags), never the line itself. In order:

1. help (`answer_help`, `main`): `-h`, `--help`, `--help_all`, or `meditod train` alone (then on
   stderr, a usage error). `help_recipe` finds the recipe `MODEL [TASK]` or a path names, and
   `recipes.recipe_help` shows its keys without importing torch; `--help_all` adds every trainer
   key (TRL's parser, which imports torch).
2. `resolve_command`: the command's own flags, `recipes.LaunchArguments` (`--gpus`,
   `--accelerate_config`, `--out`), by `arguments.parse_known_args`; then `recipe_paths`:
   `MODEL [TASK]` names a folder of `recipes/` (all its tasks without TASK) or a recipe path, and
   the rest are recipe keys given as `--key=value` (the overrides).
3. Each recipe in turn gets `<recipe.yaml> [--output_dir=OUT/TASK] [overrides]`
   (`TrainCommand.argv`), trained here (`train_recipe`) or, with `--gpus N`, in N processes under
   `accelerate launch`, each running this module as `__main__`.
4. `parse_recipe`: the recipe's keys, then the overrides, by TRL's `TrlParser`
   (`arguments.parse_config`) into a `models.recipes.Recipe`; the checks of `models.recipes` (the
   upload keys, infinities, number ranges) are given the keys and values the flags hold
   (`arguments.flag_names`, `flag_value`).
"""

from __future__ import annotations

import dataclasses
import logging
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from meditod_hub import quiet
from meditod_hub.arguments import config_help, flag_names, parse_config, parse_known_args
from meditod_hub.errors import EXIT_OK, EXIT_USAGE, UsageError, run_main
from meditod_hub.models import pretrained, recipes
from meditod_hub.models.families import FAMILIES, get_family

HELP_FLAGS = ("-h", "--help", "--help_all", "--help-all")


# --- the command line: help, MODEL [TASK] or a recipe path, flags -------------------------------
def wants_help(argv: list[str]) -> bool:
    return any(arg in HELP_FLAGS for arg in argv)


def answer_help(argv: list[str]) -> int | None:
    """`meditod train` alone (the help on stderr: a usage error) or with a help flag (on stdout),
    answered before any recipe is parsed (torch only for --help_all): the exit code; None for a
    line that trains."""
    if argv and not wants_help(argv):
        return None
    print(train_help(argv), file=sys.stdout if argv else sys.stderr)
    return EXIT_OK if argv else EXIT_USAGE


def help_recipe(argv: list[str]) -> Path | None:
    """The recipe a help line's `MODEL [TASK]` or `<recipe.yaml>` names (MODEL alone: its first
    task's); None when it names none."""
    if not argv or argv[0].startswith("-"):
        return None
    path = Path(argv[0])
    if path.is_file():
        return path
    folder = path if recipes.folder_tasks(path) else recipes.RECIPES / argv[0]
    tasks = recipes.folder_tasks(folder)
    if not tasks:
        return path
    task = argv[1] if len(argv) > 1 and argv[1] in tasks else tasks[0]
    return folder / f"{task}.yaml"


def train_help(argv: list[str]) -> str:
    """`meditod train [MODEL [TASK] | <recipe.yaml>] -h`; `--help_all` adds every trainer key (of
    the named recipe's family; chat without one)."""
    path = help_recipe(argv)
    recipe = recipes.readable_recipe(path)
    text = recipes.recipe_help(path, recipe)
    if not ("--help_all" in argv or "--help-all" in argv):
        return text
    from trl import ModelConfig  # deferred: TRL imports torch; only --help_all needs it

    family = FAMILIES.get(str(recipe.get("family", "chat")), FAMILIES["chat"])
    return text + "\n\n" + config_help(
        (family.trainer_arguments_class(), ModelConfig), "meditod train")


def recipe_paths(argv: list[str]) -> tuple[list[Path], list[str]]:
    """`MODEL [TASK] [--key=value ...]` (a recipes/ folder and one of its tasks; all its tasks
    without one) or a recipe path -> the recipes to train in turn, and the overrides after."""
    if not argv or argv[0].startswith("-"):
        raise UsageError("give MODEL [TASK] (a recipes/ folder and one of its tasks) or a "
                         "<recipe.yaml>: meditod train -h lists them")
    target, rest = argv[0], argv[1:]
    path = Path(target)
    folder = path if recipes.folder_tasks(path) else recipes.RECIPES / target  # recipes/MODEL too
    if path.suffix in (".yaml", ".yml") or path.is_file():
        return [path], rest
    if not folder.is_dir():
        raise UsageError(f"no recipe or model {target!r}: give a recipes/ folder "
                         f"({', '.join(recipes.recipe_models())}) or a recipe .yaml")
    tasks = recipes.folder_tasks(folder)
    if rest and not rest[0].startswith("-"):
        if rest[0] not in tasks:
            raise UsageError(f"no task {rest[0]!r} in {folder}: give one of {', '.join(tasks)}, "
                             "or none to train " + ("all three in turn" if len(tasks) > 1 else "it"))
        tasks, rest = [rest[0]], rest[1:]
    return [folder / f"{task}.yaml" for task in tasks], rest


def flag_value(argv: list[str], key: str) -> str | None:
    """The value of `--key` in `argv` (`--key-name` spelling too), None when absent."""
    for name in dict.fromkeys([key, key.replace("_", "-")]):
        for i, arg in enumerate(argv):
            if arg.startswith(f"--{name}="):
                return arg.split("=", 1)[1]
            if arg == f"--{name}" and i + 1 < len(argv):
                return argv[i + 1]
    return None


# --- one recipe: its keys, then the overrides -> models.recipes.Recipe --------------------------
def parse_recipe(argv: list[str]) -> recipes.Recipe:
    """`<recipe.yaml> [--key=value ...]` -> the three dataclasses (TrlParser: YAML, then CLI)."""
    import torch  # deferred: torch and TRL load only to parse a recipe, never for -h
    from trl import ModelConfig

    path, overrides = Path(argv[0]), list(argv[1:])
    config = recipes.read_recipe(path)
    cli_keys = flag_names(overrides)
    recipes.refuse_publishing(str(path), list(config))
    recipes.refuse_publishing("a flag", cli_keys)
    family = get_family(flag_value(overrides, "family") or config.get("family") or "(missing)")
    flags = {key: text for key in set(cli_keys) if (text := flag_value(overrides, key)) is not None}

    def check_finite(types: dict) -> None:
        recipes.check_finite(path, config, types)
        recipes.check_finite_flags(flags, types)

    # Without CUDA, TrainingArguments must be told so at construction: it then runs several
    # processes as gloo DDP (otherwise each trains alone) and accepts bf16 recipes.
    device = [] if torch.cuda.is_available() else ["--use_cpu=true"]
    script, training, model = parse_config(
        (recipes.MeditodArguments, family.trainer_arguments_class(), ModelConfig), path, config,
        [*device, *overrides], "meditod train", check=check_finite)
    values = {**dataclasses.asdict(model), **training.to_dict(), **dataclasses.asdict(script)}
    recipes.check_numbers(path, values, cli_keys)
    resolved = {k: values[k] for k in dict.fromkeys([*config, *cli_keys]) if k in values}
    return recipes.Recipe(path, script, training, model, resolved)


# --- the recipes in turn, in this process or under accelerate launch ---------------------------
@dataclass
class TrainCommand:
    """What `meditod train ...` asked for: the recipes in turn, and how to launch each."""

    recipes: list[Path]
    overrides: list[str]
    launch: recipes.LaunchArguments

    def argv(self, recipe: Path) -> list[str]:
        """The arguments `parse_recipe` gets for one recipe."""
        task = (flag_value(self.overrides, "task") or recipes.read_recipe(recipe).get("task")
                or recipe.stem)
        out = [f"--output_dir={self.launch.out / task}"] if self.launch.out else []
        return [str(recipe), *out, *self.overrides]

    def launcher(self) -> list[str]:
        """The process command that runs one recipe: this Python, or `accelerate launch`."""
        if self.launch.gpus <= 1:
            return [sys.executable, "-m", "meditod_hub.commands.train"]
        return [sys.executable, "-m", "accelerate.commands.launch", "--config_file",
                str(self.launch.accelerate_config), "--num_processes", str(self.launch.gpus),
                "-m", "meditod_hub.commands.train"]


def resolve_command(argv: list[str]) -> TrainCommand:
    """`MODEL [TASK] | recipe.yaml` + `LaunchArguments` flags + recipe overrides."""
    (launch,), rest = parse_known_args((recipes.LaunchArguments,), argv, "meditod train", "")
    return TrainCommand(*recipe_paths(rest), launch)


def train_recipe(argv: list[str], callbacks=()) -> str:
    """Train one recipe (`<recipe.yaml> [--key=value ...]`); returns its one-line summary."""
    from meditod_hub.models import train  # deferred: torch (see parse_recipe)

    recipe = parse_recipe(argv)
    train.ensure_tiny_base(recipe.model, recipe.script.dataset_name)
    pretrained.ensure_recipe_base(recipe.model.model_name_or_path)
    info = train.run(recipe, callbacks)
    return (f"{info['model']}/{info['task']}: {info['global_step']} steps on "
            f"{info['train_examples']} examples ({info['truncated_examples']} cut to fit, "
            f"{info['skipped_examples']} skipped) -> {recipe.training.output_dir}")


def main(argv: list[str], callbacks=()) -> int:
    if wants_help(argv):
        print(train_help(argv))
        return 0
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
        if command.launch.gpus > 1:
            code = subprocess.run([*command.launcher(), *args]).returncode
            if code:
                return code
            continue
        print(train_recipe(args, callbacks), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main, sys.argv[1:]))
