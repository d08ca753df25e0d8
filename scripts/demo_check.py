"""`make demo`'s closing check and summary (scripts/demo.py runs it).

Two checks, both on the real model (SmolLM2-135M-Instruct with the demo's three LoRA runs):

1. Its state accuracy on the kit's held-out patient lines (`meditod eval-state`, run by the demo
   before this script): the demo fails below `STATE_FLOOR` of lines whose whole state is right.
2. The assistant on the demo's runs, loaded as `meditod chat` loads them (the CMAS grammar, its
   medical values those of each run's training split), fed two patient lines it never saw. The
   demo fails unless every NLU answer parses, every doctor reply that asks is a question
   (`is_question`), no action asks again what the state already holds (`repeat_failures`), and
   the tracked state is exactly `EXPECTED_STATE`: every finding the patient said, with what they
   said of it, and nothing they did not (an invented finding fails it).

Then: the scripted conversation the demo ran (`meditod eval-conversations`, each turn marked
right or wrong), what each model was trained and evaluated on with its held-out figures (NLU's
state accuracy, POL's acceptable next actions, NLG's slot error rate, the conversation's turns
right: reported, with no floor but NLU's), what the figures mean, and what to run next.

`--smoke` (the demo's smoke profile, a few steps a run: the suite's docs test) keeps the checks
that hold of any run, every NLU answer parsing and actions on every turn, on the first patient
line (an untrained run answers to its whole budget, ~25 s a turn), and drops the quality ones
(the floor, questions, the exact state), which only a fully trained run can meet.

    .venv/bin/python scripts/demo_check.py --demo out/demo
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from meditod_hub import quiet
from meditod_hub.apps.assistant import Assistant
from meditod_hub.apps.state_view import state_lines
from meditod_hub.data.cmas import INQUIRE_ACTION
from meditod_hub.data.dataset import load_split
from meditod_hub.evaluation import conversations, nlg_accuracy, policy_accuracy
from meditod_hub.evaluation.nlg_accuracy import is_question
from meditod_hub.evaluation.policy_accuracy import repeated_units
from meditod_hub.evaluation.state_accuracy import RESULTS_FILE
from meditod_hub.models.cascade import pipeline_arguments, stages

PATIENT_LINES = ("I have a cough", "no fever")
EXPECTED_STATE = {"positive_symptom": [{"value": "coughing"}],
                  "negative_symptom": [{"value": "fever"}]}
# The least share of the held-out TEST lines (heldout_test.json, 205: nothing was chosen on them)
# whose whole state the demo's NLU run must get right. Measured after the demo's 260 NLU steps:
# float32 0.239 (49 of 205; the same run: 0.615 on the 52 dev lines the step count was chosen
# on); bf16: the README. One run per format so far (bench/bench_seeds.py measures the spread over
# seeds): the floor, 31 lines, sits well below both, so `make demo` passes on any CPU and fails a
# run that has learnt far less.
STATE_FLOOR = 0.15
TASKS = ("nlu", "pol", "nlg")
NEXT = """Next:
  make chat          talk to these three models as the patient (terminal; the demo's runs)
  make app           the same assistant in the browser, http://127.0.0.1:7860
  make eval-state NLU=out/demo/runs/smollm2-135m/nlu
                     the NLU run's state accuracy on the held-out lines, line by line"""


def runs(demo: Path) -> dict[str, Path]:
    return {task: demo / "runs/smollm2-135m" / task for task in TASKS}


def conversation_folder(demo: Path) -> Path:
    """Where the demo's `eval-conversations` stage wrote (its default: the POL run's)."""
    return runs(demo)["pol"] / "eval/conversations"


def _entries(state: dict) -> set[str]:
    return {f"{key}: {json.dumps(entry, sort_keys=True)}"
            for key, entries in state.items() for entry in entries}


def state_failures(state: dict, expected: dict = EXPECTED_STATE) -> list[str]:
    """What the tracked state holds that the patient never said, and what it lost."""
    got, want = _entries(state), _entries(expected)
    return ([f"the state holds {entry}, which the patient never said" for entry in sorted(got - want)]
            + [f"the state lacks {entry}" for entry in sorted(want - got)])


def repeat_failures(line: str, actions: list, state: dict) -> list[str]:
    """The doctor's next actions asking what the state already holds, after the patient's `line`
    (`policy_accuracy.repeated_units`: the repeat rate eval-policy scores)."""
    return [f"after {line!r} the doctor asks again about {' '.join(str(p) for p in unit if p)}, "
            "which the state already holds" for unit in repeated_units(actions, state)]


def score_failures(results: dict, floor: float = STATE_FLOOR) -> list[str]:
    accuracy = results["exact_state_accuracy"]
    if accuracy >= floor:
        return []
    return [f"the NLU run got {accuracy:.3f} of the held-out lines' states exactly right, below "
            f"the floor of {floor:.2f}"]


def check(demo: Path, smoke: bool = False) -> list[str]:
    """The held-out score, then the patient lines through the assistant: what failed (nothing,
    when the check holds). `smoke`: only the checks any run meets (parsing, actions)."""
    folders = runs(demo)
    results = json.loads((folders["nlu"] / "eval/state/test" / RESULTS_FILE).read_text())
    print(f"state accuracy on the kit's {results['lines']} held-out patient lines (invented; "
          f"exact state {results['exact_state_accuracy']:.3f}, "
          f"{'no floor: smoke profile' if smoke else f'floor {STATE_FLOOR:.2f}'}; slots "
          f"P {results['slots_precision']:.3f} R {results['slots_recall']:.3f}; denials "
          f"{results['denial_accuracy']:.3f})")
    failures = [] if smoke else score_failures(results)
    pipeline = pipeline_arguments(stages())(**{task: str(path) for task, path in folders.items()})
    assistant = Assistant.load(pipeline.specs(constrained=True))
    conversation = assistant.new_conversation()
    print(f"doctor:  {conversation.opening}")
    for line in PATIENT_LINES[:1] if smoke else PATIENT_LINES:
        turn = assistant.respond(conversation, line)
        print(f"patient: {line}\n  NLU ->  {json.dumps(turn.nlu.value)}\n"
              f"  POL ->  {json.dumps(turn.actions)}\ndoctor:  {turn.reply}")
        if not turn.nlu.parse_ok:
            failures.append(f"the NLU answer to {line!r} did not parse ({turn.nlu.reason})")
        if not turn.actions:
            failures.append(f"no actions after {line!r}")
        asks = any(action.get("action") == INQUIRE_ACTION for action in turn.actions)
        if asks and not smoke and not is_question(turn.reply):
            failures.append(f"the doctor's reply after {line!r} is not a question: {turn.reply!r}")
        if not smoke:
            failures += repeat_failures(line, turn.actions, turn.state)
    print("tracked state:\n  " + "\n  ".join(state_lines(conversation.state)))
    print("\nA scripted patient conversation (the demo's eval-conversations stage), each turn "
          "marked:\n" + (conversation_folder(demo) / conversations.TRANSCRIPT_FILE)
          .read_text(encoding="utf-8").rstrip())
    return failures + ([] if smoke else state_failures(conversation.state))


def figure(path: Path, key: str) -> str:
    value = json.loads(path.read_text())[key]
    return f"{value:.3f}" if key != "bleu4" else f"{value:.2f}"


def summary(demo: Path) -> str:
    folders = runs(demo)
    steps = {task: json.loads((folders[task] / "run_info.json").read_text())["global_step"]
             for task in TASKS}
    dialogues = len(load_split(demo / "realistic", "dialogues", "train"))
    state = json.loads((folders["nlu"] / "eval/state/test" / RESULTS_FILE).read_text())
    policy = json.loads((folders["pol"] / "eval/policy/test" / policy_accuracy.RESULTS_FILE).read_text())
    nlg = json.loads((folders["nlg"] / "eval/nlg/test" / nlg_accuracy.RESULTS_FILE).read_text())
    talk = json.loads((conversation_folder(demo) / conversations.RESULTS_FILE).read_text())
    head = ("task", "LoRA steps", "evaluated on", "figure")
    rows = [("NLU", steps["nlu"], "realistic corpus test (unseen)",
             f"F1 {figure(folders['nlu'] / 'eval/test/results.json', 'f1')}"),
            ("NLU", steps["nlu"], f"{state['lines']} held-out patient lines",
             f"exact state {state['exact_state_accuracy']:.3f}"),
            ("POL", steps["pol"], f"{policy['moments']} held-out interview moments",
             f"acceptable {policy['acceptable_rate']:.3f}, repeats {policy['repeat_rate']:.3f}"),
            ("NLG", steps["nlg"], f"{nlg['items']} held-out action sets",
             f"slot error rate {nlg['slot_error_rate']:.3f}"),
            ("all", "", f"a scripted conversation, {talk['turns']} turn"
                        f"{'' if talk['turns'] == 1 else 's'}",
             f"{talk['turns_right']} turns right")]
    widths = [max(len(str(r[i])) for r in (head, *rows)) for i in range(len(head))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)) for r in (head, *rows)]
    return "\n".join([
        "What the demo trained, on what (all synthetic, invented for this kit: no MediTOD data):",
        f"SmolLM2-135M-Instruct + one LoRA run per task, trained on the realistic corpus "
        f"({dialogues} training dialogues):",
        *lines,
        "Read: SmolLM2 is a real pretrained model; a few minutes of LoRA on invented dialogues",
        "teach it the CMAS answer format, the slots and the doctor's questions, on lines it never",
        "saw. The held-out lines, moments, action sets and conversation are the kit's own",
        "(meditod_hub/evaluation/: heldout_test.json, policy_test.json, nlg_test.json,",
        "conversations.json), written for these checks; none chose a step or a recipe.",
        "None of these figures is comparable with the paper's, which are on MediTOD."])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--demo", type=Path, default=Path("out/demo"), help="the demo's folder")
    parser.add_argument("--smoke", action="store_true",
                        help="the smoke profile's checks only: parsing and actions, no quality floor")
    args = parser.parse_args(argv)
    demo = args.demo
    quiet.command_warnings_off()
    failures = check(demo, args.smoke)
    print()
    print(summary(demo))
    print()
    print(NEXT)
    if failures:
        print(f"\nThe demo's check FAILED: {'; '.join(failures)}", file=sys.stderr)
        return 1
    if args.smoke:
        print("\nThe demo's check holds (smoke profile): every NLU answer parsed and every turn "
              "had actions; the quality floors are the full demo's (make demo).")
    else:
        print(f"\nThe demo's check holds: the state accuracy is at or above {STATE_FLOOR:.2f}, "
              "every NLU answer parsed, every reply that asks is a question, and the tracked "
              "state is exactly what the patient said.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
