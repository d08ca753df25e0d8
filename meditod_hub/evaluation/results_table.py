"""What a results table holds: a system's scores on one task and split (`Row`), the paper's rows,
and how rows group into tables under their headings."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from meditod_hub.data import about, paper_results
from meditod_hub.data.release import EVAL_SPLITS, OOD_SPLIT
from meditod_hub.data.tasks import TASK_NAMES, Metric, get_task

PAPER_DATASET = "MediTOD"
SPLIT_LABELS = {"test": "test (respiratory, in-domain)",
                OOD_SPLIT: f"{OOD_SPLIT} (musculoskeletal, out-of-domain)"}


@dataclass
class Row:
    """One system's scores on one task and split."""

    task: str
    split: str
    system: str        # how the table names it: the paper's name, a run's model, a Hub repo id
    source: str        # paper | local (found under --runs) | hub
    setting: str       # supervised | in-context | cascaded | unknown
    constrained: bool  # decoding constrained to the label grammar
    family: str        # the kit's family name (`families`), `gpt` for OpenAI models, "" unknown
    scores: dict[str, float]  # metric key (results.json, dotted) -> value
    link: str = ""     # the paper, a local results.json, or the model's Hub page
    note: str = ""
    dataset: str = PAPER_DATASET  # what it was scored on (`provenance.Provenance.short`)
    comparable: bool = True       # MediTOD (or a Hub dataset): under the paper's headings

    def value(self, key: str) -> float | None:
        return self.scores.get(key)


@dataclass
class Unread:
    """A Hub model that has no row, and why."""

    repo: str
    reason: str
    link: str


@dataclass
class Report:
    rows: list[Row]
    unread: list[Unread] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # local files that are not results
    dataset: str | None = None
    generated: str = field(default_factory=lambda: datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"))

    def tables(self) -> list[tuple[str, str, list[Row]]]:
        """(task, split, rows) in task order, test and test_ood first; rows in report order.
        Rows scored on other data than MediTOD (a synthetic build, the user's own) get tables
        of their own after the paper's, one per dataset: never under the paper's headings."""
        splits = list(EVAL_SPLITS) + sorted({r.split for r in self.rows} - set(EVAL_SPLITS))
        others = list(dict.fromkeys(r.dataset for r in self.rows if not r.comparable))
        return [(task, split, rows) for task in TASK_NAMES for split in splits
                for dataset in (None, *others)
                if (rows := [r for r in self.rows if (r.task, r.split) == (task, split)
                             and (r.comparable if dataset is None
                                  else not r.comparable and r.dataset == dataset)])]


def table_metrics(task: str, rows: Iterable[Row]) -> list[Metric]:
    """The task's metrics that some row of the table reports, in the task's order."""
    present = {key for row in rows for key in row.scores}
    return [m for m in get_task(task).metrics if m.key in present]


def heading(task: str, split: str, rows: list[Row]) -> str:
    """A table's title: the paper's split names for MediTOD; other data says what it is."""
    if all(r.comparable for r in rows):
        return f"{task.upper()}, {SPLIT_LABELS.get(split, split)}"
    return (f"{task.upper()}, {split} split of {rows[0].dataset}: not MediTOD, not comparable "
            "with the paper's rows")


def paper_rows() -> list[Row]:
    """Every row of the paper's tables (`paper_results`), which every table starts with."""
    rows = []
    for (key, task, split), scores in paper_results.RESULTS.items():
        model = paper_results.paper_model(key)
        setting = paper_results.setting(key)
        rows.append(Row(task, split, model.paper_name, "paper", setting, False, model.family,
                        dict(scores), about.PAPER,
                        "5 retrieved exemplars" if setting == "in-context" else ""))
    return rows
