"""The stages' models as one history-taking system: patient line -> NLU -> state -> POL -> NLG.

    from meditod_hub.apps.assistant import Assistant
    from meditod_hub.models.cascade import stages
    from meditod_hub.models.predictor import ModelSpec
    assistant = Assistant.load({task.name: ModelSpec(f"runs/tiny-llama/{task.name}")
                                for task in stages()})
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
Generation is greedy, so a turn is deterministic.

Each module is a `predictor.Predictor` (anything with `predict(rows) -> records`, one
`records.Prediction` per row): `Assistant.load` reaches a run folder, a model folder, a Hub id
at a revision or a served endpoint through `predictor.load_predictor`, as every command does.
A turn is `models.cascade.cascade` on the turn's rows, the function eval-cascade runs on a split;
the turn keeps every stage's output by its task's name (`turn.nlu`, ...), walking the stages,
and says the output of the stage whose label is text (NLG's) as the doctor's reply.
`Assistant.load` shares one base among stages whose runs are LoRA adapters of it and loads a
multi-task run once (`adapters.SharedModels`; `Assistant.loading` says how). With an endpoint,
each stage sends its prompts to its own model name there, e.g. three adapters served by one
vLLM. NLG's reply can stream (`respond(..., stream=callback)`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field

from meditod_hub.data import proof
from meditod_hub.data.tasks import LABELLING_TASKS, TASKS, Task
from meditod_hub.models.cascade import CascadeRun, Pipeline, cascade, listed
from meditod_hub.models.predictor import ModelSpec, Predictor
from meditod_hub.models.records import Prediction
from meditod_hub.models.runs import run_settings

# The models never see the opening line (no supervised context starts before the first patient
# line, formats.context_utterances); it is what opens every MediTOD interview.
OPENING_LINE = "Hello, what brings you in today?"
OPENING_ACTIONS = [{"action": "nod_prompt_salutations"}]
# A patient line is cut to this many characters before any model sees it: the Llama chat format
# has no token budget (its 4-line window bounds everything but the line itself), and a line past
# this is no history-taking answer. The cut is reported on the turn.
MAX_PATIENT_CHARS = 2000


def no_reply(task: Task) -> str:
    """The reply said when the text stage (`task`, NLG) wrote nothing."""
    return f"(no reply: the {task.display_name} model's output was empty)"


def not_a_patient_line(text: str) -> str | None:
    """Why `text` is no patient turn (the chat and the app skip it and say so), or None: blank
    says nothing, and a lone surrogate (undecodable bytes read from a terminal, or a `\\ud800`
    escape sent by a browser) is no text any tokenizer or file takes."""
    if not text.strip():
        return "that line is blank"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "that line is not UTF-8 text"
    return None


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
    state: dict              # the tracked state after this line (what POL saw)
    state_changed: bool
    actions: list            # the actions NLG saw ([] when POL's output was unusable)
    reply: str
    notes: tuple[str, ...]   # what went wrong, in words, without dialogue text
    outputs: dict[str, StageOutput]  # each stage's answer, by task name in cascade order

    def __getattr__(self, name: str) -> StageOutput:
        """A stage's output by its task's name (`turn.nlu`), so a registered stage needs no
        field of its own."""
        outputs = self.__dict__.get("outputs", {})
        if name in outputs:
            return outputs[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def to_dict(self) -> dict:
        """As saved and exported: each stage's output under its task's name."""
        record = asdict(self)
        outputs = record.pop("outputs")
        return {**record, **outputs}

    def stages(self) -> tuple[tuple[Task, StageOutput], ...]:
        """Each stage's task and output, in cascade order."""
        return tuple((TASKS[name], output) for name, output in self.outputs.items())


@dataclass
class Conversation:
    """A dialogue in the release format, grown one patient line and one doctor reply at a time."""

    dialogue_id: str = "chat"
    opening: str = OPENING_LINE
    utterances: list[dict] = field(default_factory=list)
    # patient row id -> the first stage's (NLU's) label of it: the cascade's `earlier` labels
    earlier_labels: dict[str, list | None] = field(default_factory=dict)
    turns: list[Turn] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.utterances:
            self.utterances.append({"uttr_id": 0, "speaker": "doctor", "text": self.opening,
                                    "actions": list(OPENING_ACTIONS)})

    @property
    def state(self) -> dict:
        return self.turns[-1].state if self.turns else {}

    def _add(self, task: Task, text: str) -> dict:
        """The utterance `task` predicts for; its label is a placeholder (no row's inputs
        read it)."""
        utterance = {"uttr_id": len(self.utterances), "speaker": task.speaker, "text": text,
                     task.target_column: []}
        self.utterances.append(utterance)
        return utterance


def _trained_on(spec: ModelSpec) -> str:
    info, _ = run_settings(spec.source) if not spec.endpoint else ({}, {})
    if info:
        return proof.of_record(info).describe()
    if spec.endpoint:
        return f"what its server's model {spec.served_model or spec.source!r} was trained on"
    return f"what the card of {spec.source} says"


def trained_on(specs: Mapping[str, ModelSpec]) -> str:
    """What the stages' models (`specs`, by task name) were trained on, in one phrase (banners,
    the opening line): each run's recorded provenance, never a claim the kit cannot check."""
    said = {task: _trained_on(spec) for task, spec in specs.items()}
    if len(set(said.values())) == 1:
        return (f"{listed([task.upper() for task in said])} trained on "
                f"{next(iter(said.values()))}")
    return "; ".join(f"{task.upper()} trained on {what}" for task, what in said.items())


