"""A dialogue's labels: which key holds each utterance's label (`LABEL_KEY`, from the labelling
tasks), a dialogue given new labels (validated, each patient state refolded, the draft flag set
exactly when the labels have errors: `with_labels`), the state after each utterance, and a
problem as the page shows it.

Apart from the store because these are pure functions of a dialogue, shared by the store, the
server and the questionnaire's schema, and tested without a release folder.
"""

from __future__ import annotations

import copy

from meditod_hub.data.release import DIALOGS_FILE, DRAFT_KEY, PATIENT_LABELS, Problem, dialogue_problems
from meditod_hub.data.state import fold_states
from meditod_hub.data.tasks import LABELLING_TASKS
from meditod_hub.errors import MeditodError

LABEL_KEY = {speaker: task.target_column for speaker, task in LABELLING_TASKS.items()}


def label_of(utterance: dict) -> list:
    return utterance.get(LABEL_KEY.get(utterance.get("speaker"), PATIENT_LABELS), [])


def with_labels(dialogue_id: str, dialogue: dict, labels: list) -> tuple[dict, list[Problem]]:
    """A copy of `dialogue` holding `labels` (one list per utterance), its states recomputed by
    the fold (left as they were when the labels have errors: the fold needs valid labels), its
    draft flag set exactly when the labels have errors, and its problems."""
    utterances = dialogue["utterances"]
    if not all(isinstance(u, dict) for u in utterances):
        raise MeditodError(f"dialogue {dialogue_id}: an utterance is not a JSON object; fix "
                           f"{DIALOGS_FILE} by hand first")
    if not isinstance(labels, list) or len(labels) != len(utterances):
        raise MeditodError(f"dialogue {dialogue_id}: expected one label list per utterance "
                           f"({len(utterances)}), got {len(labels) if isinstance(labels, list) else 'none'}")
    new = copy.deepcopy(dialogue)
    new.pop(DRAFT_KEY, None)
    for utt, label in zip(new["utterances"], labels):
        key = LABEL_KEY.get(utt.get("speaker"))
        if key is None:
            raise MeditodError(f"dialogue {dialogue_id}, utterance {utt.get('uttr_id')}: unknown "
                               "speaker, cannot label it")
        utt[key] = label
    if any(p.error for p in dialogue_problems(dialogue_id, new)):
        new[DRAFT_KEY] = True
    else:
        patients = [u for u in new["utterances"] if u["speaker"] == "patient"]
        for utt, state in zip(patients, fold_states(u[PATIENT_LABELS] for u in patients)):
            _set_state(utt, state)
    return new, dialogue_problems(dialogue_id, new)


def _set_state(utterance: dict, state: dict) -> None:
    """Set `dialog_state` where it is, or just before `nlu` as the release orders keys."""
    if "dialog_state" in utterance:
        utterance["dialog_state"] = state
        return
    items = list(utterance.items())
    at = next((i for i, (k, _) in enumerate(items) if k == PATIENT_LABELS), len(items))
    utterance.clear()
    utterance.update(items[:at] + [("dialog_state", state)] + items[at:])


def states_after(dialogue: dict) -> list[dict]:
    """The patient's state after each utterance (a doctor's: the state after the last patient
    utterance before it), as the dataset's state fold computes it."""
    utterances = dialogue["utterances"]
    folded = iter(fold_states(u[PATIENT_LABELS] for u in utterances if u["speaker"] == "patient"))
    out, current = [], {}
    for utt in utterances:
        if utt["speaker"] == "patient":
            current = next(folded)
        out.append(current)
    return out


def problem_dict(problem: Problem) -> dict:
    return {"uttr_id": problem.uttr_id, "message": problem.message, "error": problem.error}
