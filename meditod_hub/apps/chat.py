"""A terminal conversation with the assistant: you are the patient, it is the doctor.

    meditod chat --nlu runs/tiny-llama/nlu --pol runs/tiny-llama/pol --nlg runs/tiny-llama/nlg
    printf 'I have a cough.\\nNo fever.\\n' | meditod chat --nlu ... --show_state   # scripted

Each patient line gets exactly one `doctor: ...` line on stdout (a reply's own line breaks become
spaces). Piped input prints a transcript that reads as a conversation: the doctor's opening, then
each `patient: ...` line followed by its `doctor: ...` reply; with `--show_state` the tracked
state, the chosen actions and any parse problem follow each reply, indented. Typed commands:
`/state` (the same, for the last turn), `/reset` (a new conversation), `/quit`. Ctrl-D (end of
input) and Ctrl-C end it cleanly. Loading messages and prompts go to stderr. Nothing is written to disk.
A research demo, not medical advice.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from typing import TextIO

from meditod_hub.apps.assistant import (
    MAX_PATIENT_CHARS,
    OPENING_LINE,
    Assistant,
    Turn,
    not_a_patient_line,
)
from meditod_hub.apps.state_view import actions_line, state_lines

BANNER = ("MediTOD assistant: a research demo, not medical advice. You are the patient. "
          "Commands: /state, /reset, /quit (or Ctrl-D).")


@dataclass
class ChatArguments:
    show_state: bool = field(default=False, metadata={
        "help": "after every reply, print the tracked state, the chosen actions and any parse "
                "problem (or type /state)"})
    max_patient_chars: int = field(default=MAX_PATIENT_CHARS, metadata={"min": 1,
        "help": "a longer patient line is cut to this many characters (and the cut reported)"})


# C0 and C1 control characters and DEL: an ANSI escape in a patient line or a model's output
# would move the cursor, recolour or retitle the terminal, or hide what came before it
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """`text` with every control character shown as its escape (`\\x1b`), never sent raw."""
    return CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode(), text)


def one_line(text: str) -> str:
    return printable(" ".join(text.split()))


def turn_report(turn: Turn | None) -> list[str]:
    """The indented lines `--show_state` / `/state` print."""
    if turn is None:
        return ["  (no turn yet)"]
    lines = ["  state:"] + [f"    {line}" for line in state_lines(turn.state)]
    lines.append(f"  actions: {actions_line(turn.actions)}")
    status = ", ".join(f"{task.display_name} {'ok' if stage.parse_ok else 'did not parse'}"
                       for task, stage in turn.stages())
    lines.append(f"  parse: {status}")
    lines += [f"  note: {note}" for note in turn.notes]
    return [printable(line) for line in lines]  # state values and notes come from the models


def converse(assistant: Assistant, lines: TextIO, out: TextIO, show_state: bool,
             interactive: bool) -> int:
    """Read patient lines until /quit or end of input; returns the number of replies."""
    conversation, replies = assistant.new_conversation(), 0
    if interactive:
        print(BANNER, file=sys.stderr)
    print(f"({assistant.trained_on}.)", file=sys.stderr, flush=True)  # before the first line
    print(f"doctor: {OPENING_LINE}", file=out, flush=True)
    while True:
        if interactive:
            print("patient> ", end="", file=sys.stderr, flush=True)
        line = lines.readline()
        if not line:
            break
        text = line.rstrip("\r\n")
        if not text.strip():  # nothing said: ask again
            continue
        if problem := not_a_patient_line(text):
            print(f"({problem}, so no model saw it: type it again)", file=sys.stderr, flush=True)
            continue
        command = text.strip().lower()
        if command == "/quit":
            break
        if command == "/reset":
            conversation = assistant.new_conversation()
            print("(new conversation)", file=sys.stderr)
            print(f"doctor: {OPENING_LINE}", file=out, flush=True)
            continue
        if command == "/state":
            print("\n".join(turn_report(conversation.turns[-1] if conversation.turns else None)),
                  file=out, flush=True)
            continue
        if not interactive:  # the typed line is on the screen already; a piped one is not
            print(f"patient: {one_line(text)}", file=out, flush=True)
        turn = assistant.respond(conversation, text)
        replies += 1
        print(f"doctor: {one_line(turn.reply)}", file=out, flush=True)
        if show_state:
            print("\n".join(turn_report(turn)), file=out, flush=True)
    return replies
