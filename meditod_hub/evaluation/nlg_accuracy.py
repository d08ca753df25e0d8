"""Held-out NLG accuracy: does an NLG model say the doctor's actions, all of them and nothing else?

    meditod eval-nlg --nlg runs/smollm2-135m/nlg            # -> runs/smollm2-135m/nlg/eval/nlg/test
    meditod eval-nlg --nlg runs/smollm2-135m/nlg --set dev  # the set recipes are chosen on

Two sets of invented action sets beside this module (`nlg_dev.json`, 36 items, for choosing;
`nlg_test.json`, 72, for reporting: nothing is chosen by looking at it), each an interview moment
(`moments`: the lines so far, the last exchange, the state) with the doctor's next `actions`, the
`surfaces` that say each value of them, and a `reference` reply a clinician wrote for them (what
the tests score as right; no model is compared with it). Each item is built into the dataset's
own NLG row (`moments.moment_rows`) and answered by the model, as the assistant runs it. Scores:

- slot error rate: (missing + added) / the values to say, over all items. The values to say are
  the head `value` of every action entry (placeholders `other` and `none` aside: "Any recent
  travel?" names no value) and every value a check offers ("dry or productive?"). A value is said
  when one of its surface forms (the item's `surfaces` for it, or the value as spelt) is in the
  reply as whole words, case aside. A value is added when the reply names a medical concept of
  the CMAS vocabulary the kit's corpus spells (every symptom, history, habit, exposure,
  medication, test and disease value, by its canonical name or one of the lay phrases the corpus
  says it with: `phrasings.surfaces`) that the actions do not hold: phrases are read longest
  first, so "chest pain" is chest pain, not pain, and "a cough suppressant" no cough.
- all said: items with no value missing and none added.
- questions: of the items whose actions inquire, those whose reply is a question (`is_question`).
- parse failures: outputs without the format's end marker (their text is scored as it is, as the
  assistant says it).

The figures are about these invented items only: they are not MediTOD's, nor comparable with the
paper's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from meditod_hub.data import proof
from meditod_hub.data.cmas import INQUIRE_ACTION, MEDICAL_BASE_SLOTS
from meditod_hub.data.phrasings import bare, surfaces
from meditod_hub.data.synthetic import DOMAIN_VALUES, VALUES
from meditod_hub.data.tasks import get_task
from meditod_hub.evaluation.moments import SETS, heldout_items, moment_rows
from meditod_hub.files import atomic_write, output_folder
from meditod_hub.models.predictor import DecodeOptions, ModelSpec, load_predictor
from meditod_hub.models.runs import run_settings

CHECK = "nlg"  # nlg_<set>.json beside this module
PLACEHOLDER_VALUES = ("other", "none")  # values that name nothing to say
RESULTS_FILE, ITEMS_FILE = "nlg_accuracy.json", "nlg_items.jsonl"
_QUESTION = re.compile(r"^[A-Z][A-Za-z0-9 ,'/()-]*[a-z][A-Za-z0-9 ,'/()-]*\?$")
_WORD = "a-z0-9"


@dataclass
class EvalNlgArguments:
    nlg: str = field(metadata={"help": "NLG model: run folder, model folder or Hub id"})
    set: str = field(default="test", metadata={
        "choices": SETS, "help": "the held-out action sets: dev (for choosing recipes and steps) "
                                 "or test (for reporting: nothing is chosen on it)"})
    out: Path | None = field(default=None, metadata={
        "help": "folder for nlg_accuracy.json and nlg_items.jsonl (default: "
                "<run>/eval/nlg/<set>, or <run>/eval/nlg-free/<set> without the grammar)"})
    constrained: bool = field(default=True, metadata={
        "help": "decode under the format's grammar (its answer markers), as the assistant does "
                "(--no_constrained: free text)"})
    batch_size: int = field(default=16, metadata={"min": 1, "help": "rows per generate call"})
    max_new_tokens: int | None = field(default=None, metadata={
        "min": 1, "help": "each answer's budget (default: the budget the run trained with, "
                          "run_info.json)"})
    family: str | None = field(default=None, metadata={
        "help": "model family (default: run_info.json)"})
    limit: int | None = field(default=None, metadata={
        "min": 1, "help": "only the first N items (smoke runs)"})


def nlg_items(which: str = "test") -> list[dict]:
    """The items of a set: {id, domain, stage, history, doctor, patient, state, actions,
    surfaces, reference}."""
    return heldout_items(CHECK, which)


def is_question(reply: str) -> bool:
    """A doctor's question as a sentence: a capital first, words, one question mark at the end,
    at least three words, no markup (`[answer]`, JSON) left over."""
    sentences = re.split(r"(?<=[.?!])\s+", reply.strip())
    return (len(reply.split()) >= 3 and sentences[-1].endswith("?")
            and all(_QUESTION.match(s) or re.match(r"^[A-Z][A-Za-z0-9 ,'-]*\.$", s)
                    for s in sentences))


def values_to_say(actions: Iterable) -> list[str]:
    """The values a reply must say (module docstring), lowercased, in order, each once."""
    found = []
    for act in actions or ():
        for slot, entries in act.items():
            if slot == "action" or not isinstance(entries, list):
                continue
            for entry in entries:
                values = [entry.get("value")] + [v for check in entry.get("checks") or ()
                                                 for v in check.get("values") or ()]
                found += [v.lower() for v in values
                          if isinstance(v, str) and v.lower() not in PLACEHOLDER_VALUES]
    return list(dict.fromkeys(found))


@cache
def vocabulary_phrases() -> dict[str, str]:
    """Phrase -> canonical value for every medical concept of the kit's CMAS vocabulary: its
    canonical name and the lay phrases the corpus says it with (with and without an article)."""
    phrases: dict[str, str] = {}
    tables = [VALUES, *DOMAIN_VALUES.values()]
    for slot in (*MEDICAL_BASE_SLOTS, "disease"):
        for value in {v for table in tables for v in table.get(slot, ())}:
            if value in PLACEHOLDER_VALUES:
                continue
            for phrase in (value, *surfaces(slot, value)):
                for said in (phrase, bare(phrase)):
                    phrases.setdefault(_normal(said), value)
    return phrases


def _normal(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9'/-]+", " ", text.lower()).split())


def _spans(text: str, phrase: str) -> list[tuple[int, int]]:
    pattern = rf"(?<![{_WORD}]){re.escape(phrase)}(?![{_WORD}])"
    return [m.span() for m in re.finditer(pattern, text)]


def says(reply: str, phrases: Iterable[str]) -> bool:
    """Whether one of `phrases` is in `reply` as whole words, case aside."""
    text = _normal(reply)
    return any(_spans(text, _normal(p)) for p in phrases if _normal(p))


def named_values(reply: str, phrases: dict[str, str]) -> set[str]:
    """The values whose phrases (phrase -> value) `reply` says, longest phrase first, each piece
    of the reply read once."""
    text, taken, found = _normal(reply), [], set()
    for phrase in sorted(phrases, key=lambda p: (-len(p), p)):
        for start, end in _spans(text, phrase):
            if all(end <= a or start >= b for a, b in taken):
                taken.append((start, end))
                found.add(phrases[phrase])
    return found


def slot_errors(item: dict, reply: str) -> tuple[list[str], list[str]]:
    """(values missing from `reply`, medical values it adds) for an item's actions."""
    wanted = values_to_say(item["actions"])
    forms = {value: [value, *item.get("surfaces", {}).get(value, ())] for value in wanted}
    missing = [value for value in wanted if not says(reply, forms[value])]
    phrases = {**vocabulary_phrases(),
               **{_normal(p): value for value, said in forms.items() for p in said if _normal(p)}}
    added = sorted(named_values(reply, phrases) - set(wanted))
    return missing, added


