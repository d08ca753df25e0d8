"""The recipes: MediTOD's own recipe keys (`MeditodArguments`) and `meditod train`'s launch keys
(`LaunchArguments`), the recipes/ folders (`MODEL` of `meditod train MODEL [TASK]`), reading a
recipe file, a parsed recipe (`Recipe`: what `train.run` trains), the settings no run may have
(the trainer's upload keys, `PUBLISHING_KEYS`; the numbers no run can train with,
`NUMBER_RULES`), and the help text `meditod train -h` shows for a recipe (`recipe_help`).

Nothing here reads a command line: `commands.train` parses `meditod train`'s (MODEL [TASK], the
launch flags, the `--key=value` overrides, -h) and hands these functions what it found: a recipe
path, its settings, the keys and values given as flags. Kept apart from `train` (which imports
torch, TRL and transformers: seconds to tens of seconds) so that `meditod train -h` answers at
once from here. Parsing a recipe's keys into the trainer's dataclasses is TRL's `TrlParser`
(`arguments.parse_config`, called by `commands.train`).
"""

from __future__ import annotations

import dataclasses
import math
import shutil
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from meditod_hub.data.tasks import MULTITASK, TASK_NAMES
from meditod_hub.errors import UsageError
from meditod_hub.models.families import FAMILY_NAMES, Budget, Family, get_family

RECIPES = Path("recipes")
RECIPE_TASKS = (*TASK_NAMES, MULTITASK)  # a recipes/ folder holds the three, or `multitask`
DEFAULT_ACCELERATE_CONFIG = RECIPES / "accelerate" / "ddp.yaml"
USAGE = "usage: meditod train MODEL [TASK] [--key=value ...]   (or a <recipe.yaml> for MODEL [TASK])"


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


@dataclass
class LaunchArguments:
    """`meditod train`'s own flags, beside the recipe keys: how many processes, and where."""

    gpus: int = field(default=1, metadata={
        "help": "processes; above 1, the command relaunches under `accelerate launch`", "min": 1})
    accelerate_config: Path = field(default=DEFAULT_ACCELERATE_CONFIG, metadata={
        "help": "accelerate config for --gpus N (the FSDP and ZeRO-3 ones in recipes/accelerate "
                "shard)"})
    out: Path | None = field(default=None, metadata={
        "help": "put the run folders at OUT/<task> (default: each recipe's output_dir)"})

    def __post_init__(self):
        if self.gpus > 1 and not self.accelerate_config.is_file():
            configs = ", ".join(map(str, sorted((RECIPES / "accelerate").glob("*.yaml"))))
            raise UsageError(f"no accelerate config {self.accelerate_config}: give "
                             f"--accelerate_config, one of {configs}")


@dataclass
class Recipe:
    """A recipe parsed into the trainer's dataclasses (`commands.train.parse_recipe`)."""

    path: Path
    script: MeditodArguments
    training: object  # SFTConfig or Seq2SeqTrainingArguments
    model: object     # trl.ModelConfig
    resolved: dict    # the recipe's keys and every overridden key, with their final values

    @property
    def family(self) -> Family:
        return get_family(self.script.family)

    @property
    def budget(self) -> Budget:
        """The token budget, resolved once from the keys the recipe and command line set (never
        a trainer default) and recorded in run_info.json, where every reader takes it from."""
        return self.family.budget(self.resolved)


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


def read_recipe(path: Path) -> dict:
    """A recipe file's settings; a missing, unreadable or non-mapping file is a one-line error."""
    if not path.is_file():
        models = ", ".join(recipe_models())
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


# --- nothing publishes outside `meditod publish` ----------------------------------------------------
# The trainer's own upload (push_to_hub, hub_*) would create a public repo and upload the weights
# and training_args.bin (a pickle holding hub_token) past every check of `publish`: the secret
# scan, the card, the private default.
PUBLISHING_KEYS = ("push_to_hub", "hub_", "push_to_hub_")


