"""The three models as one history-taking system: patient line -> NLU -> state -> POL -> NLG.

    from meditod_hub.assistant import Assistant, ModelSpec
    assistant = Assistant.load(ModelSpec("runs/tiny-llama/nlu"), ModelSpec("runs/tiny-llama/pol"),
                               ModelSpec("runs/tiny-llama/nlg"))
    conversation = assistant.new_conversation()
    turn = assistant.respond(conversation, "I have had a cough for a week.")
    print(turn.reply, turn.state, turn.actions, turn.nlu.parse_ok)

A conversation is kept as a release-format dialogue (doctor and patient utterances with their
predicted `nlu` / `actions`), and every model input is a row of `views.to_nlu` / `views.to_pol`
built from it, so the formats see exactly what they see on the dataset. The state POL sees is
`views.cascade_pol_rows` folding the predicted NLU of every patient line so far (the dataset
layer's fold); NLG sees `views.cascade_nlg_rows`' predicted actions: the same builders the
cascaded evaluation uses. A model output that does not parse (or that the fold cannot take) is
reported on the turn and changes nothing: the state stays as it was, NLG gets no actions.
Generation is greedy (`predict.predict_rows`), so a turn is deterministic.

Models run through a `Backend`: anything with `predict(task, rows) -> records` (the records of
`predict.predict_rows`). `LocalBackend` loads a run folder, a model folder or a Hub id (at a
`revision`; an adapter brings its base); `Assistant.load` shares one base among adapters of it
and loads a multi-task run once (`adapters.SharedModels`; `Assistant.loading` says how).
`served.ServedBackend` sends a stage's prompts to a model name at an endpoint (`ModelSpec.
endpoint`), e.g. three adapters served by one vLLM. NLG's reply can stream (`respond(...,
stream=callback)`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Protocol

from . import predict
from .adapters import SharedModels
from .errors import MeditodError, UsageError
from .families import FAMILY_NAMES, get_family
from .records import Prediction
from .release import label_errors
from .runs import run_settings, run_tasks
from .tasks import TASK_NAMES
from .views import cascade_nlg_rows, cascade_pol_rows, to_nlu, to_pol

# The models never see the opening line (no supervised context starts before the first patient
# line, formats.context_utterances); it is what opens every MediTOD interview.
OPENING_LINE = "Hello, what brings you in today?"
OPENING_ACTIONS = [{"action": "nod_prompt_salutations"}]
# A patient line is cut to this many characters before any model sees it: the Llama chat format
# has no token budget (its 4-line window bounds everything but the line itself), and a line past
# this is no history-taking answer. The cut is reported on the turn.
MAX_PATIENT_CHARS = 2000
NO_REPLY = "(no reply: the NLG model's output was empty)"


class Backend(Protocol):
    """A model serving one or more tasks: dataset-shaped rows in, prediction records out.

    Records are `records.Prediction`s, as `predict.predict_rows` gives them: one per row, in
    order; a failure to parse is a record with `parse_ok` False, never an exception.
    """

    def predict(self, task: str, rows: list[dict]) -> list[Prediction]: ...


@dataclass(frozen=True)
class ModelSpec:
    """Where one module's model comes from, and how to run it."""

    source: str                       # run folder, model folder, Hub id (or a served endpoint)
    family: str | None = None         # default: the run's run_info.json
    revision: str | None = None       # Hub ids only: a branch, tag or commit
    batch_size: int = 16
    max_length: int | None = None     # default: the run's recipe, else the family's default
    max_new_tokens: int | None = None
    endpoint: str | None = None       # an OpenAI-compatible base URL serving it (source: the run)
    served_model: str | None = None   # its name at the endpoint (default: the task's name)


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
    batch_size: int = field(default=16, metadata={"help": "rows per generate call"})
    max_new_tokens: int | None = field(default=None, metadata={
        "help": "generation budget of every module (default: each run's recipe)"})
    endpoint: str | None = _optional(
        "OpenAI-compatible base URL serving the three models under three names (vLLM "
        "--enable-lora --lora-modules nlu=... pol=... nlg=...); --nlu/--pol/--nlg still name "
        "the runs (family, budgets)")
    served_models: str = field(default="nlu,pol,nlg", metadata={
        "help": "with --endpoint: the NLU, POL and NLG model names there, comma-separated "
                "(one name three times for a multi-task adapter)"})

    def specs(self) -> tuple[ModelSpec, ModelSpec, ModelSpec]:
        names = self.served_models.split(",")
        if self.endpoint and len(names) != len(TASK_NAMES):
            raise UsageError(f"--served_models {self.served_models!r}: give three names "
                             "(NLU,POL,NLG)")
        return tuple(ModelSpec(getattr(self, task), getattr(self, f"{task}_family"),
                               getattr(self, f"{task}_revision"), self.batch_size,
                               max_new_tokens=self.max_new_tokens, endpoint=self.endpoint,
                               served_model=name if self.endpoint else None)
                     for task, name in zip(TASK_NAMES, names))


