"""The cascade, written once: NLU -> state -> POL -> NLG, over any rows of the registered tasks.

NLU labels patient lines; POL reads the state folded from NLU's predicted labels
(`views.cascade_pol_rows`, through `Task.cascade_rows`), NLG the actions POL predicted
(`views.cascade_nlg_rows`), walking the registered tasks by `Task.upstream` (`stages`: a task
registered after them is a stage after its upstream). Two callers, one
function: the assistant (`apps.assistant`) runs `cascade` on one turn of its conversations,
eval-cascade (`evaluation.eval_cascade`) on a whole split beside gold inputs; tests hold that
they give the same rows and records for the same runs.

`Pipeline` holds one predictor per stage, by task name in cascade order, loaded once
(`adapters.SharedModels`: one base for the stages that are LoRA adapters of it, a multi-task run
loaded once); `pipeline_arguments(stages())` are the flags that name them, made from the stages
when a command parses its flags (`--<task>`, `--<task>_revision`, `--<task>_family` each), so a
registered task is a stage without more code.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, make_dataclass
from pathlib import Path

from meditod_hub.data.tasks import TASKS, Task
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


def _optional(help_: str):
    return field(default=None, metadata={"help": help_})


def listed(names: Sequence[str]) -> str:
    """`A, B and C`: how help texts and messages list the stages."""
    return " and ".join(filter(None, (", ".join(names[:-1]), names[-1])))


def loading_message(tasks: Sequence[Task]) -> str:
    """What a command says while the stages' models load: "loading the NLU, POL and NLG
    models ..."."""
    return f"loading the {listed([task.display_name for task in tasks])} models ..."


def _count(n: int) -> str:
    """How many stages, in words, as the help and messages say it ("three names")."""
    return ("one", "two", "three", "four", "five", "six")[n - 1] if 0 < n <= 6 else str(n)


def _stage_fields(tasks: Sequence[Task]) -> list[tuple]:
    """Each stage's `--<task>`, then every `--<task>_revision`, then every `--<task>_family`:
    the flags (and their order in -h) that name a pipeline's models."""
    return ([(task.name, str, field(metadata={
                "help": f"{task.display_name} model: run folder, model folder or Hub id"}))
             for task in tasks]
            + [(f"{task.name}_revision", str | None,
                _optional(f"{task.display_name}: Hub revision (branch, tag, commit)"))
               for task in tasks]
            + [(f"{task.name}_family", str | None,
                _optional(f"{task.display_name}: model family (default: run_info.json)"))
               for task in tasks])


def _pipeline_fields(tasks: Sequence[Task]) -> list[tuple]:
    """The flags every stage shares, their help naming the stages."""
    shown = [task.display_name for task in tasks]
    labelled = listed([task.display_name for task in tasks if task.structured])
    n = _count(len(tasks))
    return [
        ("batch_size", int, field(default=16, metadata={"min": 1, "help": "rows per generate call"})),
        ("max_new_tokens", int | None, field(default=None, metadata={"min": 1,
            "help": "generation budget of every module (default: each run's, run_info.json)"})),
        ("constrained", bool | None, field(default=None, metadata={
            "help": f"decode under the CMAS grammar (meditod_hub.models.constrained), so "
                    f"{labelled} always parse (default: on for the assistant, off for "
                    "eval-cascade, as in the paper)"})),
        ("vocabulary", str, field(default=VOCABULARY_DEFAULT, metadata={
            "help": f"under the grammar, the medical values {labelled} may say: train (the "
                    "canonical values of the training split each run recorded, when that "
                    "dataset folder is here; else free), none (free text) or a vocabulary "
                    "file"})),
        ("endpoint", str | None, _optional(
            f"OpenAI-compatible base URL serving the {n} models under {n} names (vLLM "
            "--enable-lora --lora-modules " + " ".join(f"{t.name}=..." for t in tasks)
            + "); " + "/".join(f"--{t.name}" for t in tasks) + " still name the runs "
            "(family, budgets)")),
        ("served_models", str, field(default=",".join(task.name for task in tasks), metadata={
            "help": f"with --endpoint: the {listed(shown)} model names there, "
                    f"comma-separated (one name {n} times for a multi-task adapter)"})),
        ("timeout", float, field(default=DEFAULT_TIMEOUT_S, metadata={"above": 0,
            "help": "--endpoint: seconds for each stage's requests (one turn in chat), retries "
                    "included (as predict's --timeout)"})),
    ]