def refuse_publishing(where: str, keys: list[str]) -> None:
    """Refuse the trainer's upload settings among `keys` (a recipe's, or the flags'), whatever
    their value; `where` names them in the error (the recipe's path, or "a flag")."""
    found = [key for key in keys if key.startswith(PUBLISHING_KEYS)]
    if found:
        raise UsageError(f"{where}: {', '.join(sorted(found))}: training never uploads; "
                         "remove it, and publish the trained, evaluated run with `meditod "
                         "publish --run RUN --repo ORG/NAME` (private unless --public)")


# --- numbers no run can train with ---------------------------------------------------------------
# Numbers no run can train with, which TRL and transformers take silently (a zero batch fails
# minutes later, an infinite learning rate trains NaN): key -> (allowed?, the allowed range).
# None (unset) is always allowed.
NUMBER_RULES = {
    # below 1e-8 no weight moves in float32 or bf16 (1e-300 trained nothing, silently)
    "learning_rate": (lambda v: math.isfinite(v) and 1e-8 <= v <= 1, "a finite number from 1e-8 "
                                                                     "to 1"),
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


def _infinite(value) -> bool:
    try:
        return not math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def _checked_later(key: str) -> bool:
    """`check_numbers` refuses its infinities: NUMBER_RULES says its finite range."""
    return key in NUMBER_RULES and "finite" in NUMBER_RULES[key][1]


def check_finite(path: Path, config: dict, types: dict) -> None:
    """Refuse NaN and infinity (1e309 reads as infinity) in any setting of the recipe `config`
    (read from `path`) that is not text, before the parser turns one into an int (OverflowError)
    or a run trains on it; `types`: each key's type as the parser converts it."""
    for key, value in config.items():
        if _checked_later(key):
            continue
        if not isinstance(value, bool) and isinstance(value, (int, float, str)) \
                and (isinstance(value, float) or types.get(key) is not str) and _infinite(value):
            raise UsageError(f"{path}: {key}: {value}: must be a finite number")


def check_finite_flags(flags: dict[str, str], types: dict) -> None:
    """As `check_finite`, for the settings given as flags: `flags` maps each key to the text
    given for it (`--key=text`)."""
    for key, text in flags.items():
        if types.get(key) is not str and not _checked_later(key) and _infinite(text):
            raise UsageError(f"--{key}={text}: must be a finite number")


def check_numbers(path: Path, values: dict, cli_keys: list[str]) -> None:
    """Refuse a numeric setting outside `NUMBER_RULES` before any work, naming where it was set
    (`cli_keys`: the keys given as flags; the others come from the recipe at `path`)."""
    for key, (allowed, range_) in NUMBER_RULES.items():
        value = values.get(key)
        if value is None or (key == "num_train_epochs" and values.get("max_steps", -1) >= 1
                             and not isinstance(value, bool)):
            continue  # unset, or epochs that max_steps overrides (a boolean is still refused)
        if isinstance(value, bool) or not (math.isfinite(value) and allowed(value)):
            where = f"--{key}={value}" if key in cli_keys else f"{path}: {key}: {value}"
            raise UsageError(f"{where}: must be {range_}")


# --- -h: the MediTOD keys and a recipe's values, without torch ------------------------------------
def _yaml_value(value) -> str:
    return yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("\n...").strip()


def readable_recipe(path: Path | None) -> dict:
    """The settings of the recipe a help line names, or {} when it names none or an unreadable one
    (-h answers whatever it is given; training reads the recipe with `read_recipe`)."""
    if path is None or not path.is_file():
        return {}
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError, OSError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def recipe_help(recipe_path: Path | None, recipe: dict) -> str:
    """The help for `meditod train [MODEL [TASK] | <recipe.yaml>] -h`, under a screen: of the
    recipe `recipe_path` names (None: none named), whose settings are `recipe` (`readable_recipe`)."""
    width = max(shutil.get_terminal_size((100, 24)).columns, 100)
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
    lines += ["", "--gpus N relaunches under accelerate (--accelerate_config FILE, default "
                  f"{DEFAULT_ACCELERATE_CONFIG}); --out DIR puts the run folders at DIR/TASK.",
              "--help_all lists every trainer key (TRL SFTConfig or Seq2SeqTrainingArguments, "
              "and ModelConfig: LoRA, 4-bit)."]
    return "\n".join(lines)
