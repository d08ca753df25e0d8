"""Held-out dialogue moments as the rows a model sees: what eval-policy and eval-nlg share.

A moment is a point in an invented history-taking interview, written for the kit's POL and NLG
checks (`policy_<set>.json`, `nlg_<set>.json` beside this module):

    {"id": "pt-r03-2", "domain": "respiratory", "stage": "mid_history",
     "history": [["doctor", "Hi, what brings you in today?"], ["patient", "..."], ...],
     "doctor": "the doctor's last line", "patient": "the patient's answer to it",
     "state": {...},              # the CMAS state after the patient's line, as DialogueState renders it
     ...}                         # and what the check needs (acceptable actions; actions to say)

`history` is every line before the last exchange, oldest first (none where the last exchange is
the opening question and the chief complaint). A moment becomes the dataset's own row
(`views.to_pol` / `views.to_nlg`): its lines become release utterances, the patient's last line
carries the moment's state as its `dialog_state` (the gold state a row reads, as in a release),
and the doctor line to predict comes last, so each format builds the prompt it trains on (the
chat format's window of the last 4 lines, the state or the actions first).

Both sets of each check were written for it: no corpus the kit generates says their lines, and
nothing trains on them (tests/test_policy_accuracy.py, tests/test_nlg_accuracy.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib import resources

from meditod_hub.data.release import DOCTOR_LABELS
from meditod_hub.data.tasks import LABELLING_TASKS, Task
from meditod_hub.errors import UsageError

SETS = ("dev", "test")  # dev: for choosing (recipes, steps, data); test: for reporting
DOMAINS = ("respiratory", "musculoskeletal")
# Where a moment falls in the interview: just after the chief complaint, while the complaint and
# what goes with it are taken, after the patient has denied several things, near the end (where
# a diagnosis may be said).
STAGES = ("after_complaint", "mid_history", "after_denials", "near_end")


def heldout_items(check: str, which: str) -> list[dict]:
    """The items of `<check>_<which>.json` beside this module (check: policy, nlg)."""
    if which not in SETS:
        raise UsageError(f"no held-out set {which!r}: choose one of {', '.join(SETS)}")
    text = resources.files(__package__).joinpath(f"{check}_{which}.json").read_text(encoding="utf-8")
    return json.loads(text)


def utterances(item: dict, actions: list | None = None, response: str = "") -> list[dict]:
    """The release utterances of a moment: its history, its last exchange (the patient's line
    carrying the moment's state) and the doctor line to predict (`actions`, `response`: its
    labels, which no model input reads)."""
    lines = [*map(tuple, item.get("history", ())), ("doctor", item["doctor"]),
             ("patient", item["patient"])]
    out = []
    for n, (speaker, text) in enumerate(lines):
        out.append({"uttr_id": n, "speaker": speaker, "text": text,
                    LABELLING_TASKS[speaker].target_column: []})
    out[-1]["dialog_state"] = item["state"]
    out.append({"uttr_id": len(out), "speaker": "doctor", "text": response,
                DOCTOR_LABELS: list(actions or [])})
    return out


def moment_rows(task: Task, items: Sequence[dict], check: str) -> list[dict]:
    """Each moment as the row `task`'s dataset view makes of the doctor line that follows it
    (POL: no target is read; NLG: the item's `actions` are its input)."""
    return [task.view(f"{check}-{item['id']}", utterances(item, item.get("actions")))[-1]
            for item in items]


def same_state(a: dict, b: dict) -> bool:
    """Whether two states hold the same entries, whatever order they were said in."""
    return canonical_state(a) == canonical_state(b)


def canonical_state(state: dict) -> dict:
    """A state with its entries (and list values) in a fixed order."""
    return {key: sorted(json.dumps({name: sorted(value) if isinstance(value, list) else value
                                    for name, value in entry.items()}, sort_keys=True)
                        for entry in entries)
            for key, entries in state.items() if entries}
