"""MediTOD's own recipe keys (`MeditodArguments`) and what `meditod train -h` prints.

Kept apart from `train` (which imports torch, TRL and transformers: seconds to tens of seconds)
so that help answers at once. `-h` shows the MediTOD keys with the recipe's values (or their
defaults) and the recipe's other keys, in under a screen; `--help_all` adds every key of the
trainer's own dataclasses (TRL `SFTConfig` or `Seq2SeqTrainingArguments`, and `ModelConfig`).
"""

from __future__ import annotations

import dataclasses
import shutil
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from meditod_hub.data.tasks import MULTITASK, TASK_NAMES
from meditod_hub.models.families import FAMILY_NAMES

USAGE = "usage: meditod train MODEL [TASK] [--key=value ...]   (or a <recipe.yaml> for MODEL [TASK])"
HELP_FLAGS = ("-h", "--help", "--help_all", "--help-all")
RECIPES = Path("recipes")
RECIPE_TASKS = (*TASK_NAMES, MULTITASK)  # a recipes/ folder holds the three, or `multitask`


@dataclass
class MeditodArguments:
    """The MediTOD part of a recipe; the trainer's and TRL's dataclasses hold the rest."""

    task: str = field(metadata={"help": "nlu, pol, nlg, or multitask: one model trained on the "
                                        "three tasks' examples together",
                                "choices": [*TASK_NAMES, MULTITASK]})
    family: str = field(metadata={"help": "input/output format and trainer (meditod_hub.models.families)",
                                  "choices": list(FAMILY_NAMES)})
    model: str = field(metadata={"help": "recipe model name, e.g. llama3-8b (run_info.json)"})
    dataset_name: str = field(default="meditod",
                              metadata={"help": "built dataset folder or Hub dataset id"})
    dataset_train_split: str = "train"
    dataset_eval_split: str | None = field(default="validation",
                                           metadata={"help": "null: no evaluation"})
    max_source_length: int | None = field(
        default=None, metadata={"help": "encoder-decoders: encoder input budget in tokens "
                                        "(decoders use SFTConfig's max_length)"})
    max_new_tokens: int | None = field(default=None, metadata={
        "help": "generation budget at validation and prediction; BioGPT also reserves it in "
                "max_length (default: the family's, meditod_hub.models.families)"})
    effective_batch_size: int | None = field(default=None, metadata={
        "help": "if set, gradient_accumulation_steps = this / (per-device batch x processes)"})
    eval_max_examples: int | None = field(default=None, metadata={
        "help": "generate on only the first N validation rows (cheap CPU runs)"})
    overwrite_output_dir: bool = field(default=False, metadata={
        "help": "start over when output_dir holds checkpoints of another recipe, dataset or base "
                "model (they are deleted); without it such a resume is refused"})


def wants_help(argv: list[str]) -> bool:
    return any(arg in HELP_FLAGS for arg in argv)


def _yaml_value(value) -> str:
    return yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("\n...").strip()


def folder_tasks(folder: Path) -> list[str]:
    """The tasks a recipes/ folder has a recipe for, in order (none: not a recipes/ folder)."""
    return [task for task in RECIPE_TASKS if (folder / f"{task}.yaml").is_file()]


def recipe_models() -> dict[str, list[str]]:
    """Each recipes/ folder (a MODEL) and its tasks."""
    return {p.name: tasks for p in sorted(RECIPES.glob("*")) if (tasks := folder_tasks(p))}


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

    from meditod_hub.models.families import FAMILIES

    family = FAMILIES.get(family_name, FAMILIES["llama"])
    parser = TrlParser((family.trainer_arguments_class(), ModelConfig), prog="meditod train")
    return parser.format_help()
