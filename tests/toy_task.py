"""A toy fourth task in one file, as a new task module under meditod_hub/data/tasks/ would be:
from the dialogue and the doctor's actions, say whether the doctor's reply is short or long.
Registered (`tasks.register(TASK)`, the registry's one line) by tests/test_toy_task.py only."""

from __future__ import annotations

from collections.abc import Sequence

from meditod_hub.data import views
from meditod_hub.data.tasks.nlg import ACTIONS
from meditod_hub.data.tasks.spans import RESPONSE_COLUMN
from meditod_hub.data.tasks.task import Metric, Task

SHORT_WORDS = 3


def view(dialogue_id: str, utterances: list[dict]) -> list[dict]:
    """The NLG rows with the reply's length class instead of the reply."""
    return [{**{k: row[k] for k in views.POL_FEATURES},
             "length": "short" if len(row["response"].split()) <= SHORT_WORDS else "long"}
            for row in views.to_nlg(dialogue_id, utterances)]


def score(gold: list, predictions: Sequence, gold_rows: Sequence[dict], **_options) -> dict:
    return {"accuracy": sum(p == g for p, g in zip(predictions, gold)) / max(len(gold), 1),
            "examples": len(gold), "parse_failures": sum(p is None for p in predictions)}


TASK = Task(
    name="length", speaker="doctor", target_column="length", item_head=None,
    description="from the dialogue so far and the doctor's actions, say if the reply is short",
    view=view, features={**views.POL_FEATURES, "length": views.STRING},
    scorer=score, headline="accuracy", metrics=(Metric("accuracy", "accuracy", "Accuracy"),),
    chart_metrics=("accuracy",),
    system_message="Given the action and the last turn, say whether the doctor's reply is short.",
    span_column=RESPONSE_COLUMN,
    authors_prefix="convert dialog actions to reply length:",
    pptod_prefix="translate dialogue to reply length:",
    fewshot_header="You will see a doctor's actions. Say whether the reply is short or long.",
    fewshot_rules=("1. Answer short or long.",),
    reads=ACTIONS, upstream="pol", cascade_builder=views.cascade_nlg_rows,
)