class LocalBackend:
    """An in-process transformers model, loaded and run by `meditod_hub.predict`.

    The one place this module calls into predict.py: model loading, budgets, generation.
    """

    def __init__(self, spec: ModelSpec, task: str, models: SharedModels | None = None):
        self.spec = spec
        self.folder, self.info, self.family, self.budget = stage_settings(spec, task)
        folder, info = self.folder, self.info
        # [adapters] stages whose runs are adapters of one base share it (meditod_hub.adapters)
        self.stage = (models or SharedModels()).load(
            folder, self.family, info.get("quantization") is not None, task)
        self.model, self.tokenizer = self.stage.model, self.stage.tokenizer
        self.threads = predict.torch_threads()

    def predict(self, task: str, rows: list[dict],
                stream: Callable[[str], None] | None = None) -> list[Prediction]:
        """`stream`: called with each new piece of the output's text (one row only)."""
        if not rows:
            return []
        predict.torch_threads(self.threads)  # the app answers in worker threads
        streamer = callback_streamer(self.tokenizer, stream) if stream else None
        with self.stage.active() as model:  # [adapters] this stage's adapter switched on
            return predict.predict_rows(model, self.tokenizer, self.family, task, rows,
                                        self.budget, self.spec.batch_size, streamer=streamer)


def callback_streamer(tokenizer, callback: Callable[[str], None]):
    """transformers' TextStreamer (the generated text only, in whole words) handing each
    piece to `callback` instead of printing it."""
    from transformers import TextStreamer

    class CallbackStreamer(TextStreamer):
        def on_finalized_text(self, text: str, stream_end: bool = False) -> None:
            if text:
                callback(text)

    return CallbackStreamer(tokenizer, skip_prompt=True, skip_special_tokens=True)


def stage_settings(spec: ModelSpec, task: str):
    """A stage's run folder, its run_info.json ({} for a plain model folder), family and budget
    (the same for a local model and for one served at an endpoint)."""
    folder = resolve_source(spec)
    info, recipe = run_settings(folder)
    if spec.family is None and "family" not in info:
        raise UsageError(f"{spec.source} has no run_info.json: name its model family "
                         f"(one of {', '.join(FAMILY_NAMES)})")
    family = get_family(spec.family or info["family"])
    if "task" in info and task not in run_tasks(info):  # multi-task runs answer all three
        raise UsageError(f"{spec.source} was trained for {info['task']}, not {task}: "
                         f"give the {task} model here")
    return folder, info, family, family.budget(recipe, spec.max_length, spec.max_new_tokens)


def resolve_source(spec: ModelSpec) -> str:
    """A local folder for `spec.source`: itself, or the Hub repo downloaded at `spec.revision`."""
    path = Path(spec.source)
    if path.is_dir():
        if spec.revision:
            raise UsageError(f"{spec.source} is a local folder: a revision only applies to Hub "
                             "ids (drop it, or check the folder out at that revision)")
        return str(path)
    if path.exists():
        raise UsageError(f"{spec.source} is a file: give a run folder, a model folder or a Hub id")
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HFValidationError

    try:
        return snapshot_download(spec.source, revision=spec.revision)
    except HFValidationError:
        raise UsageError(f"{spec.source} is neither a folder nor a Hub id (ORG/NAME)") from None
    except Exception as exc:  # the Hub's own errors (missing repo, revision, no network) vary
        where = f" at revision {spec.revision}" if spec.revision else ""
        raise MeditodError(f"cannot download {spec.source}{where} ({type(exc).__name__}): check "
                           "the id, the revision and HF_TOKEN, or pass a local folder") from None


