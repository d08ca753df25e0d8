"""The MediTOD tasks, one module each (`nlu.py`, `pol.py`, `nlg.py`), registered here in cascade
order. A task module owns everything its task means (see `task.Task`): its view and features,
its label's shape, its wording, its scorer and metrics, its cascade step, how the span grammar
writes its columns (`spans`), its CMAS language (`language`), its few-shot definitions
(`fewshot`), its release check and agreement rules. Nothing else branches on a task's name or
keeps a table by a task, its columns or its speaker (tests/test_task_tables.py counts them):
callers take a `Task` (from `get_task` where a name comes in) and read its fields, or loop over
`TASKS`. A task module plus its line in the registry's loop is a new task; `register` also adds one
later (a test's toy task). The tuples and tables derived from the registry (`TASK_NAMES`,
`CONFIGS`, `FEATURES`, `LABELLING_TASKS`, ...) read it at each use, so they hold a task registered
after import too.

A task's label is what its models predict: NLU item lists (`nlu` column), doctor action lists
(`actions`) or the doctor's text (`response`). Predictions handed to `Task.score` are labels
aligned with the gold rows; None marks one that did not parse (scored as empty, counted as a
parse failure). Metrics are in docs/format.md ("Metrics") and `meditod_hub.data.metrics`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

from meditod_hub.data import views
from meditod_hub.data.tasks import nlg, nlu, pol
from meditod_hub.data.tasks.task import Input, Metric, ParseResult, SpanColumn, Task
from meditod_hub.errors import UsageError

__all__ = ["CASCADED_TASKS", "CASCADED_TASK_NAMES", "CONFIGS", "FEATURES", "Input",
           "LABELLED_TASKS", "LABELLED_TASK_NAMES", "LABELLING_TASKS", "MULTITASK", "Metric",
           "ParseResult", "SpanColumn", "TASKS", "TASK_NAMES", "Task", "as_task",
           "dialogue_views", "features", "get_task", "register", "tasks_of", "trained_tasks",
           "view_rows"]

TASKS: dict[str, Task] = {}


def register(task: Task) -> Task:
    """Add a task to the registry (after the tasks it names as upstream): views, formats,
    scoring and the cascade then take it by its name like the paper's three."""
    if task.upstream is not None and task.upstream not in TASKS:
        raise ValueError(f"task {task.name!r}: register its upstream {task.upstream!r} first")
    TASKS[task.name] = task
    return task


for _module in (nlu, pol, nlg):
    register(_module.TASK)


class _Read:
    """A value derived from the registry, read from it at each use."""

    def __init__(self, read: Callable[[], tuple | dict]):
        self._read = read

    def __getitem__(self, key):
        return self._read()[key]

    def __len__(self) -> int:
        return len(self._read())

    def __repr__(self) -> str:
        return repr(self._read())


class _Derived(_Read, Sequence):
    """A tuple derived from the registry."""


class _DerivedTable(_Read, Mapping):
    """A table derived from the registry."""

    def __iter__(self) -> Iterator:
        return iter(self._read())


TASK_NAMES = _Derived(lambda: tuple(TASKS))
# The tasks whose labels are the release's annotations (NLU, POL), and those that read an upstream
# task's labels (POL, NLG)
LABELLED_TASKS = _Derived(lambda: tuple(task for task in TASKS.values() if task.annotated))
CASCADED_TASKS = _Derived(lambda: tuple(task for task in TASKS.values() if task.upstream))
LABELLED_TASK_NAMES = _Derived(lambda: tuple(task.name for task in LABELLED_TASKS))
CASCADED_TASK_NAMES = _Derived(lambda: tuple(task.name for task in CASCADED_TASKS))
# A recipe's `task: multitask` trains one model on every task's examples together (the chat
# format tells them apart by their system message); it is not a task of its own.
MULTITASK = "multitask"
# speaker -> the task whose label that speaker's release utterances carry (patient: NLU, doctor:
# POL), under the task's target column
LABELLING_TASKS = _DerivedTable(lambda: {task.speaker: task for task in LABELLED_TASKS})

# The dataset's configs: the dialogues themselves, then one per task, with their columns.
DIALOGUES = "dialogues"
CONFIGS = _Derived(lambda: (DIALOGUES, *TASKS))
FEATURES = _DerivedTable(lambda: {DIALOGUES: views.DIALOGUE_FEATURES,
                                  **{task.name: task.features for task in TASKS.values()}})


def tasks_of(recipe_task: str) -> tuple[str, ...]:
    """The names of the tasks a recipe's (or run's) `task` trains: every task for `multitask`."""
    return tuple(task.name for task in trained_tasks(recipe_task))


def trained_tasks(recipe_task: str) -> tuple[Task, ...]:
    """The tasks a recipe's (or run's) `task` trains, as Tasks: every task for `multitask`."""
    return tuple(TASKS.values()) if recipe_task == MULTITASK else (get_task(recipe_task),)


def get_task(name: str) -> Task:
    """The task named `name`: called where a name comes in (a command's flag, a recipe, a
    results file, a public entry point); the task is passed on as this object."""
    try:
        return TASKS[name]
    except KeyError:
        raise UsageError(f"unknown task {name!r}: choose one of {', '.join(TASKS)}") from None


def as_task(task: Task | str) -> Task:
    """A public entry point that also takes a task's name (callers outside the kit, such as
    the harness exporters and tests, pass names): a Task passes through untouched."""
    return task if isinstance(task, Task) else get_task(task)


def features(config: str):
    """The `datasets.Features` of one config."""
    # deferred: `datasets` loads only when a caller asks for Features, not with the registry
    from datasets import Features

    return Features.from_dict(FEATURES[config] if config == DIALOGUES else get_task(config).features)


def view_rows(config: str, dialogue_id: str, dialogue: dict) -> list[dict]:
    """Rows of `config` (a task's name or `dialogues`) for one dialogue."""
    if config == DIALOGUES:
        return [views.to_dialogue(dialogue_id, dialogue)]
    return get_task(config).view(dialogue_id, dialogue["utterances"])


def dialogue_views(dialogue_id: str, dialogue: dict) -> dict[str, list[dict]]:
    """The rows of every config for one dialogue (what the build writes)."""
    return {config: view_rows(config, dialogue_id, dialogue) for config in CONFIGS}
