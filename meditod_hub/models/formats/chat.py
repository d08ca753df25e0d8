"""Llama-3-8B-Instruct / OpenBioLLM-8B supervised format (docs/format.md, "Model formats").

Each row becomes [system, user, assistant] messages. The user message shows a 4-line context
window: `[dialog history]` (up to 2 lines, only if any) and `[last turn]` (the last 2 lines:
the doctor's line and the patient's), then `[output]`. POL first shows `[dialog state]` (gold
state, compact `json.dumps`), NLG `[action]` (gold actions) and the last turn only. The answer
is `[answer] <json.dumps(target)> [done]`; for NLG the doctor's raw text between the markers.

Training renders the messages with the tokenizer's chat template, which closes the assistant
turn with the end-of-turn token, so the model learns to stop there; `[done]` stays as the
upstream stop string. At inference we render [system, user] with the generation prompt and, unlike
upstream, do not append `ANSWER_OPEN`: the model was trained to write it and generates it first.
`parse_answer` accepts output with or without it.

`parse_answer` follows upstream `post.py` for NLU/POL (pinned:
https://github.com/dair-iitd/MediTOD/blob/d99ff6d0cc280cef8dd073ce24d7ad1617b73909/src/llama/post.py):
lowercase, keep the text before `[done]`, `json.loads` (gold is lowercase already; lowercasing
JSON text changes no escape). NLG text is not lowercased. Deviations: upstream also cut at the
first `[1]` (dropped: it can cut valid JSON) and scored an undecodable answer as `[]`; here the
complete leading items of a truncated or malformed JSON list are kept and `ok` is False with the
reason.
"""

from __future__ import annotations

import json
import re

from meditod_hub.data.tasks import ParseResult, Task, as_task
from meditod_hub.models.formats import context_lines, row_field

ANSWER_OPEN, ANSWER_CLOSE = "[answer]", "[done]"
WINDOW = 4  # `history_size` in every upstream config

_WHITESPACE = re.compile(r"\s*")


def user_message(task: Task | str, row: dict) -> str:
    """What a task reads beside the dialogue (`Task.reads`) first, under its chat block (with
    the history where its `chat_history` says so), then the dialogue's window."""
    given = as_task(task).reads
    lines = context_lines(row)
    blocks = []
    if given is not None:
        blocks.append(f"{given.chat_block}\n" + json.dumps(row_field(row, given.column)))
    window = lines[-WINDOW:]
    if (given is None or given.chat_history) and len(window) > 2:
        blocks.append("[dialog history]\n" + "\n".join(window[:-2]))
    blocks += ["[last turn]\n" + "\n".join(lines[-2:]), "[output]"]
    return "\n\n".join(blocks)


def answer(task: Task, row: dict) -> str:
    target = row_field(row, task.target_column)
    return f"{ANSWER_OPEN} {json.dumps(target) if task.structured else target} {ANSWER_CLOSE}"


def prompt(task: Task, row: dict) -> list[dict]:
    """[system, user]: what the model is asked (the row needs no target)."""
    return [{"role": "system", "content": task.system_message},
            {"role": "user", "content": user_message(task, row)}]


def messages(task: Task, row: dict) -> list[dict]:
    """A training example: the prompt, then the assistant's answer."""
    return [*prompt(task, row), {"role": "assistant", "content": answer(task, row)}]


def parse_answer(task: Task | str, text: str) -> ParseResult:
    """Generated text -> NLU items / actions (a JSON list) or the NLG response. Never raises."""
    task = as_task(task)
    if not isinstance(text, str):
        return ParseResult(task.empty_label, False, f"expected a string, got {type(text).__name__}")
    if task.structured:
        text = text.lower()
    body = text.strip()
    if body.startswith(ANSWER_OPEN):
        body = body[len(ANSWER_OPEN):]
    body, done, _ = body.partition(ANSWER_CLOSE)
    reason = None if done else f"no {ANSWER_CLOSE} (truncated output?)"
    if not task.structured:
        return ParseResult(body.strip(), reason is None, reason)
    items, json_reason = _json_items(body.strip(), task.item_head)
    reason = json_reason or reason
    return ParseResult(items, reason is None, reason)


def _json_items(text: str, head: str) -> tuple[list, str | None]:
    """The items of a JSON list; for a broken list, its longest prefix of complete items."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        items, reason = _complete_items(text)
    else:
        items, reason = (value, None) if isinstance(value, list) else ([], "not a JSON list")
    for n, item in enumerate(items):
        if not (isinstance(item, dict) and isinstance(item.get(head), str)):
            return items[:n], f"item {n} is not an object with a string {head!r}"
    return items, reason


def _complete_items(text: str) -> tuple[list, str]:
    if not text.startswith("["):
        return [], "not a JSON list"
    decoder, items, pos = json.JSONDecoder(), [], 1
    while True:
        try:
            item, pos = decoder.raw_decode(text, _WHITESPACE.match(text, pos).end())
        except json.JSONDecodeError:
            break
        items.append(item)
        pos = _WHITESPACE.match(text, pos).end()
        if not text.startswith(",", pos):
            break
        pos += 1
    return items, f"invalid JSON list; kept its {len(items)} complete leading item(s)"
