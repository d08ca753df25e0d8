"""The run folder: what `meditod train` writes and predict, cards and publishing read.

    runs/<model>/<task>/
      run_info.json        model, task, family, base model, adapter?, token budget, counts,
                           versions, runtime
      recipe.yaml          the resolved recipe (every key the recipe or the command line set)
      adapter_model.safetensors | model.safetensors, config files, tokenizer
      checkpoints/         trainer checkpoints (never published)
      eval/<split>/        predictions.jsonl, results.json (+ .md, .png) for test and test_ood
                           (a multi-task run: eval/<split>/<task>/, one folder per task)
      published.json       where `meditod publish` put it
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import yaml

from meditod_hub.data.release import EVAL_SPLITS
from meditod_hub.data.tasks import MULTITASK, TASKS, Task, tasks_of, trained_tasks
from meditod_hub.data.tasks.task import json_kind
from meditod_hub.errors import MeditodError
from meditod_hub.files import atomic_write, read_json
from meditod_hub.models.families import FAMILIES, FAMILY_ALIASES, Budget, Family, get_family
from meditod_hub.models.records import Results, ResultsError

RUN_INFO, RECIPE, CHECKPOINTS, PUBLISHED = "run_info.json", "recipe.yaml", "checkpoints", "published.json"
# What a `meditod fewshot` output was (never a key): no training run behind it, so not RUN_INFO.
FEWSHOT_INFO = "fewshot_info.json"
# A run folder's files by kind, as glob patterns: what publish uploads, a Space copies and a
# served Hub model downloads (its run files and tokenizer, never its weights).
ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")
FULL_FILES = ("config.json", "generation_config.json", "model.safetensors", "model-*.safetensors",
              "model.safetensors.index.json")
TOKENIZER_FILES = ("tokenizer*", "special_tokens_map.json", "added_tokens.json",
                   "chat_template.jinja", "vocab.*", "merges.txt", "*.model")
RUN_FILES = (RECIPE, RUN_INFO)
REQUIRED_INFO = ("model", "task", "family", "base_model", "adapter")
# A published run's model card holds this YAML block, {model, task, run_id, merged[,
# constrained]}: what makes a Hub repo one of the kit's (publish, the results table).
CARD_KEY = "meditod"


def card_identity(card) -> dict | None:
    """A model card's `meditod` block, None for a foreign card (a huggingface_hub ModelCard)."""
    identity = card.data.to_dict().get(CARD_KEY)
    return identity if isinstance(identity, dict) else None


class RunError(MeditodError, ValueError):
    """A run folder that cannot be used; the message names the file."""


@dataclass
class Run:
    path: Path
    info: dict
    recipe_text: str
    results: dict[str, Results] = field(default_factory=dict)  # split -> eval/<split>/results.json
    # task -> split -> Results: every task's (a single-task run: {task: results})
    task_results: dict[str, dict[str, Results]] = field(default_factory=dict)

    @property
    def tasks(self) -> tuple[str, ...]:
        """The names of the tasks the run answers."""
        return run_tasks(self.info)

    @property
    def trained_tasks(self) -> tuple[Task, ...]:
        """The tasks the run answers, as Tasks (its run_info.json's task, resolved here)."""
        return trained_tasks(self.info["task"])

    @property
    def multitask(self) -> bool:
        return self.info["task"] == MULTITASK

    def eval_folder(self, split: str, task: str) -> str:
        """Where a task's evaluation of `split` sits, relative to the run (and in its repo)."""
        return f"eval/{split}/{task}" if self.multitask else f"eval/{split}"

    @property
    def model(self) -> str:
        return self.info["model"]

    @property
    def task(self) -> str:
        return self.info["task"]

    @property
    def family(self) -> Family:
        return get_family(self.info["family"])

    @property
    def family_label(self) -> str:
        return family_label(self.info)

    @property
    def recipe(self) -> dict:
        return yaml.safe_load(self.recipe_text) or {}

    def results_path(self, split: str, task: str | None = None) -> Path:
        return self.path / self.eval_folder(split, task or self.task) / "results.json"

    def chart(self, split: str, task: str | None = None) -> Path | None:
        path = self.results_path(split, task).with_suffix(".png")
        return path if path.is_file() else None


def eval_dir(run: Path, split: str) -> Path:
    return Path(run) / "eval" / split


def _text(value) -> bool:
    return isinstance(value, str)


def _count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _positive(value) -> bool:
    return _count(value) and value > 0


