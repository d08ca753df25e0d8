"""The in-context prompts of the paper (appendix "Prompts in In-context Setting";
docs/format.md, "In-context prompts and retrieval").

Messages: `system` (the task description: intents, slots and attributes as Python-dict literals,
then the rules), k x (`user`, `assistant`) exemplar pairs, most similar first, then the test
`user` message:
* NLU: `[dialog history]` (the up to 3 lines before the last turn; the block is always there)
  and `[last turn]` (the doctor's line and the patient's), then `[output]`. The answer is the
  compact JSON of the NLU items with status as an attribute (the task's `to_answer`).
* POL: `[dialog state]` (the state before the doctor's line, `json.dumps(indent=2)` in a code
  fence) and the last turn; the answer is the compact JSON of the actions.
* NLG: `[actions]` (the doctor's gold actions, indented, fenced) and the last turn; the answer
  is the doctor's text.
Context lines are the row's own utterances, the opening doctor line included (the released
prompting code counts lines by utterance index). The texts, the blocks below and each task's
(its `fewshot_header`, `fewshot_rules` and definitions, `meditod_hub.data.tasks.fewshot`) follow
the released prompting code (`dialog`, where the paper's appendix prints `dialogue`), so a prompt
built here is byte-identical to the authors' for the same exemplars (tests/test_fewshot_prompts.py
pins it on their sample). The NLU answer's view, and its one deviation from the authors' mapping,
are described in `meditod_hub.data.tasks.fewshot`.
"""

from __future__ import annotations

import json

from meditod_hub.data.tasks import ParseResult, Task, as_task
from meditod_hub.data.tasks.fewshot import json_objects
from meditod_hub.models.formats import row_field

HISTORY_SIZE = 4  # lines before the current one in the NLU window (upstream `history_size`)

_DEFINITIONS = ("Definitions for intent, slots, and related attributes are given below as Python "
                "dictionaries.")


def _intents(intents: dict[str, str]) -> str:
    blocks = [f'{{\n    "name": {json.dumps(n)},\n    "description": {json.dumps(d)}\n}}'
              for n, d in intents.items()]
    return "intents = [" + ",\n".join(blocks) + "]"


def _slots(definitions) -> str:
    blocks = []
    for slot, description, attributes in definitions:
        rows = [json.dumps({"name": a, "description": d, **({"examples": list(e)} if e else {})})
                for a, d, e in attributes]
        blocks.append(f'{{\n    "slot": {json.dumps(slot)},\n    "description": '
                      f'{json.dumps(description)},\n    "related_attributes": [\n        '
                      + ",\n        ".join(rows) + "\n    ]\n}")
    return "slots = [" + ", ".join(blocks) + "]"


def system_prompt(task: Task | str) -> str:
    """`task`: a Task, or its name (the entry points here that the harness exporters call)."""
    task = as_task(task)
    rules = "IMPORTANT INSTRUCTIONS:\n" + "\n".join(task.fewshot_rules)
    if task.fewshot_intents is None:
        return task.fewshot_header + "\n\n" + rules
    return (f"{task.fewshot_header}{_DEFINITIONS}\n```\n{_intents(task.fewshot_intents)}\n\n"
            f"{_slots(task.fewshot_slots)}\n```\n{rules}")


# --- user messages and exemplar answers ----------------------------------------------------

def dialogue_lines(row: dict) -> list[str]:
    """`speaker: text` of every utterance up to the row's last patient line (opening included)."""
    lines = [f"{u['speaker']}: {u['text']}" for u in row_field(row, "context")]
    if "patient_text" in row:
        lines.append(f"patient: {row['patient_text']}")
    return lines


def last_turn(row: dict) -> str:
    """The retrieval key: the last two lines (the doctor's and the patient's)."""
    return "\n".join(dialogue_lines(row)[-2:])


def user_message(task: Task | str, row: dict) -> str:
    """What a task reads beside the dialogue (`Task.reads`) replaces the history, under its
    few-shot block, as indented JSON."""
    given = as_task(task).reads
    turn = f"[last turn]\n{last_turn(row)}\n\n[output]"
    if given is None:
        window = dialogue_lines(row)[-(HISTORY_SIZE + 1):]
        return "[dialog history]\n" + "\n".join(window[:-2]) + "\n\n" + turn
    shown = json.dumps(row_field(row, given.column), indent=2)
    return f"{given.fewshot_block}\n```\n{shown}\n```\n\n{turn}"


def exemplar_answer(task: Task | str, row: dict) -> str:
    task = as_task(task)
    label = row_field(row, task.target_column)
    if not task.structured:
        return label
    return json.dumps((task.to_answer or _same)(label))


def exemplar_pair(task: Task, row: dict) -> list[dict]:
    return [{"role": "user", "content": user_message(task, row)},
            {"role": "assistant", "content": exemplar_answer(task, row)}]


def messages(task: Task | str, row: dict, exemplars: list[dict]) -> list[dict]:
    """system, one (user, assistant) pair per exemplar row (most similar first), the question."""
    task = as_task(task)
    out = [{"role": "system", "content": system_prompt(task)}]
    for exemplar in exemplars:
        out += exemplar_pair(task, exemplar)
    return out + [{"role": "user", "content": user_message(task, row)}]


def _same(items: list) -> list:
    return items


def parse_answer(task: Task | str, text: str) -> ParseResult:
    """A model's answer -> NLU items / actions / the response. Never raises.

    As the authors' `post.py` (pinned:
    https://github.com/dair-iitd/MediTOD/blob/d99ff6d0cc280cef8dd073ce24d7ad1617b73909/src/prompting/post.py):
    NLU/POL lowercased, then `json.loads` (NLU mapped back to status prefixes); an answer that
    does not parse scores as empty and is counted. NLG: the stripped text (the NLG metrics
    lowercase it themselves).
    """
    task = as_task(task)
    if not task.structured:
        return ParseResult(text.strip(), True, None)
    try:
        value = json.loads(text.lower().strip())
        items = json_objects(value, "the answer")
        if not all(isinstance(i.get(task.item_head), str) for i in items):
            raise ValueError(f"an item has no string {task.item_head!r}")
        items = (task.from_answer or _same)(items)
    except json.JSONDecodeError as exc:
        return ParseResult([], False, f"not JSON ({exc.msg})")
    except ValueError as exc:
        return ParseResult([], False, str(exc))
    return ParseResult(items, True, None)
