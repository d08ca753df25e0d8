"""Llama-3 / OpenBioLLM chat format: user messages, answers, tolerant parsing. Offline, invented rows;
the authors' sample (read in place, skipped when absent) must round-trip through every answer.
"""

from __future__ import annotations

import json

import pytest

from meditod_hub.data.release import read_release
from meditod_hub.data.tasks import TASKS, ParseResult, get_task, view_rows
from meditod_hub.errors import UsageError
from meditod_hub.models.formats import chat, context_lines


def _context(*texts: str) -> list[dict]:
    """Utterances alternating from an opening doctor line (uttr 0)."""
    return [{"uttr_id": i, "speaker": "doctor" if i % 2 == 0 else "patient", "text": t}
            for i, t in enumerate(texts)]


STATE = {"positive_symptom": [{"value": "zorbic ache", "location": ["knee"]}]}
ACTIONS = [{"action": "inquire", "symptom": [{"value": "vell rash", "checks": [{"type": "onset"}]}]}]
NLU = [{"intent": "inform", "slots": STATE}]
FIRST_NLU_ROW = {"id": "9-1", "context": _context("Opening line."), "patient_text": "P one.",
                 "nlu": NLU}
LATER_NLU_ROW = {"id": "9-7", "context": _context("Opening line.", "P one.", "D two.", "P three.",
                                                  "D four.", "P five.", "D six."),
                 "patient_text": "P seven.", "nlu": NLU}
POL_ROW = {"id": "9-6", "context": _context("Opening line.", "P one.", "D two.", "P three.",
                                            "D four.", "P five."),
           "state": STATE, "actions": ACTIONS, "response": "Does the Rash itch?"}


def test_nlu_message_shows_a_four_line_window():
    assert chat.user_message("nlu", LATER_NLU_ROW) == (
        "[dialog history]\ndoctor: D four.\npatient: P five.\n\n"
        "[last turn]\ndoctor: D six.\npatient: P seven.\n\n[output]")


def test_first_turn_has_only_the_patient_line():
    # The opening doctor line (uttr 0) is in no model's context.
    assert chat.user_message("nlu", FIRST_NLU_ROW) == "[last turn]\npatient: P one.\n\n[output]"


def test_pol_message_starts_with_the_compact_state():
    assert chat.user_message("pol", POL_ROW) == (
        f"[dialog state]\n{json.dumps(STATE)}\n\n"
        "[dialog history]\ndoctor: D two.\npatient: P three.\n\n"
        "[last turn]\ndoctor: D four.\npatient: P five.\n\n[output]")


def test_nlg_message_shows_the_action_and_the_last_turn_only():
    assert chat.user_message("nlg", POL_ROW) == (
        f"[action]\n{json.dumps(ACTIONS)}\n\n"
        "[last turn]\ndoctor: D four.\npatient: P five.\n\n[output]")


def test_answers_and_messages():
    assert chat.answer(TASKS["pol"], POL_ROW) == f"[answer] {json.dumps(ACTIONS)} [done]"
    assert chat.answer(TASKS["nlg"], POL_ROW) == "[answer] Does the Rash itch? [done]"
    roles = [m["role"] for m in chat.messages(TASKS["nlu"], FIRST_NLU_ROW)]
    assert roles == ["system", "user", "assistant"]
    assert chat.messages(TASKS["nlu"], FIRST_NLU_ROW)[0]["content"] == TASKS["nlu"].system_message
    with pytest.raises(UsageError, match="unknown task"):  # refused where the name comes in
        chat.messages(get_task("dst"), FIRST_NLU_ROW)
    with pytest.raises(KeyError, match="'9-1'.*'response'"):
        chat.answer(TASKS["nlg"], FIRST_NLU_ROW)


def test_parse_accepts_output_with_or_without_the_answer_marker():
    body = f"{json.dumps(NLU)} [done]<|eot_id|>"
    for text in (body, f"[answer] {body}", f"  [answer]{body}\n"):
        assert chat.parse_answer("nlu", text) == ParseResult(NLU, True, None)


def test_nlu_pol_are_lowercased_nlg_is_not():
    shouted = f"[answer] {json.dumps(NLU).upper()} [done]"
    assert chat.parse_answer("nlu", shouted).value == NLU
    assert chat.parse_answer("nlg", "[answer] Does the Rash itch? [done]").value == "Does the Rash itch?"


@pytest.mark.parametrize("text, value, reason", [
    (f"[answer] {json.dumps(NLU)}", NLU, "no [done]"),
    (f"[answer] [{json.dumps(NLU[0])}, {{\"intent\": \"inf [done]", NLU, "invalid JSON"),
    ('[answer] {"intent": "inform"} [done]', [], "not a JSON list"),
    ('[answer] [{"intent": "inform"}, 3, {"intent": "chit-chat"}] [done]',
     [{"intent": "inform"}], "item 1"),
    ("[answer] sorry, I cannot [done]", [], "not a JSON list"),
    (None, [], "expected a string"),
])
def test_broken_answers_keep_complete_items(text, value, reason):
    result = chat.parse_answer("nlu", text)
    assert not result.ok and reason in result.reason and result.value == value


def test_truncated_nlg_is_kept_but_not_ok():
    assert chat.parse_answer("nlg", "[answer] Does the") == ParseResult(
        "Does the", False, "no [done] (truncated output?)")


def test_sample_answers_round_trip(sample_release):
    release = read_release(sample_release)
    for task in ("nlu", "pol", "nlg"):
        rows = [row for ids in release.splits.values() for did in ids
                for row in view_rows(task, did, release.dialogues[did])]
        assert len(rows) == 178
        for row in rows:
            last_turn = "\n".join(context_lines(row)[-2:])
            assert chat.user_message(task, row).endswith(f"[last turn]\n{last_turn}\n\n[output]")
            expected = row[TASKS[task].target_column]
            assert chat.parse_answer(task, chat.answer(TASKS[task], row)) == \
                ParseResult(expected, True, None)