def load_backend(spec: ModelSpec, task: str, models: SharedModels | None = None) -> Backend:
    """The backend for `spec`. The seam for served models: an endpoint client with
    `predict(task, rows) -> records` is returned here for an http(s) source."""
    if spec.source.startswith(("http://", "https://")):
        raise UsageError(f"{spec.source}: give the run folder (or Hub id) as the model and the "
                         "server's URL as its endpoint (--endpoint)")
    if spec.endpoint:  # [adapters] a model name at an endpoint, e.g. vLLM's multi-LoRA layout
        from .served import ServedBackend

        folder, info, family, budget = stage_settings(spec, task)
        return ServedBackend(spec.endpoint, spec.served_model or task, folder, info, family,
                             budget)
    return LocalBackend(spec, task, models)


@dataclass(frozen=True)
class StageOutput:
    """One model's answer on one turn."""

    raw: str                 # the model's text
    value: list | str        # parsed (possibly partial) NLU items / actions / doctor text
    parse_ok: bool
    reason: str | None       # why it did not parse (or did not fit)
    used: bool               # whether the pipeline acted on it (folded, passed on, said)
    seconds: float           # wall time of the batch this turn was in


@dataclass(frozen=True)
class Turn:
    """Everything one patient line set off, for a caller to show or log."""

    patient_text: str        # as the models saw it (cut to MAX_PATIENT_CHARS)
    cut_chars: int           # characters cut from the end of the patient's line
    nlu: StageOutput
    state: dict              # the tracked state after this line (what POL saw)
    state_changed: bool
    pol: StageOutput
    actions: list            # the actions NLG saw ([] when POL's output was unusable)
    nlg: StageOutput
    reply: str
    notes: tuple[str, ...]   # what went wrong, in words, without dialogue text

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Conversation:
    """A dialogue in the release format, grown one patient line and one doctor reply at a time."""

    dialogue_id: str = "chat"
    opening: str = OPENING_LINE
    utterances: list[dict] = field(default_factory=list)
    nlu_labels: dict[str, list | None] = field(default_factory=dict)  # patient row id -> label
    turns: list[Turn] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.utterances:
            self.utterances.append({"uttr_id": 0, "speaker": "doctor", "text": self.opening,
                                    "actions": list(OPENING_ACTIONS)})

    @property
    def state(self) -> dict:
        return self.turns[-1].state if self.turns else {}

    def _add(self, speaker: str, text: str, label_key: str) -> dict:
        utterance = {"uttr_id": len(self.utterances), "speaker": speaker, "text": text,
                     label_key: []}  # labels are placeholders: rows' inputs never read them
        self.utterances.append(utterance)
        return utterance