def _ratio(hits: int, total: int) -> float:
    return hits / total if total else 0.0


def outcome(item: dict, reply: str) -> dict:
    """One item's verdicts on a reply."""
    missing, added = slot_errors(item, reply)
    asks = any(a.get("action") == INQUIRE_ACTION for a in item["actions"])
    return {"values": len(values_to_say(item["actions"])), "missing": missing, "added": added,
            "inquire": asks, "question": is_question(reply) if asks else None}


def score(items: Sequence[dict], replies: Sequence[str], parsed: Sequence[bool]) -> dict:
    """The figures of the module docstring for aligned items and replies."""
    outcomes = [outcome(item, reply) for item, reply in zip(items, replies, strict=True)]
    values = sum(o["values"] for o in outcomes)
    missing = sum(len(o["missing"]) for o in outcomes)
    added = sum(len(o["added"]) for o in outcomes)
    asking = [o for o in outcomes if o["inquire"]]
    all_said = sum(not o["missing"] and not o["added"] for o in outcomes)
    return {"items": len(items), "values": values, "missing": missing, "added": added,
            "slot_error_rate": _ratio(missing + added, values),
            "all_said_rate": _ratio(all_said, len(items)), "all_said": all_said,
            "inquire_items": len(asking),
            "question_rate": _ratio(sum(bool(o["question"]) for o in asking), len(asking)),
            "questions": sum(bool(o["question"]) for o in asking),
            "parse_failures": sum(not ok for ok in parsed)}


