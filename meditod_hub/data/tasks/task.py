"""What a task is: the fields every task module (`nlu.py`, `pol.py`, `nlg.py`) fills in, so that
views, formats, constrained decoding, few-shot prompts, agreement, cards, scoring and the cascade
read a task's fields and never branch on its name nor keep a table by its columns or speaker. The
registry is `meditod_hub.data.tasks`.

A task's label is what its models predict: NLU item lists (`nlu` column), doctor action lists
(`actions`) or the doctor's text (`response`). Predictions handed to `score` are labels aligned
with the gold rows; None marks one that did not parse (scored as empty, counted as a parse
failure). Metrics are in docs/format.md ("Metrics") and `meditod_hub.data.metrics`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from meditod_hub.data.metrics.tuples import Tuples
from meditod_hub.data.tasks.language import LabelSchema, Language


@dataclass(frozen=True)
class Metric:
    """One reported number: where it sits in results.json and how cards show it."""

    key: str    # path in results.json, nested keys joined with dots
    type: str   # model-index metric id
    name: str   # what a results table calls it
    fmt: str = ".4f"


F1_METRICS = tuple(Metric(f"{prefix}{stat}", stat, f"{label} {stat_name}")
            for prefix, label in (("", "Overall"), ("medical.", "Medical"),
                                  ("non_medical.", "Non-medical"))
            for stat, stat_name in (("precision", "precision"), ("recall", "recall"), ("f1", "F1")))
JOINT_ACCURACY = Metric("joint_accuracy", "accuracy", "Joint accuracy")
PRECISION_AT_K = tuple(Metric(f"precision_at_k.{k}", "precision_at_k", f"P@{k}")
                       for k in ("1", "4", "8", "inf"))
NLG_METRICS = (Metric("bleu2", "bleu", "BLEU-2 (NLTK, x100)", ".2f"),
        Metric("bleu4", "bleu", "BLEU-4 (NLTK, x100)", ".2f"),
        Metric("rouge1", "rouge", "ROUGE-1"), Metric("rougeL", "rouge", "ROUGE-L"),
        Metric("sacrebleu.score", "sacrebleu", "sacreBLEU", ".2f"),
        Metric("bertscore.f1", "bertscore", "BERTScore F1"))


@dataclass(frozen=True)
class ParseResult:
    """A model output parsed as far as it is well formed.

    Parsers never raise: a truncated or malformed output keeps its complete leading items and
    says why it is not ok, so callers can count parse failures instead of crashing.
    """

    value: list | str   # NLU item list / action list (possibly partial), or str for NLG
    ok: bool
    reason: str | None  # why not ok (None when ok)


@dataclass(frozen=True)
class SpanColumn:
    """How the span grammar (`spans`) writes one column (a task's label or what it reads beside
    the dialogue): its markers, its text without them, and, for a label, its parser."""

    markers: tuple[str, str]
    text: Callable[[object], str]
    parse: Callable[[str], ParseResult] | None = None


@dataclass(frozen=True)
class Input:
    """What a task reads beside the dialogue: a column of its rows, and how each format shows it
    (the formats read these fields and keep no table of input columns)."""

    column: str
    span_column: SpanColumn  # how a span-family body (and PPTOD's tail) writes it
    span_key: str            # what names it in a Flan-T5 / BioGPT body
    chat_block: str          # the chat format's header over it
    chat_history: bool       # whether the chat format also shows `[dialog history]`
    fewshot_block: str       # the few-shot prompt's header over it
    # A dialogue state (slot -> entries) whose oldest entries a token budget may drop.
    thinned_to_fit: bool = False


@dataclass(frozen=True, kw_only=True, eq=False)
class Task:
    """One task, all of its meaning in one place (its module under data/tasks/). A task is one
    object, registered once: it compares and hashes by identity (its features are a dict)."""

    name: str
    speaker: str              # whose utterance the task predicts (a release utterance's speaker)
    target_column: str        # the dataset column holding the label (NLU, POL: the utterance key)
    item_head: str | None     # the key every label item carries (None: NLG's text)
    description: str
    # Its view: the rows of its dataset config for one dialogue (dialogue id, utterances), and
    # their columns in `datasets.Features.to_dict()` form.
    view: Callable[[str, list[dict]], list[dict]]
    features: dict[str, dict]
    # Its scoring (gold labels, predictions, gold rows, options -> the results dict): the
    # headline, model-index and chart metrics of what it returns.
    scorer: Callable[..., dict]
    headline: str             # key of the metric a one-line summary reports
    metrics: tuple[Metric, ...]
    chart_metrics: tuple[str, ...]  # keys of the metrics a chart of this task shows
    # How the span grammar writes its label (`spans`).
    span_column: SpanColumn
    # Its wording: the chat format's system message, the span formats' task prefixes (the
    # authors' flan-t5 / biogpt one and upstream PPTOD's), the few-shot prompt's header and rules.
    system_message: str
    authors_prefix: str
    pptod_prefix: str
    fewshot_header: str
    fewshot_rules: tuple[str, ...]
    # What the task reads beside the dialogue (POL: the state, NLG: the doctor's actions), and
    # the task whose predicted labels a cascade builds it from (POL: NLU, NLG: POL), with how its
    # rows are rebuilt from those labels (rows, upstream labels by row id -> rows).
    reads: Input | None = None
    upstream: str | None = None
    cascade_builder: Callable[[Sequence[dict], dict], list[dict]] | None = None
    # Where a label item keeps its slots: under this key (NLU items), or None for beside the
    # head (a doctor action's slots are its other keys).
    slots_key: str | None = None
    # Whether its labels are the release's annotation of its speaker's utterances, under its
    # target column (NLU, POL): what the annotation app labels, agreement compares and the
    # assistant writes into its conversations (`tasks.LABELLING_TASKS`). A task whose label is
    # derived from the release is not.
    annotated: bool = False
    # What makes a structured label, as a model gave it, unusable by the state fold and the
    # metrics: the release's error-level checks of the label's key (`release`).
    release_check: Callable[[object], list[str]] | None = None
    # What one slot entry of a structured label says, as inter-annotator agreement compares it:
    # (attribute path, value) pairs, names only in the path (`evaluation.agreement`).
    entry_paths: Callable[[dict], Iterable[tuple[tuple[str, ...], str | None]]] | None = None
    # The tuple sets a structured label's metrics compare (`metrics.tuples`; `.all` is every
    # tuple): eval-cascade counts a row wrong unless its tuples equal the gold ones.
    tuples: Callable[[list], Tuples] | None = None
    # The CMAS language of a structured label, its heads and slots (`language`): what constrained
    # decoding writes its grammars from.
    language: Language | None = None
    # What a structured task's few-shot prompt defines (intent -> description; (slot,
    # description, ((attribute, description, examples), ...)), ...), and its answer's view of a
    # label and back (NLU: the status as an attribute; None: the label itself). `fewshot.py`.
    fewshot_intents: dict[str, str] | None = None
    fewshot_slots: tuple = ()
    to_answer: Callable[[list], list] | None = None
    from_answer: Callable[[list], list] | None = None

    @property
    def display_name(self) -> str:
        """What tables, charts, reports and the apps call the task: its name in capitals."""
        return self.name.upper()

    @property
    def input_column(self) -> str | None:
        """The column of its rows the task reads beside the dialogue (None: the dialogue only)."""
        return None if self.reads is None else self.reads.column

    @property
    def structured(self) -> bool:
        return self.item_head is not None

    @property
    def empty_label(self) -> list | str:
        """What a prediction that did not parse (or was never made) holds."""
        return [] if self.structured else ""

    @property
    def label_shape(self) -> str:
        """What a label of this task is, as an error message says it."""
        if not self.structured:
            return "a string, the doctor's text"
        slots = f", its `{self.slots_key}` an object" if self.slots_key else ""
        return f"a list of objects, each with a string `{self.item_head}`{slots}"

    def label_problem(self, value) -> str | None:
        """How `value` differs from this task's labels' shape (`label_shape`), else None: the
        scorer would read a value of another shape as something it is not."""
        if not self.structured:
            return None if isinstance(value, str) else f"it is {json_kind(value)}"
        if not isinstance(value, list):
            return f"it is {json_kind(value)}"
        for n, item in enumerate(value, 1):
            if not isinstance(item, dict):
                return f"item {n} is {json_kind(item)}"
            if not isinstance(item.get(self.item_head), str):
                return f"item {n} has no string `{self.item_head}`"
            if self.slots_key is not None and not isinstance(item.get(self.slots_key, {}), dict):
                return f"item {n}'s `{self.slots_key}` is {json_kind(item[self.slots_key])}"
        return None

    def item_slots(self, item: dict) -> dict:
        """One label item's slots (slot key -> entries), wherever this task's labels keep them."""
        if self.slots_key is not None:
            slots = item.get(self.slots_key)
            return slots if isinstance(slots, dict) else {}
        return {key: value for key, value in item.items() if key != self.item_head}

    def label_schema(self, status_attributes: bool = False) -> LabelSchema:
        """The CMAS language of this task's labels, read from cmas now (a structured task's)."""
        if self.language is None:
            raise ValueError(f"{self.name} has no structured labels, so no CMAS language")
        heads, slots = self.language(status_attributes)
        return LabelSchema(self.item_head, heads, self.slots_key, slots)

    def label_errors(self, label) -> list[str]:
        """Why `label` is unusable by the state fold and the metrics (none: usable); a label of
        a task without a release check (NLG's text) is always usable."""
        return [] if self.release_check is None else self.release_check(label)

    @property
    def headline_metric(self) -> Metric:
        return next(m for m in self.metrics if m.key == self.headline)

    def cascade_rows(self, rows: list[dict], upstream_labels: dict) -> list[dict]:
        """Rows whose `input_column` is built from the upstream task's predicted labels (by row
        id; None for one that did not parse): the paper's pipeline."""
        if self.cascade_builder is None:
            raise ValueError(f"{self.name} is not built from an upstream task's labels")
        return self.cascade_builder(rows, upstream_labels)

    def gold(self, rows: Sequence[dict]) -> list:
        return [row[self.target_column] for row in rows]

    def score(self, gold_rows: Sequence[dict], predictions: Sequence, *, judge=None,
              pak_mode: str = "exact", bertscore_model: str | None = None,
              bertscore_layer: int | None = None, seed: int = 0) -> dict:
        """Every score of this task: the dict results.json holds (without task and split).

        `gold_rows` need the target column and `id` (POL also `dialogue_id`, for P@K);
        `predictions` are labels aligned with them, None for one that did not parse.
        """
        if len(predictions) != len(gold_rows):
            raise ValueError(f"{len(predictions)} predictions for {len(gold_rows)} gold rows")
        return self.scorer(self.gold(gold_rows), predictions, gold_rows, judge=judge,
                           pak_mode=pak_mode, bertscore_model=bertscore_model,
                           bertscore_layer=bertscore_layer, seed=seed)


def json_kind(value) -> str:
    """A JSON value's kind, as a message names it (never the value: it may quote a dialogue)."""
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)
