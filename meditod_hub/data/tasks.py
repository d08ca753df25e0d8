"""The three MediTOD tasks, each spelled once: whose utterance it reads, its target column (the
release's label key for NLU and POL), the key every label item carries, where it sits in the
cascade, its headline, model-index and chart metrics, and the one `score` that `meditod evaluate`,
the local `evaluate` modules, training-time validation and the model cards all go through.
Nothing else branches on a task's name: code that depends on a label's shape keys its tables by
the label's column (`nlu` items, `actions`, the `response` text), and what a task reads beside
the dialogue by its `input_column` (`state`, `actions`). A format renders columns; the task says
which ones. Per-task wording (system messages, prefixes) is a format's table keyed by task name.

A task's label is what its models predict: NLU item lists (`nlu` column), doctor action lists
(`actions`) or the doctor's text (`response`). Predictions handed to `score` are labels aligned
with the gold rows; None marks one that did not parse (scored as empty, counted as a parse
failure). Metrics are in docs/format.md ("Metrics") and `meditod_hub.data.metrics`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from meditod_hub.data import views
from meditod_hub.data.metrics import nlg_scores, nlu_f1, pol_f1, pol_precision_at_k
from meditod_hub.errors import UsageError


@dataclass(frozen=True)
class Metric:
    """One reported number: where it sits in results.json and how cards show it."""

    key: str    # path in results.json, nested keys joined with dots
    type: str   # model-index metric id
    name: str   # what a results table calls it
    fmt: str = ".4f"


_F1 = tuple(Metric(f"{prefix}{stat}", stat, f"{label} {stat_name}")
            for prefix, label in (("", "Overall"), ("medical.", "Medical"),
                                  ("non_medical.", "Non-medical"))
            for stat, stat_name in (("precision", "precision"), ("recall", "recall"), ("f1", "F1")))
_JOINT = Metric("joint_accuracy", "accuracy", "Joint accuracy")
_PAK = tuple(Metric(f"precision_at_k.{k}", "precision_at_k", f"P@{k}") for k in ("1", "4", "8", "inf"))
_NLG = (Metric("bleu2", "bleu", "BLEU-2 (NLTK, x100)", ".2f"),
        Metric("bleu4", "bleu", "BLEU-4 (NLTK, x100)", ".2f"),
        Metric("rouge1", "rouge", "ROUGE-1"), Metric("rougeL", "rouge", "ROUGE-L"),
        Metric("sacrebleu.score", "sacrebleu", "sacreBLEU", ".2f"),
        Metric("bertscore.f1", "bertscore", "BERTScore F1"))


# How each task scores its labels (gold labels, predictions, gold rows, the options of
# `Task.score`): a field of the task, so nothing here or elsewhere asks which task it is.
def _score_nlu(gold: list, predictions: Sequence, gold_rows: Sequence[dict], *, judge,
               **_options) -> dict:
    return nlu_f1(gold, predictions, judge, ids=[row["id"] for row in gold_rows]).as_dict()


def _score_pol(gold: list, predictions: Sequence, gold_rows: Sequence[dict], *, judge,
               pak_mode: str, **_options) -> dict:
    results = pol_f1(gold, predictions, judge, ids=[row["id"] for row in gold_rows]).as_dict()
    results["precision_at_k"] = pol_precision_at_k(
        gold, predictions, [row["dialogue_id"] for row in gold_rows], mode=pak_mode)
    results["precision_at_k_mode"] = pak_mode
    return results


def _score_nlg(gold: list, predictions: Sequence, gold_rows: Sequence[dict], *,
               bertscore_model: str | None, bertscore_layer: int | None, seed: int,
               **_options) -> dict:
    texts = [p if isinstance(p, str) else "" for p in predictions]
    return {**nlg_scores(texts, gold, bertscore_model, bertscore_layer, seed),
            "examples": len(gold),
            "parse_failures": sum(not isinstance(p, str) for p in predictions)}


@dataclass(frozen=True)
class Task:
    name: str
    speaker: str              # whose utterance the task predicts (a release utterance's speaker)
    target_column: str        # the dataset column holding the label (NLU, POL: the utterance key)
    item_head: str | None     # the key every label item carries (None: NLG's text)
    description: str
    headline: str             # key of the metric a one-line summary reports
    metrics: tuple[Metric, ...]
    chart_metrics: tuple[str, ...]  # keys of the metrics a chart of this task shows
    # What the task reads beside the dialogue (POL: the state, NLG: the doctor's actions), and
    # the task whose predicted labels a cascade builds it from (NLU, POL).
    input_column: str | None = None
    upstream: str | None = None
    # Where a label item keeps its slots: under this key (NLU items), or None for beside the
    # head (a doctor action's slots are its other keys).
    slots_key: str | None = None
    # Its scoring (gold labels, predictions, gold rows, options -> the results dict) and, for a
    # cascaded task, how its rows are rebuilt from the upstream task's predicted labels.
    scorer: Callable[..., dict] = _score_nlu
    cascade_builder: Callable[[Sequence[dict], dict], list[dict]] | None = None

    @property
    def structured(self) -> bool:
        return self.item_head is not None

    @property
    def empty_label(self) -> list | str:
        """What a prediction that did not parse (or was never made) holds."""
        return [] if self.structured else ""

    def item_slots(self, item: dict) -> dict:
        """One label item's slots (slot key -> entries), wherever this task's labels keep them."""
        if self.slots_key is not None:
            slots = item.get(self.slots_key)
            return slots if isinstance(slots, dict) else {}
        return {key: value for key, value in item.items() if key != self.item_head}

    @property
    def headline_metric(self) -> Metric:
        return next(m for m in self.metrics if m.key == self.headline)

    def cascade_rows(self, rows: list[dict], upstream_labels: dict) -> list[dict]:
        """Rows whose `input_column` is built from the upstream task's predicted labels (by row
        id; None for one that did not parse): the paper's pipeline."""
        if self.cascade_builder is None:
            raise ValueError(f"{self.name} is not built from an upstream task's labels")
        return self.cascade_builder(rows, upstream_labels)

    def gold(self, rows: Sequence[dict]) -> list:
        return [row[self.target_column] for row in rows]

    def score(self, gold_rows: Sequence[dict], predictions: Sequence, *, judge=None,
              pak_mode: str = "exact", bertscore_model: str | None = None,
              bertscore_layer: int | None = None, seed: int = 0) -> dict:
        """Every score of this task: the dict results.json holds (without task and split).

        `gold_rows` need the target column and `id` (POL also `dialogue_id`, for P@K);
        `predictions` are labels aligned with them, None for one that did not parse.
        """
        if len(predictions) != len(gold_rows):
            raise ValueError(f"{len(predictions)} predictions for {len(gold_rows)} gold rows")
        return self.scorer(self.gold(gold_rows), predictions, gold_rows, judge=judge,
                           pak_mode=pak_mode, bertscore_model=bertscore_model,
                           bertscore_layer=bertscore_layer, seed=seed)


