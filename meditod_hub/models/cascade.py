"""The cascade, written once: NLU -> state -> POL -> NLG, over any rows of the three tasks.

NLU labels patient lines; POL reads the state folded from NLU's predicted labels
(`views.cascade_pol_rows`, through `Task.cascade_rows`), NLG the actions POL predicted
(`views.cascade_nlg_rows`), walking the registered tasks by `Task.upstream` (`stages`). Two callers, one
function: the assistant (`apps.assistant`) runs `cascade` on one turn of its conversations,
eval-cascade (`evaluation.eval_cascade`) on a whole split beside gold inputs; tests hold that
they give the same rows and records for the same runs.

`Pipeline` holds the three predictors, loaded once (`adapters.SharedModels`: one base for the
stages that are LoRA adapters of it, a multi-task run loaded once); `PipelineArguments` are the
flags that name them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from meditod_hub.data.tasks import TASK_NAMES, TASKS, Task
from meditod_hub.endpoint import DEFAULT_TIMEOUT_S
from meditod_hub.errors import MeditodError, UsageError
from meditod_hub.models.adapters import SharedModels
from meditod_hub.models.constrained.vocabulary import (
    VOCABULARY_DEFAULT,
    Vocabulary,
    resolve_vocabulary,
    training_vocabulary,
)
from meditod_hub.models.predictor import DecodeOptions, ModelSpec, Predictor, load_predictor
from meditod_hub.models.records import Prediction
from meditod_hub.models.runs import trained_data


def _optional(help_: str):
    return field(default=None, metadata={"help": help_})


@dataclass
class PipelineArguments:
    """The three models of a pipeline, as command-line flags."""

    nlu: str = field(metadata={"help": "NLU model: run folder, model folder or Hub id"})
    pol: str = field(metadata={"help": "POL model: run folder, model folder or Hub id"})
    nlg: str = field(metadata={"help": "NLG model: run folder, model folder or Hub id"})
    nlu_revision: str | None = _optional("NLU: Hub revision (branch, tag, commit)")
    pol_revision: str | None = _optional("POL: Hub revision (branch, tag, commit)")
    nlg_revision: str | None = _optional("NLG: Hub revision (branch, tag, commit)")
    nlu_family: str | None = _optional("NLU: model family (default: run_info.json)")
    pol_family: str | None = _optional("POL: model family (default: run_info.json)")
    nlg_family: str | None = _optional("NLG: model family (default: run_info.json)")
    batch_size: int = field(default=16, metadata={"min": 1, "help": "rows per generate call"})
    max_new_tokens: int | None = field(default=None, metadata={"min": 1,
        "help": "generation budget of every module (default: each run's, run_info.json)"})
    constrained: bool | None = field(default=None, metadata={
        "help": "decode under the CMAS grammar (meditod_hub.models.constrained), so NLU and POL always "
                "parse (default: on for the assistant, off for eval-cascade, as in the paper)"})
    vocabulary: str = field(default=VOCABULARY_DEFAULT, metadata={
        "help": "under the grammar, the medical values NLU and POL may say: train (the canonical "
                "values of the training split each run recorded, when that dataset folder is "
                "here; else free), none (free text) or a vocabulary file"})
    endpoint: str | None = _optional(
        "OpenAI-compatible base URL serving the three models under three names (vLLM "
        "--enable-lora --lora-modules nlu=... pol=... nlg=...); --nlu/--pol/--nlg still name "
        "the runs (family, budgets)")
    served_models: str = field(default="nlu,pol,nlg", metadata={
        "help": "with --endpoint: the NLU, POL and NLG model names there, comma-separated "
                "(one name three times for a multi-task adapter)"})
    timeout: float = field(default=DEFAULT_TIMEOUT_S, metadata={"above": 0,
        "help": "--endpoint: seconds for each stage's requests (one turn in chat), retries "
                "included (as predict's --timeout)"})

    def specs(self, constrained: bool = True) -> tuple[ModelSpec, ModelSpec, ModelSpec]:
        """The three specs; `constrained` is the command's default when the flag is not given
        (its medical values: `--vocabulary`)."""
        names = self.served_models.split(",")
        if len(names) != len(TASK_NAMES) or not all(name.strip() for name in names):
            raise UsageError(f"--served_models {self.served_models!r}: give three names "
                             "(NLU,POL,NLG)")
        setting = constrained if self.constrained is None else self.constrained
        if self.endpoint and self.constrained is None:
            setting = False  # a served grammar needs the server's kind: ask with --constrained
        given = None if self.vocabulary == VOCABULARY_DEFAULT else \
            resolve_vocabulary(self.vocabulary, None)  # a file (read once) or none

        def vocabulary(task: str) -> Vocabulary | None:
            if not (setting and TASKS[task].structured):
                return None
            return run_vocabulary(getattr(self, task)) if self.vocabulary == VOCABULARY_DEFAULT \
                else given

        decode = {task: DecodeOptions(self.batch_size, max_new_tokens=self.max_new_tokens,
                                      constrained=setting, vocabulary=vocabulary(task))
                  for task in TASK_NAMES}
        # a patient's words are never cached to disk
        # (--timeout also bounds each request for a Hub model's files)
        served = {"cache": None, "timeout": self.timeout} if self.endpoint \
            else {"timeout": self.timeout}
        return tuple(ModelSpec(getattr(self, task), getattr(self, f"{task}_family"),
                               getattr(self, f"{task}_revision"), endpoint=self.endpoint,
                               served_model=name if self.endpoint else None, decode=decode[task],
                               endpoint_options=served)
                     for task, name in zip(TASK_NAMES, names))


def run_vocabulary(model: str) -> Vocabulary | None:
    """The canonical medical values a run was trained on (its recorded dataset's training split),
    for its grammar: a small model then says "coughing" for "a dry cough" rather than copying the
    words. None (free values) for a model whose training data is not here (a Hub id, a bare
    folder, a dataset given as a Hub id)."""
    data = trained_data(model)
    return training_vocabulary(data) if data and Path(data).is_dir() else None


class Pipeline:
    """NLU, POL and NLG predictors, run stage by stage (`cascade`)."""

    def __init__(self, nlu: Predictor, pol: Predictor, nlg: Predictor,
                 loading: Sequence[str] = ()):
        self.predictors = dict(zip(TASK_NAMES, (nlu, pol, nlg)))
        self.loading = tuple(loading)  # how the models were loaded (shared base or why not)

    @classmethod
    def load(cls, nlu: ModelSpec, pol: ModelSpec, nlg: ModelSpec, **kwargs):
        # one SharedModels for the three stages: one base for its adapters, a folder loaded once
        models = SharedModels()
        predictors = [load_predictor(spec, task, models)
                      for spec, task in zip((nlu, pol, nlg), TASKS.values())]
        return cls(*predictors, loading=models.notes, **kwargs)

    def run_stage(self, task: str, rows: list[dict],
                  stream: Callable[[str], None] | None = None) -> tuple[list[Prediction], float]:
        """One batched call of a module's predictor, and its wall time. `stream` (one row):
        the output's text as it is generated, where the predictor can stream (else nothing)."""
        start = time.perf_counter()
        predictor = self.predictors[task]
        records = predictor.predict(rows, stream=stream) if stream else predictor.predict(rows)
        if len(records) != len(rows):
            raise MeditodError(f"the {task} predictor answered {len(records)} records for "
                               f"{len(rows)} rows")
        return records, time.perf_counter() - start


@dataclass
class StageRun:
    """One stage of a cascade: the rows it ran on and its records."""

    task: Task
    rows: list[dict]             # its cascaded inputs (the first stage: the rows it was given)
    cascaded: list[Prediction]   # its records on those rows
    seconds: float               # its generation wall time
    gold_input: list[Prediction] | None = None  # with gold inputs: its records on the gold rows


@dataclass
class CascadeRun:
    """Every stage of one cascade, by task name in cascade order (`stages`)."""

    stages: dict[str, StageRun]

    def __getitem__(self, task: Task | str) -> StageRun:
        return self.stages[task if isinstance(task, str) else task.name]

    @property
    def first(self) -> StageRun:
        return next(iter(self.stages.values()))

    @property
    def seconds(self) -> dict[str, float]:
        return {name: stage.seconds for name, stage in self.stages.items()}


def run_both(pipeline: Pipeline, task: Task, gold_rows: Sequence[dict],
             cascaded_rows: Sequence[dict], gold_inputs: bool = True,
             stream: Callable[[str], None] | None = None) -> StageRun:
    """Gold-input and cascaded records of one module, each distinct input generated once
    (only the cascaded ones without `gold_inputs`)."""
    if not gold_inputs:
        records, seconds = pipeline.run_stage(task.name, list(cascaded_rows), stream)
        return StageRun(task, list(cascaded_rows), records, seconds)
    column = task.input_column
    differs = [c[column] != g[column] for g, c in zip(gold_rows, cascaded_rows)]
    extra = [c for c, d in zip(cascaded_rows, differs) if d]
    records, seconds = pipeline.run_stage(task.name, list(gold_rows) + extra)
    gold, rest = records[:len(gold_rows)], iter(records[len(gold_rows):])
    cascaded = [next(rest) if d else g for g, d in zip(gold, differs)]
    return StageRun(task, list(cascaded_rows), cascaded, seconds, gold_input=gold)


def stages() -> list[Task]:
    """The registered tasks in cascade order: the one that reads only the dialogue first, then
    each task after the task it names as `upstream` (the registry holds them in that order)."""
    order = [task for task in TASKS.values() if task.upstream is None]
    if len(order) != 1:
        raise ValueError(f"a cascade starts at one task without upstream, not {len(order)}")
    while len(order) < len(TASKS):
        after = [t for t in TASKS.values() if t.upstream in {s.name for s in order}
                 and t not in order]
        if not after:
            raise ValueError("a task's upstream is outside the cascade")
        order += after
    return order


def cascade(pipeline: Pipeline, rows: Mapping[str, Sequence[dict]], gold_inputs: bool = True,
            earlier: Mapping[str, list | None] | None = None,
            stream: Callable[[str], None] | None = None) -> CascadeRun:
    """Every stage's records: NLU on its rows; each later stage (POL, NLG) on cascaded (and,
    with `gold_inputs`, gold) inputs built from its upstream stage's cascaded labels
    (`Prediction.label`: None for an output that did not parse).

    `earlier`: NLU labels of patient lines predicted before these rows (a conversation's earlier
    turns), by row id; rows of one dialogue_id are one dialogue. A cascaded row also carries
    the inputs built upstream for its id (an NLG row, the state its POL row saw: NLG does not
    read it, so no output changes, but no row mixes gold and predicted inputs). `stream` gets
    the last stage's text as it is generated (one row, without gold inputs)."""
    first, *later = stages()
    records, seconds = pipeline.run_stage(first.name, list(rows[first.name]))
    run = CascadeRun({first.name: StageRun(first, list(rows[first.name]), records, seconds)})
    labels = {first.name: {**(earlier or {}), **{r.id: r.label for r in records}}}
    carried: dict[str, dict] = {}  # row id -> the inputs the cascade built so far (POL's state)
    for stage in later:
        rows_in = [{**row, **carried.get(row["id"], {})} for row in rows[stage.name]]
        built = stage.cascade_rows(rows_in, labels[stage.upstream])
        for row in built:
            carried.setdefault(row["id"], {})[stage.input_column] = row[stage.input_column]
        run.stages[stage.name] = run_both(pipeline, stage, rows[stage.name], built, gold_inputs,
                                          stream if stage is later[-1] else None)
        labels[stage.name] = {r.id: r.label for r in run[stage].cascaded}
    return run
