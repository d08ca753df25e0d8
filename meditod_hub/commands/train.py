"""`meditod train`: recipes -> run folders through `models.train`, on one process or many.

    meditod train llama3-8b nlu                     # recipes/llama3-8b/nlu.yaml -> runs/llama3-8b/nlu
    meditod train tiny-llama                        # nlu, pol and nlg in turn
    meditod train llama3-8b-multitask               # recipes/llama3-8b-multitask/multitask.yaml
    meditod train flan-t5-base nlu --gpus 2         # accelerate launch, recipes/accelerate/ddp.yaml
    meditod train recipes/tiny-llama/nlu.yaml --num_train_epochs=2 --output_dir=runs/x
    torchrun --nproc_per_node 2 -m meditod_hub.commands.train recipes/...   # CPU: gloo

`MODEL [TASK]` names a folder of `recipes/` (all its tasks without TASK) or a recipe path; the
command's own flags are `recipes.LaunchArguments` (`--gpus`, `--accelerate_config`, `--out`), the
rest recipe keys, parsed with the recipe by TRL's `TrlParser` (`arguments.parse_config`) into a
`models.train.Recipe`. `-h` needs no torch (`recipes.recipe_help`); `--help_all` adds every
trainer key.
"""

from __future__ import annotations

import dataclasses
import logging
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from meditod_hub import quiet
from meditod_hub.arguments import config_help, flag_names, flag_value, parse_config, parse_known_args
from meditod_hub.errors import run_main
from meditod_hub.models import pretrained, recipes
from meditod_hub.models.families import FAMILIES, get_family

if TYPE_CHECKING:
    from meditod_hub.models.train import Recipe

HELP_FLAGS = ("-h", "--help", "--help_all", "--help-all")


def wants_help(argv: list[str]) -> bool:
    return any(arg in HELP_FLAGS for arg in argv)


def train_help(argv: list[str]) -> str:
    """`meditod train [MODEL [TASK] | <recipe.yaml>] -h`; `--help_all` adds every trainer key."""
    if not ("--help_all" in argv or "--help-all" in argv):
        return recipes.recipe_help(argv)
    from trl import ModelConfig  # deferred: TRL imports torch; only --help_all needs it

    family = FAMILIES.get(recipes.help_recipe_family(argv), FAMILIES["chat"])
    return recipes.recipe_help(argv) + "\n\n" + config_help(
        (family.trainer_arguments_class(), ModelConfig), "meditod train")


def parse_recipe(argv: list[str]) -> Recipe:
    """`<recipe.yaml> [--key=value ...]` -> the three dataclasses (TrlParser: YAML, then CLI)."""
    import torch  # deferred: torch, TRL and the trainer load only to parse a recipe, never for -h
    from trl import ModelConfig

    from meditod_hub.models.train import Recipe

    path, overrides = Path(argv[0]), list(argv[1:])
    config = recipes.read_recipe(path)
    recipes.refuse_publishing(path, config, overrides)
    family = get_family(flag_value(overrides, "family") or config.get("family") or "(missing)")
    # Without CUDA, TrainingArguments must be told so at construction: it then runs several
    # processes as gloo DDP (otherwise each trains alone) and accepts bf16 recipes.
    device = [] if torch.cuda.is_available() else ["--use_cpu=true"]
    script, training, model = parse_config(
        (recipes.MeditodArguments, family.trainer_arguments_class(), ModelConfig), path, config,
        [*device, *overrides], "meditod train",
        check=lambda types: recipes.check_finite(path, config, overrides, types))
    values = {**dataclasses.asdict(model), **training.to_dict(), **dataclasses.asdict(script)}
    cli_keys = flag_names(overrides)
    recipes.check_numbers(path, values, cli_keys)
    resolved = {k: values[k] for k in dict.fromkeys([*config, *cli_keys]) if k in values}
    return Recipe(path, script, training, model, resolved)


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
    return TrainCommand(*recipes.recipe_paths(rest), launch)


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
