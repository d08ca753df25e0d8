"""MediTOD's own recipe keys (`MeditodArguments`) and the recipes/ folders (`MODEL` of `meditod
train MODEL [TASK]`).

Kept apart from `train` (which imports torch, TRL and transformers: seconds to tens of seconds)
so that `meditod train -h` (`commands.train.train_help`) answers at once from them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from meditod_hub.data.tasks import MULTITASK, TASK_NAMES
from meditod_hub.models.families import FAMILY_NAMES

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


def folder_tasks(folder: Path) -> list[str]:
    """The tasks a recipes/ folder has a recipe for, in order (none: not a recipes/ folder)."""
    return [task for task in RECIPE_TASKS if (folder / f"{task}.yaml").is_file()]


def recipe_models() -> dict[str, list[str]]:
    """Each recipes/ folder (a MODEL) and its tasks."""
    return {p.name: tasks for p in sorted(RECIPES.glob("*")) if (tasks := folder_tasks(p))}


class _RecipeLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice in one mapping (plain YAML keeps the last
    silently: a recipe's second `learning_rate:` would win unseen)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {key!r} is given twice", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


def load_recipe_yaml(text: str):
    """A recipe's YAML, as `yaml.safe_load` reads it, but with no key given twice."""
    return yaml.load(text, Loader=_RecipeLoader)  # noqa: S506 - a SafeLoader