TASKS: dict[str, Task] = {task.name: task for task in (
    Task("nlu", "patient", "nlu", "intent",
         "from the dialogue so far and the patient's utterance, predict its intents, slots and "
         "attributes (CMAS labels)", "f1", _F1 + (_JOINT,),
         ("f1", "medical.f1", "joint_accuracy"), slots_key="slots", scorer=_score_nlu),
    Task("pol", "doctor", "actions", "action",
         "from the dialogue so far and the dialogue state, predict the doctor's next actions",
         "f1", _F1 + (_JOINT,) + _PAK,
         ("f1", "medical.f1", "joint_accuracy", "precision_at_k.1", "precision_at_k.4",
          "precision_at_k.inf"), upstream="nlu", input_column="state", scorer=_score_pol,
         cascade_builder=views.cascade_pol_rows),
    Task("nlg", "doctor", "response", None,
         "from the dialogue so far and the doctor's actions, write the doctor's utterance",
         "bleu4", _NLG, ("bleu2", "bleu4", "rouge1", "rougeL", "bertscore.f1"),
         upstream="pol", input_column="actions", scorer=_score_nlg,
         cascade_builder=views.cascade_nlg_rows),
)}
TASK_NAMES = tuple(TASKS)
LABELLED_TASKS = tuple(task for task in TASKS.values() if task.structured)  # NLU, POL
CASCADED_TASKS = tuple(task for task in TASKS.values() if task.upstream)   # POL, NLG
LABELLED_TASK_NAMES = tuple(task.name for task in LABELLED_TASKS)
CASCADED_TASK_NAMES = tuple(task.name for task in CASCADED_TASKS)
# A recipe's `task: multitask` trains one model on the three tasks' examples together (the chat
# format tells them apart by their system message); it is not a task of its own.
MULTITASK = "multitask"


def tasks_of(recipe_task: str) -> tuple[str, ...]:
    """The tasks a recipe's (or run's) `task` trains: all three for `multitask`."""
    return tuple(task.name for task in task_specs_of(recipe_task))


def task_specs_of(recipe_task: str) -> tuple[Task, ...]:
    """The tasks a recipe's (or run's) `task` trains, as Tasks: all three for `multitask`."""
    return tuple(TASKS.values()) if recipe_task == MULTITASK else (get_task(recipe_task),)


def get_task(name: str) -> Task:
    """The task named `name`: called where a name comes in (a command's flag, a recipe, a
    results file, a public entry point); the task is passed on as this object."""
    try:
        return TASKS[name]
    except KeyError:
        raise UsageError(f"unknown task {name!r}: choose one of {', '.join(TASK_NAMES)}") from None


def as_task(task: Task | str) -> Task:
    """A public entry point that also takes a task's name (callers outside the kit, such as
    the harness exporters and tests, pass names): a Task passes through untouched."""
    return task if isinstance(task, Task) else get_task(task)


# speaker -> the task whose label that speaker's release utterances carry (patient: NLU, doctor:
# POL), under the task's target column
LABELLING_TASKS: dict[str, Task] = {TASKS[name].speaker: TASKS[name] for name in LABELLED_TASK_NAMES}
