"""Scripted conversations: the whole assistant (NLU -> state -> POL -> NLG) through invented
patient scripts, each turn marked right or wrong.

    meditod eval-conversations --nlu runs/smollm2-135m/nlu --pol runs/smollm2-135m/pol \\
        --nlg runs/smollm2-135m/nlg        # -> runs/smollm2-135m/pol/eval/conversations

`conversations.json` beside this module holds patient scripts of 6-8 turns (a cough, a fever,
breathlessness, chest pain, a twisted ankle), written for this check like the held-out moments
(`moments`): each turn is the patient's line, the gold state change it makes (CMAS patient slots,
as an NLU `inform` item's `slots`; {} for a line that says nothing to fold) and the next doctor
actions a clinician would accept (alternatives, as `policy_accuracy` reads them). `doctor` is the
question the script's line answers (the opening line first) and `actions` the next actions the
script goes on from (its next line answers them; one of the acceptable): both are shown or used by
tests, never scored. The assistant asks what it asks, and the patient says the script's next line
anyway.

Each script runs through an `Assistant` (`apps.assistant`: whatever has `new_conversation` and
`respond_many`), all scripts batched turn by turn, and each turn is scored:

- state: the tracked state after the turn equals the gold one (the fold of the script's changes
  so far), entry for entry, whatever order
- action: the actions the assistant acted on (none where POL's output was unusable) match an
  acceptable alternative (`policy_accuracy.is_acceptable`)
- repeat: the actions ask what the patient has already said (`policy_accuracy.repeated_units`
  on the gold state after the turn), or ask a question the assistant asked earlier in the
  conversation (the same inquire unit)

A turn is right when its state is exact, its action acceptable and it repeats nothing. The
results give each rate over all turns, the turns and scripts that are all right, and each turn's
verdicts; the transcript shows every turn with its marks. The figures are about these invented
scripts only: not MediTOD's, nor comparable with the paper's.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from meditod_hub.data.state import DialogueState
from meditod_hub.data.tasks import LABELLING_TASKS, Task
from meditod_hub.errors import UsageError
from meditod_hub.evaluation.moments import canonical_state, same_state
from meditod_hub.evaluation.policy_accuracy import action_units, is_acceptable, repeated_units
from meditod_hub.files import atomic_write, output_folder
from meditod_hub.models.cascade import stages

SCRIPTS_FILE = "conversations.json"
RESULTS_FILE, TRANSCRIPT_FILE = "conversation_results.json", "conversation_transcript.txt"
INQUIRE = "inquire"


@dataclass
class EvalConversationsArguments:
    out: Path | None = field(default=None, metadata={
        "help": "folder for conversation_results.json and conversation_transcript.txt (default: "
                "<POL run>/eval/conversations)"})
    script: str | None = field(default=None, metadata={
        "help": "only the script with this id (default: every script)"})
    turns: int | None = field(default=None, metadata={
        "min": 1, "help": "only the first N turns of each script (smoke runs)"})


def conversation_scripts() -> list[dict]:
    """The scripts: {id, domain, title, opening, turns: [{doctor, patient, state_change,
    acceptable, actions}]}."""
    text = resources.files(__package__).joinpath(SCRIPTS_FILE).read_text(encoding="utf-8")
    return json.loads(text)


def gold_states(script: dict) -> list[dict]:
    """The state after each turn: the fold of the script's changes so far."""
    state = DialogueState()
    return [state.update([{"intent": "inform", "slots": turn["state_change"]}]).render()
            for turn in script["turns"]]


def score_turn(state: dict, actions: list, gold: dict, alternatives: Sequence[list],
               asked: set[tuple]) -> dict:
    """One turn's verdicts: `state` tracked and `actions` acted on, against the `gold` state
    after the turn, its acceptable `alternatives`, and the inquire units `asked` before."""
    units = {u for u in action_units(actions) if u[0] == INQUIRE}
    repeats = sorted({*map(tuple, repeated_units(actions, gold)), *(units & asked)}, key=str)
    verdict = {"state_exact": same_state(state, gold),
               "acceptable": is_acceptable(actions, alternatives),
               "repeats": [list(u) for u in repeats]}
    verdict["right"] = verdict["state_exact"] and verdict["acceptable"] and not repeats
    return verdict