class PipelineArguments:
    """The models of a pipeline, one per stage, as command-line flags: what they give. The
    flags are fields of the dataclass `pipeline_arguments` makes from the stages."""

    STAGES: tuple[Task, ...] = ()  # the stages the flags were made from, in cascade order

    def sources(self) -> dict[str, str]:
        """Each stage's model as given (run folder, model folder or Hub id), in cascade order."""
        return {task.name: getattr(self, task.name) for task in self.STAGES}

    def specs(self, constrained: bool = True) -> dict[str, ModelSpec]:
        """Each stage's spec, by task name in cascade order; `constrained` is the command's
        default when the flag is not given (its medical values: `--vocabulary`)."""
        names = self.served_models.split(",")
        if len(names) != len(self.STAGES) or not all(name.strip() for name in names):
            raise UsageError(f"--served_models {self.served_models!r}: give "
                             f"{_count(len(self.STAGES))} names "
                             f"({','.join(task.display_name for task in self.STAGES)})")
        setting = constrained if self.constrained is None else self.constrained
        if self.endpoint and self.constrained is None:
            setting = False  # a served grammar needs the server's kind: ask with --constrained
        given = None if self.vocabulary == VOCABULARY_DEFAULT else \
            resolve_vocabulary(self.vocabulary, None)  # a file (read once) or none

        def vocabulary(task: Task) -> Vocabulary | None:
            if not (setting and task.structured):
                return None
            return run_vocabulary(getattr(self, task.name)) \
                if self.vocabulary == VOCABULARY_DEFAULT else given

        # a patient's words are never cached to disk
        # (--timeout also bounds each request for a Hub model's files)
        served = {"cache": None, "timeout": self.timeout} if self.endpoint \
            else {"timeout": self.timeout}
        return {task.name: ModelSpec(
                    getattr(self, task.name), getattr(self, f"{task.name}_family"),
                    getattr(self, f"{task.name}_revision"), endpoint=self.endpoint,
                    served_model=name if self.endpoint else None,
                    decode=DecodeOptions(self.batch_size, max_new_tokens=self.max_new_tokens,
                                         constrained=setting, vocabulary=vocabulary(task)),
                    endpoint_options=served)
                for task, name in zip(self.STAGES, names)}


def pipeline_arguments(tasks: Sequence[Task]) -> type[PipelineArguments]:
    """The flags of a pipeline over `tasks` (the cascade's stages, in order): a dataclass made
    from the stages when a command parses its flags, so a registered task gets its `--<task>`
    flags like the paper's three."""
    return make_dataclass(
        "PipelineArguments", _stage_fields(tasks) + _pipeline_fields(tasks),
        bases=(PipelineArguments,),
        namespace={"__doc__": PipelineArguments.__doc__, "__module__": __name__,
                   "STAGES": tuple(tasks)})


def run_vocabulary(model: str) -> Vocabulary | None:
    """The canonical medical values a run was trained on (its recorded dataset's training split),
    for its grammar: a small model then says "coughing" for "a dry cough" rather than copying the
    words. None (free values) for a model whose training data is not here (a Hub id, a bare
    folder, a dataset given as a Hub id)."""
    data = trained_data(model)
    return training_vocabulary(data) if data and Path(data).is_dir() else None


class Pipeline:
    """One predictor per stage, by task name in cascade order, run stage by stage (`cascade`)."""

    def __init__(self, predictors: Mapping[str, Predictor], loading: Sequence[str] = ()):
        missing = [task.name for task in stages() if task.name not in predictors]
        if missing:
            raise ValueError(f"no predictor for the stage(s) {', '.join(missing)}")
        self.predictors = {task.name: predictors[task.name] for task in stages()}
        self.loading = tuple(loading)  # how the models were loaded (shared base or why not)

    @classmethod
    def load(cls, specs: Mapping[str, ModelSpec], **kwargs):
        """Each stage's predictor from its spec (`specs`: by task name)."""
        # one SharedModels for every stage: one base for its adapters, a folder loaded once
        models = SharedModels()
        return cls({task.name: load_predictor(specs[task.name], task, models)
                    for task in stages()}, loading=models.notes, **kwargs)

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
    the text of the stage whose label is text (NLG's reply) as it is generated (one row, without
    gold inputs)."""
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
                                          None if stage.structured else stream)
        labels[stage.name] = {r.id: r.label for r in run[stage].cascaded}
    return run