def _budget(value) -> bool:
    """A recorded `Budget`: its fields, each positive (`max_length` may be None: no fitting)."""
    names = [f.name for f in fields(Budget)]
    return isinstance(value, dict) and set(value) == set(names) and all(
        _positive(value[name]) or name == "max_length" and value[name] is None for name in names)


# A run's recipe.yaml keys its token budget comes from (`Family.budget` reads them)
RECIPE_BUDGET_KEYS = tuple(dict.fromkeys(
    [family.budget_key for family in FAMILIES.values()] + ["max_new_tokens"]))
# What each run_info.json key the kit reads must hold (`read_run_info`), as a message says it.
RUN_INFO_SHAPES = {
    **dict.fromkeys(("model", "task", "family", "recipe_family", "base_model", "dataset",
                     "hardware"), (_text, "a string")),
    "tasks": (lambda v: isinstance(v, list) and all(map(_text, v)), "a list of task names"),
    "adapter": (lambda v: isinstance(v, bool), "true or false"),
    "quantization": (lambda v: v is None or _text(v), "null or a string"),
    "budget": (_budget, "an object of max_length (a positive whole number or null) and "
                        "max_new_tokens (a positive whole number)"),
    **dict.fromkeys(("global_step", "seed", "train_examples", "truncated_examples",
                     "state_cut_examples", "skipped_examples"), (_count, "a whole number")),
    "train_runtime_s": (lambda v: isinstance(v, int | float) and not isinstance(v, bool),
                        "a number"),
    **dict.fromkeys(("provenance", "framework_versions"), (lambda v: isinstance(v, dict),
                                                           "an object")),
}


def read_run_info(path: Path) -> dict:
    """A run's run_info.json through the kit's one reader (`files.read_json`), each key the kit
    reads checked for its shape (`RUN_INFO_SHAPES`): a hand-edited or foreign file fails here in
    one line naming the key, never later inside a library. Fails as a `RunError`: callers tell
    an unusable run from other failures."""
    try:
        info = read_json(path, fix="is it a run of this kit?")
    except MeditodError as exc:
        raise RunError(str(exc)) from None
    for key, (fits, shape) in RUN_INFO_SHAPES.items():
        if key in info and not fits(info[key]):
            raise RunError(f"{path}: `{key}` must be {shape}, got {json_kind(info[key])}: is it "
                           "a run of this kit? (restore the file, or train the run again)")
    return info


def read_run(path: str | Path, require_results: bool = True) -> Run:
    """Read a run folder; refuse one without run_info, recipe or (by default) test results."""
    path = Path(path)
    info_file, recipe_file = path / RUN_INFO, path / RECIPE
    for needed in (info_file, recipe_file):
        if not needed.is_file():
            raise RunError(f"{needed}: missing; is {path} a finished training run?")
    info = read_run_info(info_file)
    missing = [key for key in REQUIRED_INFO if key not in info]
    if missing:
        raise RunError(f"{info_file}: missing keys {', '.join(missing)}")
    if info["task"] not in TASKS and info["task"] != MULTITASK:
        raise RunError(f"{info_file}: unknown task {info['task']!r}")
    run = Run(path, info, recipe_file.read_text(encoding="utf-8"))
    for task in run.tasks:
        for split in EVAL_SPLITS:
            results_path = run.results_path(split, task)
            if not results_path.is_file():
                continue
            try:
                results = Results.read(results_path)
            except ResultsError as exc:
                raise RunError(str(exc)) from None
            if results.task != task:
                raise RunError(f"{results_path}: {results.task} results where {task} results "
                               "belong; evaluate the run on its own task")
            run.task_results.setdefault(task, {})[split] = results
    run.results = {} if run.multitask else run.task_results.get(run.task, {})
    if require_results and not any("test" in r for r in run.task_results.values()):
        where = "eval/test/<task>/results.json" if run.multitask else "eval/test/results.json"
        raise RunError(f"{path}: no evaluation results ({where}); run `meditod "
                       "predict` and `meditod evaluate` on the test split first")
    return run


def run_settings(model_path: str | Path) -> tuple[dict, dict]:
    """run_info.json and recipe.yaml beside a model ({} for each when absent, e.g. a Hub id)."""
    path = Path(model_path)
    info = read_run_info(path / RUN_INFO) if (path / RUN_INFO).exists() else {}
    recipe = _read_recipe(path / RECIPE) if (path / RECIPE).exists() else {}
    for key in RECIPE_BUDGET_KEYS:  # what `run_budget` reads when run_info.json has no budget
        value = recipe.get(key)
        if value is not None and not _positive(value):
            raise RunError(f"{path / RECIPE}: `{key}` must be a positive whole number, got "
                           f"{json_kind(value)} {value!r}: restore the file, or train the run "
                           "again")
    return info, recipe