def run_scripts(assistant, scripts: Sequence[dict]) -> list[dict]:
    """Every script through `assistant`, batched turn by turn: one outcome per script, {id,
    domain, title, opening, turns: [{patient, doctor_asked, reply, state, gold_state, actions,
    nlu_used, pol_used, notes, ...verdicts}]}."""
    conversations = [assistant.new_conversation(f"script-{s['id']}", opening=s["opening"])
                     for s in scripts]
    golds = [gold_states(s) for s in scripts]
    outcomes = [{"id": s["id"], "domain": s["domain"], "title": s["title"],
                 "opening": s["opening"], "turns": []} for s in scripts]
    asked: list[set[tuple]] = [set() for _ in scripts]
    for n in range(max(len(s["turns"]) for s in scripts)):
        live = [i for i, s in enumerate(scripts) if n < len(s["turns"])]
        turns = assistant.respond_many([conversations[i] for i in live],
                                       [scripts[i]["turns"][n]["patient"] for i in live])
        for i, turn in zip(live, turns):
            script_turn = scripts[i]["turns"][n]
            verdict = score_turn(turn.state, turn.actions, golds[i][n], script_turn["acceptable"],
                                 asked[i])
            asked[i] |= {u for u in action_units(turn.actions) if u[0] == INQUIRE}
            outcomes[i]["turns"].append({
                "patient": script_turn["patient"], "doctor_asked": script_turn["doctor"],
                "reply": turn.reply, "state": turn.state, "gold_state": golds[i][n],
                "actions": turn.actions, **{f"{task.name}_used": output.used
                                            for task, output in turn.stages() if task.structured},
                "notes": list(turn.notes), **verdict})
    return outcomes


def _structured_stages() -> list[Task]:
    """The stages whose labels the assistant uses where they are usable (NLU, POL)."""
    return [task for task in stages() if task.structured]


def _ratio(hits: int, total: int) -> float:
    return hits / total if total else 0.0


def score(outcomes: Sequence[dict]) -> dict:
    """Rates over every turn of every script, and per script."""
    turns = [t for o in outcomes for t in o["turns"]]
    results = {"scripts": len(outcomes), "turns": len(turns)}
    for name, key in (("state_exact", "state_exact"), ("acceptable", "acceptable"),
                      ("right", "right")):
        results[f"{name}_rate"] = _ratio(sum(t[key] for t in turns), len(turns))
    results["repeat_rate"] = _ratio(sum(bool(t["repeats"]) for t in turns), len(turns))
    results["turns_right"] = sum(t["right"] for t in turns)
    results["scripts_right"] = sum(all(t["right"] for t in o["turns"]) for o in outcomes)
    for task in _structured_stages():
        results[f"{task.name}_unusable"] = sum(not t[f"{task.name}_used"] for t in turns)
    results["by_script"] = {
        o["id"]: {"turns": len(o["turns"]),
                  "turns_right": sum(t["right"] for t in o["turns"]),
                  "state_exact": sum(t["state_exact"] for t in o["turns"]),
                  "acceptable": sum(t["acceptable"] for t in o["turns"]),
                  "repeats": sum(bool(t["repeats"]) for t in o["turns"])}
        for o in outcomes}
    return results


def said(actions: list) -> str:
    """Actions in one line: `inquire symptom coughing (onset); chit-chat`."""
    parts = []
    for act in actions:
        slots = [(slot, entry) for slot, entries in act.items() if slot != "action"
                 and isinstance(entries, list) for entry in entries if isinstance(entry, dict)]
        if not slots:
            parts.append(str(act.get("action")))
        for slot, entry in slots:
            checks = ", ".join(str(c.get("type")) for c in entry.get("checks") or ()
                               if isinstance(c, dict))
            parts.append(" ".join(str(x) for x in (act.get("action"), slot, entry.get("value"))
                                  if x is not None) + (f" ({checks})" if checks else ""))
    return "; ".join(parts) or "(no action)"


def _entries(state: dict) -> set[str]:
    return {f"{key} {entry}" for key, entries in canonical_state(state).items() for entry in entries}


def state_difference(state: dict, gold: dict) -> str:
    """What a tracked state lacks and holds beyond the gold one, in words."""
    lacks, extra = sorted(_entries(gold) - _entries(state)), sorted(_entries(state) - _entries(gold))
    return "; ".join([f"lacks {e}" for e in lacks] + [f"holds {e}, never said" for e in extra])


