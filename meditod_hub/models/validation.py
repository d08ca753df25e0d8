"""Validation by generation: NLU/POL F1 of greedy generations on the validation rows, added to
each of the trainer's evaluations (TRL has no generative eval), so that checkpoints are selected
by F1 (`metric_for_best_model: f1`).

Apart from `train` because it scores a model as predictions are scored (`LocalPredictor`, the
task's own `score`), not as the trainer computes a loss.
"""

from __future__ import annotations

from dataclasses import dataclass

from accelerate.utils import gather_object

from meditod_hub.data.tasks import Task
from meditod_hub.models.families import Budget, Family
from meditod_hub.models.predictor import DecodeOptions, LocalPredictor


@dataclass
class ValidationScorer:
    """NLU/POL F1 of greedy generations on the validation rows (exact judge).

    Each process generates a strided share of the rows; all processes gather every prediction
    and compute the same score, so checkpoint selection agrees across ranks.
    """

    family: Family
    task: Task
    rows: list[dict]
    tokenizer: object
    budget: Budget
    batch_size: int

    def __call__(self, model, accelerator) -> dict:
        mine = list(range(accelerator.process_index, len(self.rows), accelerator.num_processes))
        predictor = LocalPredictor(model, self.tokenizer, self.family, self.task, self.budget,
                                   DecodeOptions(self.batch_size))
        records = predictor.predict([self.rows[i] for i in mine])
        gathered = dict(gather_object([(i, r.label) for i, r in zip(mine, records)]))
        scores = self.task.score(self.rows, [gathered[i] for i in range(len(self.rows))])
        return {"f1": scores["f1"], "parse_failures": scores["parse_failures"]}


@dataclass
class MultiTaskScorer:
    """A multi-task run's validation: each structured task's F1 and their mean as `f1` (what
    `metric_for_best_model: f1` selects on)."""

    scorers: list[ValidationScorer]

    def __call__(self, model, accelerator) -> dict:
        scores = {s.task.name: s(model, accelerator) for s in self.scorers}
        return {"f1": sum(v["f1"] for v in scores.values()) / len(scores),
                "parse_failures": sum(v["parse_failures"] for v in scores.values()),
                **{f"{task}_f1": v["f1"] for task, v in scores.items()}}


class GenerationEvalMixin:
    """Adds the generation scores to each evaluation's metrics (TRL has no generative eval)."""

    scorer: ValidationScorer | None = None

    def evaluation_loop(self, dataloader, description, prediction_loss_only=None,
                        ignore_keys=None, metric_key_prefix="eval"):
        output = super().evaluation_loop(dataloader, description, prediction_loss_only,
                                         ignore_keys, metric_key_prefix)
        if self.scorer is not None:
            scores = self.scorer(self.model, self.accelerator)
            output.metrics.update({f"{metric_key_prefix}_{k}": v for k, v in scores.items()})
        return output
