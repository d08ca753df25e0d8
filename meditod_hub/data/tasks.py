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
failure). Metrics are in docs/format.md ("Metrics") and `meditod_hub.evaluation.metrics`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

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
        from meditod_hub.data import views

        build = {"pol": views.cascade_pol_rows, "nlg": views.cascade_nlg_rows}[self.name]
        return build(rows, upstream_labels)

    def gold(self, rows: Sequence[dict]) -> list:
        return [row[self.target_column] for row in rows]

    def score(self, gold_rows: Sequence[dict], predictions: Sequence, *, judge=None,
              pak_mode: str = "exact", bertscore_model: str | None = None,
              bertscore_layer: int | None = None, seed: int = 0) -> dict:
        """Every score of this task: the dict results.json holds (without task and split).

        `gold_rows` need the target column and `id` (POL also `dialogue_id`, for P@K);
        `predictions` are labels aligned with them, None for one that did not parse.
        """
        from meditod_hub.evaluation import metrics

        if len(predictions) != len(gold_rows):
            raise ValueError(f"{len(predictions)} predictions for {len(gold_rows)} gold rows")
        gold = self.gold(gold_rows)
        if not self.structured:
            texts = [p if isinstance(p, str) else "" for p in predictions]
            return {**metrics.nlg_scores(texts, gold, bertscore_model, bertscore_layer, seed),
                    "examples": len(gold),
                    "parse_failures": sum(not isinstance(p, str) for p in predictions)}
        f1 = metrics.nlu_f1 if self.name == "nlu" else metrics.pol_f1
        results = f1(gold, predictions, judge, ids=[row["id"] for row in gold_rows]).as_dict()
        if self.name == "pol":
            results["precision_at_k"] = metrics.pol_precision_at_k(
                gold, predictions, [row["dialogue_id"] for row in gold_rows], mode=pak_mode)
            results["precision_at_k_mode"] = pak_mode
        return results


TASKS: dict[str, Task] = {task.name: task for task in (
    Task("nlu", "patient", "nlu", "intent",
         "from the dialogue so far and the patient's utterance, predict its intents, slots and "
         "attributes (CMAS labels)", "f1", _F1 + (_JOINT,),
         ("f1", "medical.f1", "joint_accuracy"), slots_key="slots"),
    Task("pol", "doctor", "actions", "action",
         "from the dialogue so far and the dialogue state, predict the doctor's next actions",
         "f1", _F1 + (_JOINT,) + _PAK,
         ("f1", "medical.f1", "joint_accuracy", "precision_at_k.1", "precision_at_k.4",
          "precision_at_k.inf"), upstream="nlu", input_column="state"),
    Task("nlg", "doctor", "response", None,
         "from the dialogue so far and the doctor's actions, write the doctor's utterance",
         "bleu4", _NLG, ("bleu2", "bleu4", "rouge1", "rougeL", "bertscore.f1"),
         upstream="pol", input_column="actions"),
)}
TASK_NAMES = tuple(TASKS)
LABELLED_TASK_NAMES = tuple(name for name, task in TASKS.items() if task.structured)  # NLU, POL
CASCADED_TASK_NAMES = tuple(name for name, task in TASKS.items() if task.upstream)   # POL, NLG
# A recipe's `task: multitask` trains one model on the three tasks' examples together (the chat
# format tells them apart by their system message); it is not a task of its own.
MULTITASK = "multitask"


def tasks_of(recipe_task: str) -> tuple[str, ...]:
    """The tasks a recipe's (or run's) `task` trains: all three for `multitask`."""
    return TASK_NAMES if recipe_task == MULTITASK else (get_task(recipe_task).name,)


def get_task(name: str) -> Task:
    try:
        return TASKS[name]
    except KeyError:
        raise UsageError(f"unknown task {name!r}: choose one of {', '.join(TASK_NAMES)}") from None


# speaker -> the task whose label that speaker's release utterances carry (patient: NLU, doctor:
# POL), under the task's target column
LABELLING_TASKS: dict[str, Task] = {TASKS[name].speaker: TASKS[name] for name in LABELLED_TASK_NAMES}
