"""What run_info.json records of a finished training run: the recipe's model, task and base, the
steps and wall-clock, the hardware and library versions it ran on, the fitted examples' counts,
the data it read (`proof.record`), the seed and the token budget every reader takes.

Apart from `train` because it is the record of a run, which `runs` reads back (and cards,
publishing and results after it), not a step of the training.
"""

from __future__ import annotations

import os
import platform

import datasets
import peft
import torch
import transformers
import trl

from meditod_hub.data import proof
from meditod_hub.data.tasks import tasks_of
from meditod_hub.models.encoding import Encoded
from meditod_hub.models.families import Budget
from meditod_hub.models.recipes import Recipe
from meditod_hub.models.runs import budget_record


def run_info(recipe: Recipe, budget: Budget, train: Encoded, global_step: int,
             runtime_s: float) -> dict:
    """run_info.json of a run of `recipe` that took `global_step` steps and `runtime_s` seconds
    (every segment of a resumed run) on the fitted examples `train`."""
    script, model, training = recipe.script, recipe.model, recipe.training
    return {
        "model": script.model, "task": script.task, "tasks": list(tasks_of(script.task)),
        "family": recipe.family.name,
        "base_model": model.model_name_or_path, "adapter": model.use_peft,
        "quantization": model.bnb_4bit_quant_type if model.load_in_4bit else None,
        "global_step": global_step,
        "train_runtime_s": round(runtime_s, 2),
        "hardware": hardware(training.world_size), "framework_versions": framework_versions(),
        "train_examples": len(train.dataset), "truncated_examples": train.truncated,
        "state_cut_examples": train.state_cut, "skipped_examples": len(train.skipped),
        **proof.record(script.dataset_name),
        "seed": training.seed, "budget": budget_record(budget),
    }


def hardware(world_size: int) -> str:
    device = (torch.cuda.get_device_name() if torch.cuda.is_available()
              else f"CPU ({platform.processor() or platform.machine()}, {os.cpu_count()} cores)")
    return f"{world_size} x {device}"


def framework_versions() -> dict:
    return {m.__name__: m.__version__ for m in (torch, transformers, trl, peft, datasets)}