def evaluate_nlg(args: EvalNlgArguments) -> dict:
    """Write every held-out item's reply with the NLG model, score them, write the results and
    each item's outcome into the output folder; returns the results."""
    out = Path(args.out) if args.out else \
        Path(args.nlg) / "eval" / (CHECK if args.constrained else f"{CHECK}-free") / args.set
    output_folder(out, [RESULTS_FILE, ITEMS_FILE], purpose="eval-nlg",
                  input_folders=[args.nlg] if args.out else [])
    spec = ModelSpec(args.nlg, args.family, decode=DecodeOptions(
        args.batch_size, max_new_tokens=args.max_new_tokens, constrained=args.constrained))
    task = get_task(CHECK)  # NLG, resolved once
    predictor = load_predictor(spec, task)
    items = nlg_items(args.set)[:args.limit]
    records = predictor.predict(moment_rows(task, items, CHECK))
    replies = [r.prediction.strip() if isinstance(r.prediction, str) else "" for r in records]
    results = score(items, replies, [record.parse_ok for record in records])
    info, _ = run_settings(args.nlg)
    results.update(
        model=str(args.nlg), constrained=args.constrained,
        trained_on=proof.of_record(info).describe() if info else "unrecorded",
        set=args.set,
        evaluated_on=f"the kit's {len(items)} held-out {args.set} doctor action sets (invented; "
                     "not MediTOD)")
    lines = [json.dumps({"id": item["id"], **outcome(item, reply), "reply": reply,
                         "parse_ok": r.parse_ok, "raw": r.raw})
             for item, reply, r in zip(items, replies, records)]
    atomic_write(out / ITEMS_FILE, "\n".join(lines) + "\n", purpose="eval-nlg")
    atomic_write(out / RESULTS_FILE, json.dumps(results, indent=2) + "\n", purpose="eval-nlg")
    results["out"] = str(out)
    return results


def table(results: dict) -> str:
    """The figures as a few aligned lines."""
    return "\n".join([
        f"slot error rate    {results['slot_error_rate']:.3f}  ({results['missing']} missing, "
        f"{results['added']} added, of {results['values']} values to say)",
        f"all said           {results['all_said_rate']:.3f}  "
        f"({results['all_said']} of {results['items']} items)",
        f"questions          {results['question_rate']:.3f}  "
        f"({results['questions']} of {results['inquire_items']} items that inquire)",
        f"parse failures     {results['parse_failures']}"])