class Assistant(Pipeline):
    """The stages' predictors run as one system, per turn and across conversations."""

    def __init__(self, predictors: Mapping[str, Predictor],
                 max_patient_chars: int = MAX_PATIENT_CHARS, loading: Sequence[str] = (),
                 trained_on: str = "data this assistant does not know"):
        super().__init__(predictors, loading)
        self.max_patient_chars = max_patient_chars
        self.trained_on = trained_on   # `trained_on(specs)`: the banner and opening line say it

    @classmethod
    def load(cls, specs: Mapping[str, ModelSpec], **kwargs) -> Assistant:
        return super().load(specs, trained_on=trained_on(specs), **kwargs)

    def new_conversation(self, dialogue_id: str = "chat",
                         opening: str = OPENING_LINE) -> Conversation:
        return Conversation(dialogue_id, opening)

    def respond(self, conversation: Conversation, patient_text: str,
                stream: Callable[[str], None] | None = None) -> Turn:
        """One turn; `stream` gets the reply's text (NLG's) piece by piece as it is generated
        (the turn's `reply` is the whole, parsed one)."""
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
        if len({c.dialogue_id for c in conversations}) != len(conversations):
            raise ValueError("conversations in one batch need distinct dialogue ids")
        texts = [str(t)[:self.max_patient_chars] for t in patient_texts]
        cut = [len(str(t)) - len(x) for t, x in zip(patient_texts, texts)]
        for conversation, text in zip(conversations, texts):
            conversation._add(LABELLING_TASKS["patient"], text)
            # the doctor line to predict: the POL and NLG row
            conversation._add(LABELLING_TASKS["doctor"], "")

        # this turn's rows of each task: the last of each conversation's views
        rows = {task.name: [task.view(c.dialogue_id, c.utterances)[-1] for c in conversations]
                for task in TASKS.values()}
        earlier = {i: label for c in conversations for i, label in c.earlier_labels.items()}
        run = cascade(self, rows, gold_inputs=False, earlier=earlier, stream=stream)
        for conversation, record in zip(conversations, run.first.cascaded):
            conversation.earlier_labels[record.id] = record.label

        turns = []
        for n, conversation in enumerate(conversations):
            turn = _turn(texts[n], cut[n], conversation.state, run, n)
            doctor = conversation.utterances[-1]
            doctor.update(text=turn.reply, actions=turn.actions)
            conversation.turns.append(turn)
            turns.append(turn)
        return turns


def _usable(task: Task, record: Prediction) -> bool:
    return record.parse_ok and not task.label_errors(record.prediction)


def _text(record: Prediction) -> str:
    return record.prediction.strip() if isinstance(record.prediction, str) else ""


def _built(run: CascadeRun, labels: Task, n: int):
    """What the cascade built from `labels`' predicted labels for the `n`th conversation: the
    input of the stage after it (the patient's labels: the state; the doctor's: the actions)."""
    stage = next(s for s in run.stages.values() if s.task.upstream == labels.name)
    return stage.rows[n][stage.task.input_column]


def _lost(run: CascadeRun, task: Task) -> str:
    """What an unusable structured label costs the turn."""
    if task is LABELLING_TASKS["patient"]:
        return "the state is unchanged"  # the patient's labels fold into the state
    after = [s.task for s in run.stages.values() if s.task.upstream == task.name]
    return "; ".join(f"{t.display_name} got no {t.input_column}" for t in after) \
        or "no stage reads it"


def _turn(text: str, cut: int, state_before: dict, run: CascadeRun, n: int) -> Turn:
    """The turn of the `n`th conversation, walking the cascade's stages: a structured label is
    used where it is usable; the text stage's (NLG's) text is the reply."""
    notes = []
    if cut:
        notes.append(f"the patient's line was cut to its first {len(text)} characters "
                     f"({cut} more were not read)")
    outputs = {}
    for stage in run.stages.values():
        task, record = stage.task, stage.cascaded[n]
        if task.structured:
            used = _usable(task, record)
            if not used:
                notes.append(f"{task.display_name} output unusable ({_why(record, task)}): "
                             f"{_lost(run, task)}")
        else:
            used = bool(_text(record))
            if not record.parse_ok:
                notes.append(f"{task.display_name} output did not parse ({record.reason})"
                             + ("; its text is used as it is" if used else ""))
        outputs[task.name] = _stage(record, used, stage.seconds)
    state = _built(run, LABELLING_TASKS["patient"], n)
    said = next(stage for stage in run.stages.values() if not stage.task.structured)
    return Turn(patient_text=text, cut_chars=cut, state=state, state_changed=state != state_before,
                actions=_built(run, LABELLING_TASKS["doctor"], n),
                reply=_text(said.cascaded[n]) or no_reply(said.task),
                notes=tuple(notes), outputs=outputs)


def _why(record: Prediction, task: Task) -> str:
    if not record.parse_ok:
        return record.reason or "did not parse"
    return "; ".join(task.label_errors(record.prediction)[:2])


def _stage(record: Prediction, used: bool, seconds: float) -> StageOutput:
    return StageOutput(raw=record.raw, value=record.prediction, parse_ok=record.parse_ok,
                       reason=record.reason, used=used, seconds=seconds)
