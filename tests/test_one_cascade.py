"""One cascade: the assistant's turns and eval-cascade's split are `models.cascade.cascade`, so
the same models give the same rows and the same records, however the rows were gathered (one
patient line at a time from a conversation, or every row of a split at once)."""

from __future__ import annotations

from datasets import load_dataset
from helpers import INPUT_COLUMNS, scripted_assistant

from meditod_hub.data.tasks import TASK_NAMES
from meditod_hub.evaluation.eval_cascade import load_split
from meditod_hub.models.cascade import cascade

GUESS = [{"action": "inquire", "symptom": [{"value": "fever"}]}]


def replayable(dialogue: dict) -> bool:
    """A dialogue the assistant can replay as it was: the doctor opens, then one patient line and
    one doctor line at a time, uttr_ids in order."""
    utterances = dialogue["utterances"]
    return len(utterances) > 3 and all(
        u["uttr_id"] == i and u["speaker"] == ("doctor" if i % 2 == 0 else "patient")
        for i, u in enumerate(utterances)) and len(utterances) % 2 == 1


def models(data):
    """Scripted models whose answers depend on what they read: NLU forgets every other patient
    line (so the cascaded state is not the gold one), POL is right only on the gold state and
    guesses otherwise, NLG says the gold line (a replayed conversation's history stays the
    dataset's, so the two ways of gathering rows can be compared row for row)."""
    gold = {task: {r["id"]: r for r in load_dataset(str(data), task, split="train")}
            for task in TASK_NAMES}

    def answer(task, row):
        right = gold[task][row["id"]]
        if task == "nlu":
            return ([] if row["uttr_id"] % 4 == 3 else right["nlu"]), True
        if task == "pol":
            return (right["actions"] if row["state"] == right["state"] else GUESS), True
        return right["response"], True
    return scripted_assistant(answer)


def test_the_assistant_and_eval_cascade_give_the_same_rows_and_records(embedded_build):
    dialogues = {r["dialogue_id"]: r for r in load_dataset(str(embedded_build), "dialogues",
                                                          split="train") if replayable(r)}
    assert len(dialogues) >= 2

    # eval-cascade's way: every row of the split at once, cascaded inputs only
    split_models, split_seen = models(embedded_build)
    rows = {task: [r for r in task_rows if r["dialogue_id"] in dialogues]
            for task, task_rows in load_split(str(embedded_build), "train").items()}
    run = cascade(split_models, rows, gold_inputs=False)
    split_rows = {task: run[task].rows for task in TASK_NAMES}
    split_records = {task: run[task].cascaded for task in TASK_NAMES}

    # the assistant's way: each dialogue as a conversation, one patient line per turn
    assistant, seen = models(embedded_build)
    answered = {task: {} for task in TASK_NAMES}  # row id -> (raw, prediction, parse_ok)
    for dialogue_id, dialogue in dialogues.items():
        utterances = dialogue["utterances"]
        conversation = assistant.new_conversation(dialogue_id, opening=utterances[0]["text"])
        for patient, doctor in zip(utterances[1::2], utterances[2::2]):
            turn = assistant.respond(conversation, patient["text"])
            for task, stage in turn.stages():
                row_id = f"{dialogue_id}-{(patient if task.speaker == 'patient' else doctor)['uttr_id']}"
                answered[task.name][row_id] = (stage.raw, stage.value, stage.parse_ok)

    assert sorted(t for t, _ in seen.seen) == sorted(t for t, _ in split_seen.seen)
    for task in TASK_NAMES:
        mine = {row["id"]: {k: row[k] for k in INPUT_COLUMNS[task]}
                for t, row in seen.seen if t == task}
        theirs = {row["id"]: {k: row[k] for k in INPUT_COLUMNS[task]} for row in split_rows[task]}
        assert mine == theirs, task
        assert answered[task] == {r.id: (r.raw, r.prediction, r.parse_ok)
                                  for r in split_records[task]}, task
    differs = [r for r in run["pol"].rows if r["state"] != next(
        g for g in rows["pol"] if g["id"] == r["id"])["state"]]
    assert differs, "the forgetful NLU changes some states: the test compares cascaded rows"