def _read_recipe(path: Path) -> dict:
    try:
        value = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError) as exc:
        raise RunError(f"{path}: cannot read ({type(exc).__name__}); is it a run of this kit?"
                       ) from None
    if not isinstance(value, dict | None):
        raise RunError(f"{path}: expected a YAML mapping of recipe settings")
    return value or {}


def budget_record(budget: Budget) -> dict:
    """run_info.json's `budget`: the token budget training resolved (`Family.budget`)."""
    return asdict(budget)


def family_label(info: dict) -> str:
    """How a run's family is shown: its registry name (`chat` for a run folder made when the
    chat family was called `llama`), else the recorded name."""
    recorded = str(info.get("family", ""))
    return FAMILY_ALIASES.get(recorded, recorded)


def run_budget(info: dict, recipe: dict, family: Family) -> Budget:
    """The token budget a model is run with: the one its training recorded in run_info.json.
    A run recorded before the budget was: its recipe's keys, then the family default (which is
    also what a model without run files gets)."""
    if "budget" in info:
        return Budget(**info["budget"])
    return family.budget(recipe)


def run_info_digest(folder: str | Path | None) -> str | None:
    """sha256 of a folder's run_info.json: which training run a model is (a cascade's results
    and a push compare it), without writing a local path anywhere."""
    info = Path(folder) / RUN_INFO if folder else None
    return hashlib.sha256(info.read_bytes()).hexdigest() if info and info.is_file() else None


def run_tasks(info: dict) -> tuple[str, ...]:
    """The tasks a run answers, from its run_info.json: one, or all three for a multi-task run
    (empty for a model without run_info.json: the caller names the task)."""
    return tasks_of(info["task"]) if "task" in info else ()


def write_run_files(path: str | Path, info: dict, recipe: dict) -> None:
    atomic_write(Path(path) / RECIPE, yaml.safe_dump(recipe, sort_keys=False))
    atomic_write(Path(path) / RUN_INFO, json.dumps(info, indent=2) + "\n")


def hub_id(name: str | None) -> str | None:
    """`name` if it reads as a Hub repo id rather than a local path (cards never show local paths)."""
    if name and re.fullmatch(r"[\w.-]+/[\w.-]+", name) and not Path(name).exists():
        return name
    return None


def base_label(name: str) -> str:
    """A model as a card or report may show it: its Hub id, or only the folder name of a local
    path."""
    return hub_id(name) or Path(name).name


DEFAULT_DATA = "meditod"  # where `meditod build` writes; the data of a model without a run


def run_of(path: str | Path) -> Path | None:
    """The run folder a file or folder sits in (its predictions, eval/<split>[/<task>]/...), or
    None outside any run."""
    path = Path(path).resolve()
    return next((p for p in [path, *path.parents][:5] if (p / RUN_INFO).is_file()), None)


def trained_data(model_path: str | Path | None) -> str | None:
    """The dataset a local run was trained on (its run_info's `dataset`); None for a Hub id, a
    bare model folder or an unreadable run_info."""
    run = run_of(model_path) if model_path and Path(model_path).exists() else None
    if run is None:
        return None
    try:
        dataset = read_json(run / RUN_INFO, fix="").get("dataset")
    except MeditodError:
        return None
    return dataset if isinstance(dataset, str) and dataset else None


def choose_data(given: str | None, trained: dict[str, str | None]) -> tuple[str, list[str]]:
    """`--data` for predict, evaluate, eval-cascade and chat: the given one, else the dataset the
    runs were trained on (`trained`: label -> `trained_data`), else `DEFAULT_DATA`; with the
    notes to print when the choice is not the runs' own."""
    own = {label: data for label, data in trained.items() if data}
    if given is None:
        data = next(iter(own.values()), DEFAULT_DATA)
        others = {label: d for label, d in own.items() if not _same(d, data)}
        notes = [f"{label} was trained on {d}, not on {data}" for label, d in others.items()]
        if own:
            return data, [f"data: {data} (what {next(iter(own))} was trained on)"] + notes
        return data, []
    return given, [f"data: {given}, but {label} was trained on {d} (scores on other data than a "
                   "run's own are not its test results)"
                   for label, d in own.items() if not _same(d, given)]


def _same(a: str, b: str) -> bool:
    return a == b or (Path(a).exists() and Path(b).exists() and Path(a).resolve() == Path(b).resolve())
