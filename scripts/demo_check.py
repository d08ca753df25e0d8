"""`make demo`'s closing check and summary (scripts/demo_cpu.sh runs it).

Two checks, both on the real model (SmolLM2-135M-Instruct with the demo's three LoRA runs):

1. Its state accuracy on the kit's held-out patient lines (`meditod eval-state`, run by the demo
   before this script): the demo fails below `STATE_FLOOR` of lines whose whole state is right.
2. The assistant on the demo's runs, loaded as `meditod chat` loads them (the CMAS grammar, its
   medical values those of each run's training split), fed two patient lines it never saw. The
   demo fails unless every NLU answer parses, every doctor reply that asks is a question
   (`is_question`), and the tracked state is exactly `EXPECTED_STATE`: every finding the patient
   said, with what they said of it, and nothing they did not (an invented finding fails it).

Then: what each model was trained and evaluated on, what its figures mean, and what to run next.

    .venv/bin/python scripts/demo_check.py --demo out/demo
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from meditod_hub import quiet
from meditod_hub.apps.assistant import Assistant
from meditod_hub.apps.state_view import state_lines
from meditod_hub.data.cmas import INQUIRE_ACTION
from meditod_hub.data.dataset import load_split
from meditod_hub.evaluation.state_accuracy import RESULTS_FILE
from meditod_hub.models.cascade import PipelineArguments

PATIENT_LINES = ("I have a cough", "no fever")
EXPECTED_STATE = {"positive_symptom": [{"value": "coughing"}],
                  "negative_symptom": [{"value": "fever"}]}
# The least share of the held-out lines whose whole state the demo's NLU run must get right.
# Measured: 0.731 (38 of 52 lines) after the demo's 260 NLU steps, bf16, with two threads and with
# the suite's one; 245 steps gave 0.654 and 185 0.635, so the floor, 34 lines, fails a demo that
# has fallen back to where 185 steps were, and leaves room for float32 where bf16 is not native.
STATE_FLOOR = 0.65
TASKS = ("nlu", "pol", "nlg")
NEXT = """Next:
  make chat          talk to these three models as the patient (terminal; the demo's runs)
  make app           the same assistant in the browser, http://127.0.0.1:7860
  make eval-state NLU=out/demo/runs/smollm2-135m/nlu
                     the NLU run's state accuracy on the held-out lines, line by line"""
_QUESTION = re.compile(r"^[A-Z][A-Za-z0-9 ,'/()-]*[a-z][A-Za-z0-9 ,'/()-]*\?$")


def runs(demo: Path) -> dict[str, Path]:
    return {task: demo / "runs/smollm2-135m" / task for task in TASKS}


def is_question(reply: str) -> bool:
    """A doctor's question as a sentence: a capital first, words, one question mark at the end,
    at least three words, no markup (`[answer]`, JSON) left over."""
    sentences = re.split(r"(?<=[.?!])\s+", reply.strip())
    return (len(reply.split()) >= 3 and sentences[-1].endswith("?")
            and all(_QUESTION.match(s) or re.match(r"^[A-Z][A-Za-z0-9 ,'-]*\.$", s)
                    for s in sentences))


def _entries(state: dict) -> set[str]:
    return {f"{key}: {json.dumps(entry, sort_keys=True)}"
            for key, entries in state.items() for entry in entries}


def state_failures(state: dict, expected: dict = EXPECTED_STATE) -> list[str]:
    """What the tracked state holds that the patient never said, and what it lost."""
    got, want = _entries(state), _entries(expected)
    return ([f"the state holds {entry}, which the patient never said" for entry in sorted(got - want)]
            + [f"the state lacks {entry}" for entry in sorted(want - got)])


def score_failures(results: dict, floor: float = STATE_FLOOR) -> list[str]:
    accuracy = results["exact_state_accuracy"]
    if accuracy >= floor:
        return []
    return [f"the NLU run got {accuracy:.3f} of the held-out lines' states exactly right, below "
            f"the floor of {floor:.2f}"]


def check(demo: Path) -> list[str]:
    """The held-out score, then the patient lines through the assistant: what failed (nothing,
    when the check holds)."""
    folders = runs(demo)
    results = json.loads((folders["nlu"] / "eval/state" / RESULTS_FILE).read_text())
    print(f"state accuracy on the kit's {results['lines']} held-out patient lines (invented; "
          f"exact state {results['exact_state_accuracy']:.3f}, floor {STATE_FLOOR:.2f}; slots "
          f"P {results['slots_precision']:.3f} R {results['slots_recall']:.3f}; denials "
          f"{results['denial_accuracy']:.3f})")
    failures = score_failures(results)
    pipeline = PipelineArguments(**{task: str(path) for task, path in folders.items()})
    assistant = Assistant.load(*pipeline.specs(constrained=True))
    conversation = assistant.new_conversation()
    print(f"doctor:  {conversation.opening}")
    for line in PATIENT_LINES:
        turn = assistant.respond(conversation, line)
        print(f"patient: {line}\n  NLU ->  {json.dumps(turn.nlu.value)}\n"
              f"  POL ->  {json.dumps(turn.actions)}\ndoctor:  {turn.reply}")
        if not turn.nlu.parse_ok:
            failures.append(f"the NLU answer to {line!r} did not parse ({turn.nlu.reason})")
        if not turn.actions:
            failures.append(f"no actions after {line!r}")
        asks = any(action.get("action") == INQUIRE_ACTION for action in turn.actions)
        if asks and not is_question(turn.reply):
            failures.append(f"the doctor's reply after {line!r} is not a question: {turn.reply!r}")
    print("tracked state:\n  " + "\n  ".join(state_lines(conversation.state)))
    return failures + state_failures(conversation.state)


def figure(path: Path, key: str) -> str:
    value = json.loads(path.read_text())[key]
    return f"{value:.3f}" if key != "bleu4" else f"{value:.2f}"


def summary(demo: Path) -> str:
    folders = runs(demo)
    steps = {task: json.loads((folders[task] / "run_info.json").read_text())["global_step"]
             for task in TASKS}
    dialogues = len(load_split(demo / "realistic", "dialogues", "train"))
    state = json.loads((folders["nlu"] / "eval/state" / RESULTS_FILE).read_text())
    head = ("task", "LoRA steps", "evaluated on", "figure")
    rows = [("NLU", steps["nlu"], "realistic corpus test (unseen)",
             f"F1 {figure(folders['nlu'] / 'eval/test/results.json', 'f1')}"),
            ("NLU", steps["nlu"], f"{state['lines']} held-out patient lines",
             f"exact state {state['exact_state_accuracy']:.3f}"),
            ("POL", steps["pol"], "the assistant's turns above", "actions for every turn"),
            ("NLG", steps["nlg"], "the assistant's turns above", "each reply that asks a question")]
    widths = [max(len(str(r[i])) for r in (head, *rows)) for i in range(len(head))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)) for r in (head, *rows)]
    return "\n".join([
        "What the demo trained, on what (all synthetic, invented for this kit: no MediTOD data):",
        f"SmolLM2-135M-Instruct + one LoRA run per task, trained on the realistic corpus "
        f"({dialogues} training dialogues):",
        *lines,
        "Read: SmolLM2 is a real pretrained model; a few minutes of LoRA on invented dialogues",
        "teach it the CMAS answer format, the slots and the doctor's questions, on lines it never",
        "saw. The held-out lines are the kit's own (meditod_hub/evaluation/heldout_lines.json).",
        "None of these figures is comparable with the paper's, which are on MediTOD."])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--demo", type=Path, default=Path("out/demo"), help="the demo's folder")
    demo = parser.parse_args(argv).demo
    quiet.command_warnings_off()
    failures = check(demo)
    print()
    print(summary(demo))
    print()
    print(NEXT)
    if failures:
        print(f"\nThe demo's check FAILED: {'; '.join(failures)}", file=sys.stderr)
        return 1
    print(f"\nThe demo's check holds: the state accuracy is at or above {STATE_FLOOR:.2f}, every "
          "NLU answer parsed, every reply that asks is a question, and the tracked state is "
          "exactly what the patient said.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
