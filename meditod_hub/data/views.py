"""Pure mapping functions from one validated dialogue to the rows of each dataset config.

Rows are formed by speaker, not by index parity (upstream assumed strict alternation; see
docs/format.md, "Dataset views"):
* `nlu`: one row per patient utterance; the state is the one *after* it.
* `pol` / `nlg`: one row per doctor utterance that has a patient utterance before it (the
  opening "what brings you in" line is never a target); the state is the one after the last
  patient utterance before it. POL rows are the NLG rows without `response`, built once.
On an alternating, doctor-final dialogue this gives exactly the authors' PPTOD turns, with
`turn` equal to their `turn_num`.

Structured labels (`nlu`, `actions`, `state`, dialogue `utterances`) use the `datasets.Json`
feature: attribute keys vary per entry and their *order* is part of the label (the PPTOD span
serialisation follows it), which a superset struct would lose along with ~40 null fields per
entry. Json keeps the release JSON byte-exact and still shows as readable JSON in the viewer;
the typed `intents` / `action_types` columns give the viewer something to filter on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from meditod_hub.data.release import PATIENT_LABELS, action_label_errors, nlu_label_errors
from meditod_hub.data.state import DialogueState
from meditod_hub.errors import MeditodError, name_ids

# The columns of each config in `datasets.Features.to_dict()` form: one spec from which the build
# derives the Parquet schema, dataset_infos.json and the card's `dataset_info` without importing
# `datasets` (`tasks.features()` gives the `datasets.Features` object for users and tests). Each
# task holds its own (`Task.features`, `Task.view`); `tasks.FEATURES` has every config's.
STRING = {"dtype": "string", "_type": "Value"}
INT32 = {"dtype": "int32", "_type": "Value"}
JSON = {"_type": "Json"}


def list_of(feature: dict) -> dict:
    return {"feature": feature, "_type": "List"}


_ROW_HEAD = {"id": STRING, "dialogue_id": STRING, "turn": INT32, "uttr_id": INT32,
             "context": list_of({"uttr_id": INT32, "speaker": STRING, "text": STRING})}
DIALOGUE_FEATURES = {
    "dialogue_id": STRING,
    "num_utterances": INT32,
    "utterances": list_of(JSON),
    "metadata": JSON,  # dialogue-level keys other than `utterances` (normally {})
}
NLU_FEATURES = {
    **_ROW_HEAD,
    "last_doctor_text": STRING,  # the doctor line before the patient's (null if none)
    "patient_text": STRING,
    "intents": list_of(STRING),
    PATIENT_LABELS: JSON,
    "state": JSON,  # after this patient utterance
}
POL_FEATURES = {
    **_ROW_HEAD,
    "last_patient_text": STRING,
    "state": JSON,  # before this doctor utterance
    "action_types": list_of(STRING),
    "actions": JSON,
}
NLG_FEATURES = {**POL_FEATURES, "response": STRING}


def _context(utterances: list[dict]) -> list[dict]:
    return [{"uttr_id": u["uttr_id"], "speaker": u["speaker"], "text": u["text"]} for u in utterances]


def _state(utt: dict, state: DialogueState) -> dict:
    # The release's own state is the gold one; a recomputed state only fills a missing field
    # (rendered only then: rendering every turn was the build's hot path).
    state.update(utt[PATIENT_LABELS])
    return utt["dialog_state"] if "dialog_state" in utt else state.render()


def _row_head(dialogue_id: str, utt: dict, turn: int, context: list[dict]) -> dict:
    """The columns every NLU / POL / NLG row opens with, in the dataset's order."""
    return {"id": f"{dialogue_id}-{utt['uttr_id']}", "dialogue_id": dialogue_id, "turn": turn,
            "uttr_id": utt["uttr_id"], "context": context}


def to_dialogue(dialogue_id: str, dialogue: dict) -> dict:
    return {"dialogue_id": dialogue_id,
            "num_utterances": len(dialogue["utterances"]),
            "utterances": dialogue["utterances"],
            "metadata": {k: v for k, v in dialogue.items() if k != "utterances"}}