def transcript(outcomes: Sequence[dict], header: str = "") -> str:
    """Every script as a transcript, each turn marked RIGHT or WRONG with its three verdicts."""
    lines = [header, ""] if header else []
    for o in outcomes:
        right = sum(t["right"] for t in o["turns"])
        lines += [f"== {o['id']} ({o['domain']}): {o['title']} -- {right} of {len(o['turns'])} "
                  "turns right ==", f"doctor:  {o['opening']}"]
        for n, t in enumerate(o["turns"], 1):
            lines.append(f"patient: {t['patient']}")
            if n > 1:
                lines.append(f"         (the script's line answers: {t['doctor_asked']})")
            lines.append(f"  turn {n}: {'RIGHT' if t['right'] else 'WRONG'}")
            lines.append("    state   " + ("right" if t["state_exact"] else
                                           "wrong: " + state_difference(t["state"], t["gold_state"])))
            lines.append(f"    action  {'right' if t['acceptable'] else 'wrong'}: {said(t['actions'])}")
            lines.append("    repeat  " + ("no" if not t["repeats"] else "yes: " + "; ".join(
                " ".join(str(x) for x in u if x is not None) for u in t["repeats"])))
            lines += [f"    note    {note}" for note in t["notes"]]
            lines.append(f"doctor:  {t['reply']}")
        lines.append("")
    return "\n".join(lines)


def selected_scripts(script: str | None = None, turns: int | None = None) -> list[dict]:
    """Every script, or the one with id `script` (a usage error naming the ids if none has it),
    each cut to its first `turns` turns (None: all)."""
    scripts = conversation_scripts()
    chosen = scripts if script is None else [s for s in scripts if s["id"] == script]
    if not chosen:
        raise UsageError(f"no script {script!r}: choose one of {', '.join(s['id'] for s in scripts)}")
    return [{**s, "turns": s["turns"][:turns]} for s in chosen]


def results_folder(args: EvalConversationsArguments, models: dict[str, str]) -> Path:
    """The output folder, checked before any model loads (default: the POL run's
    eval/conversations); `models`: task -> the source given for it."""
    policy = LABELLING_TASKS["doctor"].name  # the stage that picks the doctor's next actions
    out = Path(args.out) if args.out else Path(models[policy]) / "eval" / "conversations"
    return output_folder(out, [RESULTS_FILE, TRANSCRIPT_FILE], purpose="eval-conversations",
                         input_folders=list(dict.fromkeys(models.values())) if args.out else [])


def evaluate_conversations(assistant, scripts: Sequence[dict], out: Path,
                           models: dict[str, str]) -> dict:
    """Run `scripts` through `assistant` (loaded from `models`, task -> source), write the
    results (with every turn's verdicts) and the transcript into `out`; returns the results."""
    outcomes = run_scripts(assistant, scripts)
    results = score(outcomes)
    results.update(
        models=models, trained_on=assistant.trained_on,
        evaluated_on=f"the kit's {_counted(len(scripts), 'scripted patient conversation')}, "
                     f"{_counted(results['turns'], 'turn')} (invented; not MediTOD)")
    header = (", ".join(f"{task.upper()} {source}" for task, source in models.items())
              + f" ({assistant.trained_on}); evaluated on {results['evaluated_on']}")
    atomic_write(out / TRANSCRIPT_FILE, transcript(outcomes, header), purpose="eval-conversations")
    atomic_write(out / RESULTS_FILE, json.dumps({**results, "conversations": outcomes}, indent=2)
                 + "\n", purpose="eval-conversations")
    results["out"] = str(out)
    return results


def _counted(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def table(results: dict) -> str:
    """The figures as a few aligned lines."""
    return "\n".join([
        f"turns right        {results['right_rate']:.3f}  ({results['turns_right']} of "
        f"{results['turns']} turns; {results['scripts_right']} of {results['scripts']} "
        "scripts all right)",
        f"state exact        {results['state_exact_rate']:.3f}",
        f"acceptable action  {results['acceptable_rate']:.3f}",
        f"repeat rate        {results['repeat_rate']:.3f}",
        "unusable outputs   " + ", ".join(f"{task.display_name} {results[f'{task.name}_unusable']}"
                                          for task in _structured_stages()),
        "by script          " + ", ".join(f"{k} {v['turns_right']}/{v['turns']}"
                                          for k, v in results["by_script"].items())])
