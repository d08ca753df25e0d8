"""Inter-annotator agreement: two annotators' releases of the same dialogues, scored with the
project's own NLU and POL metrics.

    meditod agreement --a annotator-a --b annotator-b --out agreement.json
    make agreement A=annotator-a B=annotator-b [OUT=folder]     # writes OUT/agreement.json

A is read as gold and B as the prediction, through the evaluation `make evaluate` runs (same result
keys); `f1_b_as_gold` swaps the roles (the scoring skips turns by the *gold* label, so the two
differ) and `symmetric_f1` is their mean. `disagreements` lists, per dialogue and utterance, the
label paths (intent or action / slot / attribute) on which the two differ: names only, never
text or values, so the file and the log can be shared. Dialogues present in only one release
are listed, not scored.
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field

from meditod_hub.data.release import ReleaseError, read_release
from meditod_hub.data.tasks import LABELLED_TASK_NAMES, LABELLED_TASKS, Task, view_rows
from meditod_hub.errors import MeditodError

SHOWN = 20  # disagreements printed; the file holds them all


@dataclass
class AgreementArguments:
    a: str = field(metadata={"help": "annotator A's release folder (read as gold)"})
    b: str = field(metadata={"help": "annotator B's release folder (read as the prediction)"})
    out: str | None = field(default=None, metadata={"help": "results JSON to write"})


def score(task: Task, gold_rows: list[dict], labels: list) -> dict:
    """`meditod evaluate`'s scores of `labels` against `gold_rows` (the task's `score`)."""
    return task.score(gold_rows, labels)


def load(folder: str, side: str) -> dict[str, dict]:
    try:
        release = read_release(folder)
    except ReleaseError as exc:
        first = str(exc).splitlines()[0]
        raise MeditodError(f"{side}: {first} (`python meditod.py build --source {folder}` lists "
                           "them)") from None
    if release.problems:
        print(f"{side}: {len(release.problems)} warning(s) in {folder} (`python meditod.py build "
              f"--source {folder}` lists them)", file=sys.stderr)
    return release.dialogues


def check_same_dialogue(did: str, a: dict, b: dict) -> None:
    ua, ub = a["utterances"], b["utterances"]
    if len(ua) != len(ub):
        raise MeditodError(f"dialogue {did}: {len(ua)} utterances in A, {len(ub)} in B: these are "
                           "not labels of the same dialogue")
    for x, y in zip(ua, ub):
        if (x["speaker"], x["text"]) != (y["speaker"], y["text"]):
            raise MeditodError(f"dialogue {did}, utterance {x['uttr_id']}: speaker or text differ "
                               "between A and B: these are not labels of the same dialogue")


def label_paths(task: Task, label: list) -> Counter:
    """(name path, value) pairs of one label; paths are names only (intent or action / slot /
    attribute or check)."""
    out: Counter = Counter()
    for item in label:
        kind, slots = item.get(task.item_head), task.item_slots(item)
        if not slots:
            out[(kind,), None] += 1
        for slot, entries in slots.items():
            for entry in entries:
                for path, value in task.entry_paths(entry):
                    out[(kind, slot, *path), value] += 1
    return out


def disagreements(task: Task, rows_a: list[dict], labels_b: list) -> list[dict]:
    found = []
    for row, b in zip(rows_a, labels_b):
        pa, pb = label_paths(task, row[task.target_column]), label_paths(task, b)
        only_a = sorted({"/".join(p) for p, _ in pa - pb})
        only_b = sorted({"/".join(p) for p, _ in pb - pa})
        if only_a or only_b:
            found.append({"dialogue_id": row["dialogue_id"], "uttr_id": row["uttr_id"],
                          "only_a": only_a, "only_b": only_b})
    return found


def agreement(a: dict[str, dict], b: dict[str, dict]) -> dict:
    shared = [did for did in a if did in b]
    if not shared:
        raise MeditodError("A and B have no dialogue id in common: nothing to compare")
    for did in shared:
        check_same_dialogue(did, a[did], b[did])
    results: dict = {}
    for task in LABELLED_TASKS:
        name, column = task.name, task.target_column
        rows_a = [r for did in shared for r in view_rows(name, did, a[did])]
        rows_b = {r["id"]: r for did in shared for r in view_rows(name, did, b[did])}
        labels_b = [rows_b[r["id"]][column] for r in rows_a]
        forward = score(task, rows_a, labels_b)
        backward = score(task, [rows_b[r["id"]] for r in rows_a], [r[column] for r in rows_a])
        results[name] = {"task": name, "split": "all", **forward,
                         "f1_b_as_gold": backward["f1"],
                         "symmetric_f1": (forward["f1"] + backward["f1"]) / 2,
                         "disagreements": disagreements(task, rows_a, labels_b)}
    results["dialogues"] = shared
    results["only_in_a"] = [did for did in a if did not in b]
    results["only_in_b"] = [did for did in b if did not in a]
    return results


def summary(results: dict) -> str:
    lines = [f"{len(results['dialogues'])} dialogue(s) compared"
             + (f"; only in A: {len(results['only_in_a'])}" if results["only_in_a"] else "")
             + (f"; only in B: {len(results['only_in_b'])}" if results["only_in_b"] else "")]
    for task in LABELLED_TASK_NAMES:
        r = results[task]
        lines.append(f"{task}: F1 {r['f1']:.4f} (A gold), {r['f1_b_as_gold']:.4f} (B gold), "
                     f"symmetric {r['symmetric_f1']:.4f}; joint accuracy "
                     f"{r['joint_accuracy']:.4f}; {len(r['disagreements'])} of {r['examples']} "
                     "utterances disagree")
        for d in r["disagreements"][:SHOWN]:
            lines.append(f"  dialogue {d['dialogue_id']}, utterance {d['uttr_id']}: only A "
                         f"{', '.join(d['only_a']) or '-'}; only B {', '.join(d['only_b']) or '-'}")
        if len(r["disagreements"]) > SHOWN:
            lines.append(f"  ... and {len(r['disagreements']) - SHOWN} more (see the results file)")
    return "\n".join(lines)