def to_nlu(dialogue_id: str, utterances: list[dict]) -> list[dict]:
    rows, state, last_doctor = [], DialogueState(), None
    context = _context(utterances)  # rows share these dicts: one context list per row was O(n^2)
    for index, utt in enumerate(utterances):
        if utt["speaker"] == "doctor":
            last_doctor = utt["text"]
            continue
        rows.append({
            **_row_head(dialogue_id, utt, len(rows), context[:index]),
            "last_doctor_text": last_doctor,
            "patient_text": utt["text"],
            "intents": [item["intent"] for item in utt[PATIENT_LABELS]],
            PATIENT_LABELS: utt[PATIENT_LABELS],
            "state": _state(utt, state),
        })
    return rows


def to_nlg(dialogue_id: str, utterances: list[dict]) -> list[dict]:
    rows, state, last_patient = [], DialogueState(), None
    current: dict = {}
    context = _context(utterances)
    for index, utt in enumerate(utterances):
        if utt["speaker"] == "patient":
            last_patient = utt["text"]
            current = _state(utt, state)
            continue
        if last_patient is None:  # opening doctor line(s): never a target
            continue
        rows.append({
            **_row_head(dialogue_id, utt, len(rows), context[:index]),
            "last_patient_text": last_patient,
            "state": current,
            "action_types": [act["action"] for act in utt["actions"]],
            "actions": utt["actions"],
            "response": utt["text"],
        })
    return rows


def pol_of(nlg_rows: list[dict]) -> list[dict]:
    """POL rows are the NLG rows without the target (`response`)."""
    return [{k: row[k] for k in POL_FEATURES} for row in nlg_rows]


def to_pol(dialogue_id: str, utterances: list[dict]) -> list[dict]:
    return pol_of(to_nlg(dialogue_id, utterances))


# --- cascaded rows: the pipeline reading of POL and NLG --------------------------------------
# The authors fed every model gold inputs (docs/format.md, "Model formats"); the paper describes
# a pipeline. These rebuild `pol`/`nlg` rows from upstream *predictions* (example id -> parsed
# label, None for one that did not parse): POL rows whose `state` folds the predicted NLU of every
# patient line before the doctor line, NLG rows whose `actions` are the predicted ones. A label
# that did not parse, or that the fold / metrics cannot take (`release.nlu_label_errors`,
# `action_label_errors`), adds nothing.

class MissingPredictions(MeditodError):
    """An upstream predictions file lacks ids the cascade needs."""


def _require(ids: list[str], predictions: Mapping, what: str) -> None:
    missing = [i for i in ids if i not in predictions]
    if missing:
        raise MissingPredictions(f"no predicted {what} for {len(missing)} id(s): "
                                 f"{name_ids(missing)}; predict every row of the split first")


def _usable(errors: Callable[[list], list[str]], label) -> list:
    return label if label is not None and not errors(label) else []


def cascade_pol_rows(pol_rows: Sequence[dict],
                     nlu_predictions: Mapping[str, list | None]) -> list[dict]:
    """POL (or NLG) rows whose `state` is folded from predicted NLU labels."""
    patient_ids = [[f"{row['dialogue_id']}-{c['uttr_id']}" for c in row["context"]
                    if c["speaker"] == "patient"] for row in pol_rows]
    _require(sorted({i for ids in patient_ids for i in ids}), nlu_predictions, f"`{PATIENT_LABELS}` labels")
    states: dict[str, DialogueState] = {}
    folded: dict[str, set[str]] = {}
    out: list[dict | None] = [None] * len(pol_rows)
    for index in sorted(range(len(pol_rows)), key=lambda i: (pol_rows[i]["dialogue_id"],
                                                            pol_rows[i]["uttr_id"])):
        row = pol_rows[index]
        state = states.setdefault(row["dialogue_id"], DialogueState())
        done = folded.setdefault(row["dialogue_id"], set())
        for pid in patient_ids[index]:
            if pid not in done:
                state.update(_usable(nlu_label_errors, nlu_predictions[pid]))
                done.add(pid)
        out[index] = {**row, "state": state.render()}
    return out


def cascade_nlg_rows(nlg_rows: Sequence[dict],
                     pol_predictions: Mapping[str, list | None]) -> list[dict]:
    """NLG rows whose `actions` (and `action_types`) are the predicted actions."""
    _require([row["id"] for row in nlg_rows], pol_predictions, "actions")
    out = []
    for row in nlg_rows:
        actions = _usable(action_label_errors, pol_predictions[row["id"]])
        out.append({**row, "actions": actions, "action_types": [a["action"] for a in actions]})
    return out
