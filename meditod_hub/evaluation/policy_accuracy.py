"""Held-out policy accuracy: does a POL model pick a next doctor action a clinician would accept?

    meditod eval-policy --pol runs/smollm2-135m/pol            # -> runs/smollm2-135m/pol/eval/policy/test
    meditod eval-policy --pol runs/smollm2-135m/pol --set dev  # the set recipes are chosen on
    meditod eval-policy --pol runs/smollm2-135m/pol --no_constrained --out out/policy-free

Two sets of invented interview moments beside this module (`policy_dev.json`, 36 moments, for
choosing; `policy_test.json`, 72, for reporting: nothing is chosen by looking at it), respiratory
and a few musculoskeletal, at every stage of a history (`moments.STAGES`: just after the chief
complaint, mid-history, after denials, near the end). Each moment is the state so far, the lines
so far and the SET of next doctor actions a clinician would accept: `acceptable`, a list of
alternatives, each a list of actions exactly as POL predicts them (`actions` labels: CMAS action
types, slots, values and check types). Each moment is built into the dataset's own POL row
(`moments.moment_rows`) and labelled by the model, by default under the CMAS grammar with the
medical values of the run's training split, as the assistant runs it.

Each moment was cut from an invented interview (its lines so far, the state they fold to, and
the doctor line the interview went on with, `actions`, one of the acceptable ones), and its
alternatives follow one rule, none asking what the state holds: each present finding, with the
check types that fit it (no colour of a fever); the domain's symptoms not yet in the state, asked
together or alone; after the chief complaint's own moment, also the background, each group one
alternative (habits, medical history, medications, exposures, family history, tests, travel);
near the end, also each diagnosis the interview fits. Scores:

- acceptable: moments whose predicted actions match an acceptable alternative. Actions are read
  as units, one per (action, slot, value, check type) (an entry without checks is one unit with no
  check type; an action without slots, such as chit-chat, is one unit (action, -, -, -)); the
  values a check offers ("dry or productive?") are not compared. A courtesy unit (chit-chat,
  nod_prompt_salutations: "Okay.", "I'm sorry to hear that.") said beside a question is left
  out. The prediction matches when the set of its remaining units is NOT EMPTY and a SUBSET of
  one alternative's units: asking part of an acceptable question is acceptable, adding anything
  (an invented action, another check, a second question from another alternative) is not, and a
  turn that only nods matches nothing (no moment is one a clinician would fill with a nod).
- inquire rate: of the moments where every alternative inquires (all but those near the end where
  a diagnosis may be said), those where POL inquires (an `inquire` action naming a slot entry:
  "inquire" alone asks nothing), not chit-chat.
- repeat rate: moments where POL asks about something the state already holds: an inquire unit
  on (slot, value) that the state has an entry for, under any polarity, asked with no check (the
  head is known: "Any fever?" after "no fever") or with a check the entry already answers (the
  attribute the check type names, or one of the attributes its family names: characteristics ->
  positive/negative_characteristics, ana_factors -> the factors). Slots without a head (travel,
  basic_information) are held once the state has an entry for them.
- parse failures: outputs that did not parse, and unusable ones (parsed, but the fold or the
  metrics cannot take them: `release.action_label_errors`): both scored as no action, as the assistant
  acts on neither.
- by stage, by domain: the acceptable rate of each stage's and each domain's moments.

The figures are about these invented moments only: they are not MediTOD's, nor comparable with
the paper's. A model trained on the kit's synthetic corpus learnt a doctor who asks at random:
this check says how far that is from a clinician's next question.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from meditod_hub.data import proof
from meditod_hub.data.cmas import CHECK_TYPE_ATTRIBUTES, INQUIRE_ACTION, SLOT_ATTRIBUTES, split_slot_key
from meditod_hub.data.release import action_label_errors
from meditod_hub.data.tasks import LABELLING_TASKS
from meditod_hub.errors import UsageError
from meditod_hub.evaluation.moments import DOMAINS, SETS, STAGES, heldout_items, moment_rows
from meditod_hub.files import atomic_write, output_folder
from meditod_hub.models.cascade import run_vocabulary
from meditod_hub.models.constrained.vocabulary import VOCABULARY_DEFAULT, resolve_vocabulary
from meditod_hub.models.predictor import DecodeOptions, ModelSpec, load_predictor
from meditod_hub.models.runs import run_settings

CHECK = "policy"  # policy_<set>.json beside this module
COURTESY_ACTIONS = ("chit-chat", "nod_prompt_salutations")
DIAGNOSIS_ACTION = "diagnosis"
RESULTS_FILE, MOMENTS_FILE = "policy_accuracy.json", "policy_moments.jsonl"


@dataclass
class EvalPolicyArguments:
    pol: str = field(metadata={"help": "POL model: run folder, model folder or Hub id"})
    set: str = field(default="test", metadata={
        "choices": SETS, "help": "the held-out moments: dev (for choosing recipes and steps) or "
                                 "test (for reporting: nothing is chosen on it)"})
    out: Path | None = field(default=None, metadata={
        "help": "folder for policy_accuracy.json and policy_moments.jsonl (default: "
                "<run>/eval/policy/<set>, or <run>/eval/policy-free/<set> without the grammar)"})
    constrained: bool = field(default=True, metadata={
        "help": "decode under the CMAS grammar, as the assistant does (--no_constrained: free "
                "text, as the paper's evaluation)"})
    vocabulary: str = field(default=VOCABULARY_DEFAULT, metadata={
        "help": "under the grammar, the medical values POL may say: train (the run's training "
                "split), none (free) or a vocabulary file"})
    batch_size: int = field(default=16, metadata={"min": 1, "help": "rows per generate call"})
    max_new_tokens: int | None = field(default=None, metadata={
        "min": 1, "help": "each answer's budget (default: the budget the run trained with, "
                          "run_info.json)"})
    family: str | None = field(default=None, metadata={
        "help": "model family (default: run_info.json)"})
    limit: int | None = field(default=None, metadata={
        "min": 1, "help": "only the first N moments (smoke runs)"})


def policy_moments(which: str = "test") -> list[dict]:
    """The moments of a set: {id, domain, stage, history, doctor, patient, state, acceptable,
    actions} (`actions`: what the interview the moment was taken from did next, one of the
    acceptable alternatives)."""
    return heldout_items(CHECK, which)


# --- actions as units -------------------------------------------------------------------------
def action_units(actions: Iterable) -> set[tuple]:
    """(action, slot, value, check type) of every entry and check of an action list (module
    docstring); values lowercased, None where absent."""
    units = set()
    for act in actions or ():
        if not isinstance(act, dict):
            continue
        kind, before = act.get("action"), len(units)
        for slot, entries in act.items():
            if slot == "action" or not isinstance(entries, list):
                continue
            for entry in entries:
                if not isinstance(entry, dict):
                    continue
                value = entry.get("value")
                value = value.lower() if isinstance(value, str) else None
                checks = [c.get("type") for c in entry.get("checks") or () if isinstance(c, dict)]
                units.update((kind, slot, value, check) for check in checks or [None])
        if len(units) == before:
            units.add((kind, None, None, None))
    return units


def substantive_units(actions: Iterable) -> set[tuple]:
    """The units of `actions` without the courtesy ones said beside something else."""
    units = action_units(actions)
    rest = {u for u in units if not (u[0] in COURTESY_ACTIONS and u[1] is None)}
    return rest if rest else units


def is_acceptable(actions: Iterable, alternatives: Sequence[list]) -> bool:
    """Whether `actions` match one of `alternatives` (module docstring: a non-empty subset of
    one alternative's units, courtesy said beside a question left out)."""
    units = substantive_units(actions)
    return bool(units) and any(units <= action_units(alternative) for alternative in alternatives)


def inquires(actions: Iterable) -> bool:
    """Whether `actions` ask something: an inquire action that names a slot entry."""
    return any(unit[0] == INQUIRE_ACTION and unit[1] is not None for unit in action_units(actions))


def held(state: dict) -> dict[tuple, set[str]]:
    """(base slot, head value or None) -> the attributes the state holds of it."""
    found: dict[tuple, set[str]] = {}
    for key, entries in state.items():
        slot = split_slot_key(key)
        if slot is None:
            continue
        for entry in entries:
            head = entry.get("value")
            found.setdefault((slot.base, head.lower() if isinstance(head, str) else None),
                             set()).update(a for a in entry if a != "value")
    return found


def repeated_units(actions: Iterable, state: dict) -> list[tuple]:
    """The inquire units of `actions` that ask what `state` already holds (module docstring)."""
    known = held(state)
    out = []
    for unit in sorted(action_units(actions), key=str):
        kind, slot, value, check = unit
        if kind != INQUIRE_ACTION or slot not in SLOT_ATTRIBUTES:
            continue
        attributes = known.get((slot, value if "value" in SLOT_ATTRIBUTES[slot] else None))
        if attributes is None:
            continue
        if check is None or check == "value" or \
                attributes & set(CHECK_TYPE_ATTRIBUTES.get(check, (check,))):
            out.append(unit)
    return out


def asks(moment: dict) -> bool:
    """Whether a clinician would ask here: every acceptable alternative inquires."""
    return all(inquires(alternative) for alternative in moment["acceptable"])


def usable(label) -> list | None:
    """An action list the assistant would act on, or None (did not parse, or unusable)."""
    return label if isinstance(label, list) and not action_label_errors(label) else None


def _ratio(hits: int, total: int) -> float:
    return hits / total if total else 0.0


def score(moments: Sequence[dict], predicted: Sequence[list | None],
          parsed: Sequence[bool]) -> dict:
    """The figures of the module docstring for aligned moments and predicted action lists
    (None: an output that did not parse or cannot be used, scored as no action)."""
    outcomes = [outcome(m, p) for m, p in zip(moments, predicted, strict=True)]
    asking = [o for m, o in zip(moments, outcomes) if asks(m)]
    results = {
        "moments": len(moments),
        "acceptable_rate": _ratio(sum(o["acceptable"] for o in outcomes), len(moments)),
        "acceptable": sum(o["acceptable"] for o in outcomes),
        "asking_moments": len(asking),
        "inquire_rate": _ratio(sum(o["inquires"] for o in asking), len(asking)),
        "inquiring": sum(o["inquires"] for o in asking),
        "repeat_rate": _ratio(sum(bool(o["repeats"]) for o in outcomes), len(moments)),
        "repeats": sum(bool(o["repeats"]) for o in outcomes),
        "parse_failures": sum(not ok for ok in parsed),
        "unusable": sum(ok and p is None for ok, p in zip(parsed, predicted, strict=True))}
    for name, key, kinds in (("by_stage", "stage", STAGES), ("by_domain", "domain", DOMAINS)):
        results[name] = {
            kind: {"moments": len(hits), "acceptable_rate": _ratio(sum(hits), len(hits))}
            for kind in kinds
            for hits in [[o["acceptable"] for m, o in zip(moments, outcomes) if m[key] == kind]]
            if hits}
    return results


def outcome(moment: dict, actions: list | None) -> dict:
    """One moment's verdicts on the actions predicted for it."""
    return {"acceptable": is_acceptable(actions or [], moment["acceptable"]),
            "inquires": inquires(actions or []),
            "repeats": [list(u) for u in repeated_units(actions or [], moment["state"])]}


def evaluate_policy(args: EvalPolicyArguments) -> dict:
    """Predict the next actions of every held-out moment with the POL model, score them, write
    the results and each moment's outcome into the output folder; returns the results."""
    if args.vocabulary != VOCABULARY_DEFAULT and not args.constrained:
        raise UsageError("--vocabulary applies under the grammar: drop it, or drop "
                         "--no_constrained")
    out = Path(args.out) if args.out else \
        Path(args.pol) / "eval" / ("policy" if args.constrained else "policy-free") / args.set
    output_folder(out, [RESULTS_FILE, MOMENTS_FILE], purpose="eval-policy",
                  input_folders=[args.pol] if args.out else [])
    vocabulary = None
    if args.constrained:
        vocabulary = run_vocabulary(args.pol) if args.vocabulary == VOCABULARY_DEFAULT \
            else resolve_vocabulary(args.vocabulary, None)
    spec = ModelSpec(args.pol, args.family, decode=DecodeOptions(
        args.batch_size, max_new_tokens=args.max_new_tokens, constrained=args.constrained,
        vocabulary=vocabulary))
    task = LABELLING_TASKS["doctor"]  # POL, resolved once
    predictor = load_predictor(spec, task)
    moments = policy_moments(args.set)[:args.limit]
    records = predictor.predict(moment_rows(task, moments, CHECK))
    predicted = [usable(record.label) for record in records]
    results = score(moments, predicted, [record.parse_ok for record in records])
    info, _ = run_settings(args.pol)
    results.update(
        model=str(args.pol), constrained=args.constrained,
        trained_on=proof.of_record(info).describe() if info else "unrecorded",
        set=args.set,
        evaluated_on=f"the kit's {len(moments)} held-out {args.set} interview moments (invented; "
                     "not MediTOD)")
    lines = [json.dumps({"id": m["id"], "stage": m["stage"], "domain": m["domain"],
                         **outcome(m, p), "predicted": p, "parse_ok": r.parse_ok, "raw": r.raw})
             for m, p, r in zip(moments, predicted, records)]
    atomic_write(out / MOMENTS_FILE, "\n".join(lines) + "\n", purpose="eval-policy")
    atomic_write(out / RESULTS_FILE, json.dumps(results, indent=2) + "\n", purpose="eval-policy")
    results["out"] = str(out)
    return results


def table(results: dict) -> str:
    """The figures as a few aligned lines."""
    return "\n".join([
        f"acceptable action  {results['acceptable_rate']:.3f}  "
        f"({results['acceptable']} of {results['moments']} moments)",
        f"inquire rate       {results['inquire_rate']:.3f}  "
        f"({results['inquiring']} of {results['asking_moments']} moments where a clinician asks)",
        f"repeat rate        {results['repeat_rate']:.3f}  "
        f"({results['repeats']} moments ask what the state holds)",
        f"parse failures     {results['parse_failures']}  (unusable: {results['unusable']})",
        "by stage           " + ", ".join(f"{k} {v['acceptable_rate']:.2f}/{v['moments']}"
                                          for k, v in results["by_stage"].items()),
        "by domain          " + ", ".join(f"{k} {v['acceptable_rate']:.2f}/{v['moments']}"
                                          for k, v in results["by_domain"].items())])