class Assistant:
    """NLU, POL and NLG backends run as one system, per turn and across conversations."""

    def __init__(self, nlu: Backend, pol: Backend, nlg: Backend,
                 max_patient_chars: int = MAX_PATIENT_CHARS, loading: Sequence[str] = ()):
        self.backends = {"nlu": nlu, "pol": pol, "nlg": nlg}
        self.max_patient_chars = max_patient_chars
        self.loading = tuple(loading)  # how the models were loaded (shared base or why not)

    @classmethod
    def load(cls, nlu: ModelSpec, pol: ModelSpec, nlg: ModelSpec, **kwargs) -> Assistant:
        # [adapters] one SharedModels for the three stages: one base, one folder loaded once
        models = SharedModels()
        backends = [load_backend(spec, task, models)
                    for spec, task in zip((nlu, pol, nlg), TASK_NAMES)]
        return cls(*backends, loading=models.notes, **kwargs)

    def new_conversation(self, dialogue_id: str = "chat",
                         opening: str = OPENING_LINE) -> Conversation:
        return Conversation(dialogue_id, opening)

    def run_stage(self, task: str, rows: list[dict],
                  stream: Callable[[str], None] | None = None) -> tuple[list[Prediction], float]:
        """One batched call of a module's backend, and its wall time. `stream` (one row):
        the output's text as it is generated, where the backend can stream (else nothing)."""
        start = time.perf_counter()
        backend = self.backends[task]
        records = backend.predict(task, rows, stream=stream) if stream and isinstance(
            backend, LocalBackend) else backend.predict(task, rows)
        if len(records) != len(rows):
            raise MeditodError(f"the {task} backend answered {len(records)} records for "
                               f"{len(rows)} rows")
        return records, time.perf_counter() - start

    def respond(self, conversation: Conversation, patient_text: str,
                stream: Callable[[str], None] | None = None) -> Turn:
        """One turn; `stream` gets the NLG reply's text piece by piece as it is generated (the
        turn's `reply` is the whole, parsed one)."""
        return self.respond_many([conversation], [patient_text], stream)[0]

    def respond_many(self, conversations: Sequence[Conversation],
                     patient_texts: Sequence[str],
                     stream: Callable[[str], None] | None = None) -> list[Turn]:
        """One turn of several conversations, each module batched across them (`stream`: one
        conversation only)."""
        if stream and len(conversations) > 1:
            raise ValueError("a reply streams for one conversation at a time")
        if len({id(c) for c in conversations}) != len(conversations):
            raise ValueError("a conversation can take one patient line per batch")
        texts = [str(t)[:self.max_patient_chars] for t in patient_texts]
        cut = [len(str(t)) - len(x) for t, x in zip(patient_texts, texts)]
        for conversation, text in zip(conversations, texts):
            conversation._add("patient", text, "nlu")

        nlu_rows = [to_nlu(c.dialogue_id, c.utterances)[-1] for c in conversations]
        nlu_records, nlu_seconds = self.run_stage("nlu", nlu_rows)
        for conversation, row, record in zip(conversations, nlu_rows, nlu_records):
            conversation.nlu_labels[row["id"]] = record.prediction if record.parse_ok else None

        for conversation in conversations:  # the doctor line to predict, as a pol row target
            conversation._add("doctor", "", "actions")
        pol_rows = [cascade_pol_rows([to_pol(c.dialogue_id, c.utterances)[-1]], c.nlu_labels)[0]
                    for c in conversations]
        pol_records, pol_seconds = self.run_stage("pol", pol_rows)
        nlg_rows = [cascade_nlg_rows([row], {row["id"]: _label(record)})[0]
                    for row, record in zip(pol_rows, pol_records)]
        nlg_records, nlg_seconds = self.run_stage("nlg", nlg_rows, stream)

        turns = []
        for n, conversation in enumerate(conversations):
            turn = _turn(texts[n], cut[n], conversation.state,
                         (nlu_records[n], nlu_seconds), pol_rows[n], (pol_records[n], pol_seconds),
                         nlg_rows[n], (nlg_records[n], nlg_seconds))
            doctor = conversation.utterances[-1]
            doctor.update(text=turn.reply, actions=turn.actions)
            conversation.turns.append(turn)
            turns.append(turn)
        return turns


def _label(record: Prediction):
    return record.prediction if record.parse_ok else None


def _usable(kind: str, record: Prediction) -> bool:
    return record.parse_ok and not label_errors(kind, record.prediction)


def _turn(text: str, cut: int, state_before: dict, nlu: tuple, pol_row: dict, pol: tuple,
          nlg_row: dict, nlg: tuple) -> Turn:
    (nlu_record, nlu_s), (pol_record, pol_s), (nlg_record, nlg_s) = nlu, pol, nlg
    notes = []
    if cut:
        notes.append(f"the patient's line was cut to its first {len(text)} characters "
                     f"({cut} more were not read)")
    nlu_used = _usable("nlu", nlu_record)
    if not nlu_used:
        notes.append(f"NLU output unusable ({_why(nlu_record, 'nlu')}): the state is unchanged")
    pol_used = _usable("actions", pol_record)
    if not pol_used:
        notes.append(f"POL output unusable ({_why(pol_record, 'actions')}): NLG got no actions")
    reply = nlg_record.prediction.strip() if isinstance(nlg_record.prediction, str) else ""
    if not nlg_record.parse_ok:
        notes.append(f"NLG output did not parse ({nlg_record.reason})"
                     + ("; its text is used as it is" if reply else ""))
    if not reply:
        reply = NO_REPLY
    return Turn(
        patient_text=text, cut_chars=cut,
        nlu=_stage(nlu_record, nlu_used, nlu_s), state=pol_row["state"],
        state_changed=pol_row["state"] != state_before,
        pol=_stage(pol_record, pol_used, pol_s), actions=nlg_row["actions"],
        nlg=_stage(nlg_record, reply != NO_REPLY, nlg_s), reply=reply, notes=tuple(notes))


def _why(record: Prediction, kind: str) -> str:
    if not record.parse_ok:
        return record.reason or "did not parse"
    return "; ".join(label_errors(kind, record.prediction)[:2])


def _stage(record: Prediction, used: bool, seconds: float) -> StageOutput:
    return StageOutput(raw=record.raw, value=record.prediction, parse_ok=record.parse_ok,
                       reason=record.reason, used=used, seconds=seconds)
