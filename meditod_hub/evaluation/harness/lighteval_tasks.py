"""What the lighteval custom-task module written by `meditod harness` (`lighteval_tasks.py`)
builds: the fine-tuned tasks of the folder as lighteval tasks. Imported by lighteval only.

lighteval takes the system message from the model's configuration (`system_prompt`), not from
the task, and appends nothing of the task's to it; the task's user message is the row's
`ft_user`, so with `system_prompt` set to the task's chat system message
(`lighteval/<task>_ft.system.txt`, also in the model config YAML `meditod harness --model`
writes) the model gets the chat family's prompt. Its answers are kept per row and scored by the
kit (`scoring`), one metric per results.json key, as in lm-eval.
"""

from __future__ import annotations

import json
from pathlib import Path

from lighteval.metrics.metrics_sample import SampleLevelComputation
from lighteval.metrics.utils.metric_utils import CorpusLevelMetric
from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.requests import Doc, SamplingMethod

from meditod_hub.evaluation.harness import scoring
from meditod_hub.evaluation.harness.export import INFO, data_config, task_name


class KeepAnswer(SampleLevelComputation):
    """Each row's raw answer, kept until the corpus is scored."""

    def __init__(self, setting: str, task: str):
        self.setting, self.task = setting, task

    def compute(self, doc: Doc, model_response, **kwargs) -> str:
        text = model_response.text[0] if model_response.text else ""
        return scoring.item(self.setting, self.task, {"row": doc.specific["row"]}, text)


class ScoreSplit:
    """The whole split scored by the kit: every metric at once, as a dict (lighteval lists its
    keys as metrics, and bootstraps no stderr over a split-level score)."""

    def __init__(self, task: str):
        self.task = task

    def __call__(self, items) -> dict:
        return {name: scoring.aggregate(items, key)
                for name, key in scoring.metric_keys(self.task).items()}


def metric(setting: str, task: str) -> CorpusLevelMetric:
    return CorpusLevelMetric(metric_name="meditod", higher_is_better=True,
                             category=SamplingMethod.GENERATIVE,
                             sample_level_fn=KeepAnswer(setting, task),
                             corpus_level_fn=ScoreSplit(task))


def ft_prompt(line: dict, task_name: str) -> Doc:
    return Doc(query=line["ft_user"], choices=[line["icl_answer"]], gold_index=0,
               task_name=task_name, specific={"row": line["row"], "id": line["id"]})


def tasks_table(folder: Path) -> list[LightevalTaskConfig]:
    info = json.loads((Path(folder) / INFO).read_text(encoding="utf-8"))
    if "ft" not in info["settings"]:
        return []
    return [LightevalTaskConfig(
        name=task_name(task, split, "ft"), prompt_function=ft_prompt,
        hf_repo=str(Path(folder).resolve() / "data"), hf_subset=data_config(task, split),
        hf_avail_splits=["test"], evaluation_splits=["test"], few_shots_split=None,
        few_shots_select=None, generation_size=info["max_gen_toks"]["ft"], stop_sequence=[],
        metrics=[metric("ft", task)], num_fewshots=0, version=1)
        for task in info["tasks_of"] for split in info["splits"]]
