"""Training examples: dataset rows -> the family's examples, fitted to the token budget before
the trainer sees them, in one `datasets.Dataset` (`Encoded`), every cut and skip counted.

Apart from `train` because it is the one step between the rows and the trainer that decides what
a model learns from, used without a run too (tests/test_train.py, bench/bench_train.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from datasets import Dataset, concatenate_datasets

from meditod_hub.data.tasks import Task
from meditod_hub.models.families import Budget, Family
from meditod_hub.models.formats.fit import BudgetError


@dataclass
class Encoded:
    dataset: Dataset | None
    truncated: int = 0                                    # examples whose input was cut
    state_cut: int = 0                                    # ...of which lost state entries
    skipped: list[str] = field(default_factory=list)      # ids of examples that cannot fit


def encode(family: Family, task: Task, rows: list[dict], tokenizer, budget: Budget) -> Encoded:
    """Trainer-ready examples within the budget; nothing is cut or dropped without a count."""
    examples, truncated, state_cut, skipped = [], 0, 0, []
    for row in rows:
        try:
            example = family.training_example(task, row, tokenizer, budget)
        except BudgetError:
            skipped.append(row["id"])
            continue
        truncated += example.fitted.truncated
        state_cut += example.fitted.dropped_state > 0
        examples.append(example.features)
    return Encoded(Dataset.from_list(examples) if examples else None, truncated, state_cut,
                   skipped)


def encode_tasks(family: Family, rows_by_task: dict[Task, list[dict]], tokenizer,
                 budget: Budget) -> Encoded:
    """The examples of one or several tasks under one budget, in one dataset (a multi-task run's
    tasks are mixed by the trainer's shuffling sampler); skipped ids name their task."""
    parts = {task: encode(family, task, rows, tokenizer, budget)
             for task, rows in rows_by_task.items()}
    found = [part.dataset for part in parts.values() if part.dataset is not None]
    several = len(parts) > 1
    return Encoded(concatenate_datasets(found) if found else None,
                   sum(part.truncated for part in parts.values()),
                   sum(part.state_cut for part in parts.values()),
                   [f"{task.name}:{i}" if several else i
                    for task, part in parts.items() for i in part.skipped])
