"""Held-out state accuracy: does an NLU model put what a patient says into the dialogue state?

    meditod eval-state --nlu runs/smollm2-135m/nlu            # -> runs/smollm2-135m/nlu/eval/state/test
    meditod eval-state --nlu runs/smollm2-135m/nlu --set dev  # the set recipes are chosen on
    meditod eval-state --nlu runs/smollm2-135m/nlu --no_constrained --out out/state-free

Two sets of invented patient lines beside this module, each line the answer to a doctor's
question, with the gold CMAS state change it makes: denials, symptom attributes (onset,
location, severity, ...), medications, habits, family history, allergies, tests, travel, lines
that say several things at once, bare yes/no answers and hedged ones. `heldout_dev.json` (52
lines) is for choosing (recipes, steps, data); `heldout_test.json` is for reporting, and nothing
is chosen by looking at it (the demo's floor applies to it). They were written for this check:
no corpus the kit generates says any of them (tests/test_state_accuracy.py holds that), and
nothing trains on them. Each line is labelled by the model as the assistant labels a chat turn (the same
predictor, by default under the CMAS grammar with the medical values of the run's training
split), and its label folded into a state by `data.state`. A line is the answer to its question
where a chat would ask it: a line that answers the doctor's opening question ("what brings you
in?", covers `opening`) is the conversation's first exchange; every other line comes after
OPENING_EXCHANGE, a greeting and a line that says nothing to label, as a chat's questions come
after its opening (as a first exchange, "Never, not once." to "Have you ever smoked?" reads as
the chief complaint that every first exchange a model trained on was). Scores:

- exact state: lines whose predicted state equals the gold one, entry for entry
- slots: precision and recall of (slot key, head value) pairs, e.g. (negative_habit, tobacco
  smoking): polarity and concept both have to be right
- attributes: precision and recall of (slot key, head value, attribute, value) tuples, one per
  element of a list attribute
- denials: of the lines whose gold state denies something (negative_*, unavail_*), those whose
  predicted denials are exactly the gold ones
- parse failures: answers that did not parse, scored as an empty state (never a crash)
- by kind: the exact state of the lines of each kind (a line's `covers`: denial, onset, ...)

The state a line makes is what the assistant shows and what POL reads, so this is the
assistant's quality as a patient sees it, on sentences it never trained on. The figures are
about these invented lines only: they are not MediTOD's, nor comparable with the paper's.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from meditod_hub.data import proof
from meditod_hub.data.state import DialogueState
from meditod_hub.data.tasks import LABELLING_TASKS
from meditod_hub.data.views import to_nlu
from meditod_hub.errors import UsageError
from meditod_hub.files import atomic_write, output_folder
from meditod_hub.models.cascade import run_vocabulary
from meditod_hub.models.constrained.vocabulary import VOCABULARY_DEFAULT, resolve_vocabulary
from meditod_hub.models.predictor import DecodeOptions, ModelSpec, load_predictor
from meditod_hub.models.runs import run_settings

HELDOUT_SETS = ("dev", "test")  # heldout_<set>.json beside this module
# What comes before a line that does not answer the opening question: no slot, no detail.
OPENING_EXCHANGE = (("doctor", "Hello, what brings you in today?"),
                    ("patient", "Hi, I haven't been feeling well lately."))
DENIAL_PREFIXES = ("negative_", "unavail_")
RESULTS_FILE, LINES_FILE = "state_accuracy.json", "state_lines.jsonl"


@dataclass
class EvalStateArguments:
    nlu: str = field(metadata={"help": "NLU model: run folder, model folder or Hub id"})
    set: str = field(default="test", metadata={
        "choices": HELDOUT_SETS, "help": "the held-out lines: dev (for choosing recipes and "
                                         "steps) or test (for reporting: nothing is chosen on it)"})
    out: Path | None = field(default=None, metadata={
        "help": "folder for state_accuracy.json and state_lines.jsonl (default: "
                "<run>/eval/state/<set>, or <run>/eval/state-free/<set> without the grammar)"})
    constrained: bool = field(default=True, metadata={
        "help": "decode under the CMAS grammar, as the assistant does (--no_constrained: free "
                "text, as the paper's evaluation)"})
    vocabulary: str = field(default=VOCABULARY_DEFAULT, metadata={
        "help": "under the grammar, the medical values NLU may say: train (the run's training "
                "split), none (free) or a vocabulary file"})
    batch_size: int = field(default=16, metadata={"min": 1, "help": "rows per generate call"})
    max_new_tokens: int | None = field(default=None, metadata={
        "min": 1, "help": "each answer's budget (default: the budget the run trained with, "
                          "run_info.json)"})
    family: str | None = field(default=None, metadata={
        "help": "model family (default: run_info.json)"})
    limit: int | None = field(default=None, metadata={
        "min": 1, "help": "only the first N lines (smoke runs)"})


def heldout_lines(which: str = "test") -> list[dict]:
    """The held-out lines of a set (HELDOUT_SETS): {id, covers, doctor, patient, state}."""
    if which not in HELDOUT_SETS:
        raise UsageError(f"no held-out set {which!r}: choose one of {', '.join(HELDOUT_SETS)}")
    text = resources.files(__package__).joinpath(f"heldout_{which}.json").read_text(encoding="utf-8")
    return json.loads(text)


def line_rows(lines: Sequence[dict]) -> list[dict]:
    """Each line as the NLU row the dataset's own view makes of it, as the last patient turn of
    [OPENING_EXCHANGE, question, line], or [question, line] for a line that answers the opening
    question (module docstring)."""
    rows = []
    for line in lines:
        turns = [] if "opening" in line["covers"] else list(OPENING_EXCHANGE)
        turns += [("doctor", line["doctor"]), ("patient", line["patient"])]
        utterances = [{"uttr_id": n, "speaker": speaker, "text": text,
                       LABELLING_TASKS[speaker].target_column: []}
                      for n, (speaker, text) in enumerate(turns)]
        rows.append(to_nlu(f"heldout-{line['id']}", utterances)[-1])
    return rows


def fold(items: list | None) -> dict:
    """The state a label makes from an empty one (an unparsed answer: none)."""
    return DialogueState().update(items or []).render() if isinstance(items, list) else {}


def _slots(state: dict) -> set[tuple]:
    return {(key, entry.get("value")) for key, entries in state.items() for entry in entries}


def _attributes(state: dict) -> set[tuple]:
    found = set()
    for key, entries in state.items():
        for entry in entries:
            for name, value in entry.items():
                if name == "value":
                    continue
                for one in value if isinstance(value, list) else [value]:
                    found.add((key, entry.get("value"), name, one))
    return found


def _denials(state: dict) -> set[tuple]:
    return {pair for pair in _slots(state) if pair[0].startswith(DENIAL_PREFIXES)}


def _ratio(hits: int, total: int) -> float:
    return hits / total if total else 0.0


def score(gold_states: Sequence[dict], predicted_states: Sequence[dict],
          parsed: Sequence[bool], kinds: Sequence[Sequence[str]] | None = None) -> dict:
    """The figures of the module docstring, for aligned gold and predicted states; `kinds`,
    each line's `covers`, adds the exact state of each kind's lines."""
    counts = {"slots": [0, 0, 0], "attributes": [0, 0, 0]}  # hits, predicted, gold
    exact = denial_lines = denials_right = 0
    for gold, predicted in zip(gold_states, predicted_states, strict=True):
        exact += _canonical(gold) == _canonical(predicted)
        for name, of in (("slots", _slots), ("attributes", _attributes)):
            want, got = of(gold), of(predicted)
            counts[name][0] += len(want & got)
            counts[name][1] += len(got)
            counts[name][2] += len(want)
        if _denials(gold):
            denial_lines += 1
            denials_right += _denials(gold) == _denials(predicted)
    results = {"lines": len(gold_states), "exact_state_accuracy": _ratio(exact, len(gold_states)),
               "exact_states": exact}
    for name, (hits, predicted, gold) in counts.items():
        results[f"{name}_precision"] = _ratio(hits, predicted)
        results[f"{name}_recall"] = _ratio(hits, gold)
    results.update(denial_accuracy=_ratio(denials_right, denial_lines), denial_lines=denial_lines,
                   parse_failures=sum(not ok for ok in parsed))
    if kinds is not None:
        right = [_canonical(g) == _canonical(p) for g, p in zip(gold_states, predicted_states)]
        results["by_kind"] = {
            kind: {"lines": len(hits), "exact_state_accuracy": _ratio(sum(hits), len(hits))}
            for kind in sorted({k for line in kinds for k in line})
            for hits in [[ok for ok, line in zip(right, kinds, strict=True) if kind in line]]}
    return results


def _canonical(state: dict) -> dict:
    """A state with its entries (and list values) in a fixed order: two states that hold the
    same entries are equal whatever order a model said them in."""
    return {key: sorted(json.dumps({name: sorted(value) if isinstance(value, list) else value
                                    for name, value in entry.items()}, sort_keys=True)
                        for entry in entries)
            for key, entries in state.items() if entries}


def evaluate_state(args: EvalStateArguments) -> dict:
    """Label every held-out line with the NLU model, score the states, write the results and
    each line's outcome into the output folder; returns the results."""
    if args.vocabulary != VOCABULARY_DEFAULT and not args.constrained:
        raise UsageError("--vocabulary applies under the grammar: drop it, or drop "
                         "--no_constrained")
    out = Path(args.out) if args.out else \
        Path(args.nlu) / "eval" / ("state" if args.constrained else "state-free") / args.set
    output_folder(out, [RESULTS_FILE, LINES_FILE], purpose="eval-state",
                  input_folders=[args.nlu] if args.out else [])
    vocabulary = None
    if args.constrained:
        vocabulary = run_vocabulary(args.nlu) if args.vocabulary == VOCABULARY_DEFAULT \
            else resolve_vocabulary(args.vocabulary, None)
    spec = ModelSpec(args.nlu, args.family, decode=DecodeOptions(
        args.batch_size, max_new_tokens=args.max_new_tokens, constrained=args.constrained,
        vocabulary=vocabulary))
    predictor = load_predictor(spec, LABELLING_TASKS["patient"])  # NLU, resolved once
    lines = heldout_lines(args.set)[:args.limit]
    records = predictor.predict(line_rows(lines))
    gold = [line["state"] for line in lines]
    predicted = [fold(record.label) for record in records]
    results = score(gold, predicted, [record.parse_ok for record in records],
                    [line["covers"] for line in lines])
    info, _ = run_settings(args.nlu)
    results.update(
        model=str(args.nlu), constrained=args.constrained,
        trained_on=proof.of_record(info).describe() if info else "unrecorded",
        set=args.set,
        evaluated_on=f"the kit's {len(lines)} held-out {args.set} patient lines (invented; "
                     "not MediTOD)")
    outcomes = [json.dumps({"id": line["id"], "exact": _canonical(g) == _canonical(p),
                            "gold": g, "predicted": p, "parse_ok": r.parse_ok, "raw": r.raw})
                for line, g, p, r in zip(lines, gold, predicted, records)]
    atomic_write(out / LINES_FILE, "\n".join(outcomes) + "\n", purpose="eval-state")
    atomic_write(out / RESULTS_FILE, json.dumps(results, indent=2) + "\n", purpose="eval-state")
    results["out"] = str(out)
    return results


def table(results: dict) -> str:
    """The figures as a few aligned lines."""
    return "\n".join([
        f"exact state        {results['exact_state_accuracy']:.3f}  "
        f"({results['exact_states']} of {results['lines']} lines)",
        f"slots              precision {results['slots_precision']:.3f}  "
        f"recall {results['slots_recall']:.3f}",
        f"attributes         precision {results['attributes_precision']:.3f}  "
        f"recall {results['attributes_recall']:.3f}",
        f"denials            {results['denial_accuracy']:.3f}  "
        f"(of {results['denial_lines']} lines that deny something)",
        f"parse failures     {results['parse_failures']}",
        "by kind (exact)    " + ", ".join(f"{kind} {figures['exact_state_accuracy']:.2f}"
                                          f"/{figures['lines']}"
                                          for kind, figures in results.get("by_kind", {}).items())])
