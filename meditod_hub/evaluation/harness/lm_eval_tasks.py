"""What the lm-evaluation-harness task YAMLs written by `meditod harness` call (`!function
utils.<name>`: the task folder's utils.py re-exports this module). Imported by lm_eval only.

* `RetrievedExemplars`: the few-shot sampler. Each row carries its own retrieved exemplars
  (`rows`), so the sampler hands back those, most similar first: with `--apply_chat_template`
  lm-eval sends the system prompt, one (user, assistant) pair per exemplar and the question,
  which are the messages `meditod fewshot` sends.
* `process_icl_<task>` / `process_ft_<task>` (`process_ft_<family>_<task>` for a span family's
  fine-tuned tasks, `process_name`): keep each row's raw answer for the aggregation.
* one aggregation per metric (`f1`, `medical_f1`, `precision_at_k_1`, `bleu4`, ...): the whole
  split scored by the kit (`scoring`), one number picked from it.
"""

from __future__ import annotations

from lm_eval.api.samplers import ContextSampler

from meditod_hub.data.tasks import TASK_NAMES
from meditod_hub.evaluation.harness import scoring
from meditod_hub.evaluation.harness.scoring import process_name
from meditod_hub.models.families import SPAN_FAMILIES


class RetrievedExemplars(ContextSampler):
    """The row's own precomputed exemplars (the task's fewshot split is its test split, so
    lm-eval passes the row being asked about)."""

    def sample(self, n, eval_doc=None, df=None, **kwargs):
        if eval_doc is None:
            raise ValueError("the MediTOD in-context tasks read each row's retrieved exemplars: "
                             "keep fewshot_config.split equal to test_split")
        exemplars = list(eval_doc["exemplars"])
        if n > len(exemplars):
            raise ValueError(f"--num_fewshot {n}: the task folder holds {len(exemplars)} retrieved "
                             "exemplars per row (meditod harness --shots)")
        return exemplars[:n]


def _processor(setting: str, task: str, family: str | None = None):
    names = list(scoring.metric_keys(task))

    def process(doc, results):
        kept = scoring.item(setting, task, doc, results[0] if results else "", family)
        return {name: kept for name in names}

    process.__name__ = process_name(setting, task, family)
    return process


def _aggregation(key: str):
    def aggregate(items):
        return scoring.aggregate(items, key)

    aggregate.__name__ = scoring.harness_name(key)
    return aggregate


for _setting in scoring.SETTINGS:
    for _task in TASK_NAMES:
        globals()[process_name(_setting, _task)] = _processor(_setting, _task)
for _family in SPAN_FAMILIES:
    for _task in TASK_NAMES:
        globals()[process_name("ft", _task, _family)] = _processor("ft", _task, _family)
for _task in TASK_NAMES:
    for _name, _key in scoring.metric_keys(_task).items():
        globals()[_name] = _aggregation(_key)
