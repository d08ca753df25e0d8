"""A harness's raw answers -> the kit's scores, through the kit's own parsers and `Task.score`.

A harness hands back, per row, the text the model generated. `parse` reads it as the kit does
for the same setting: the in-context answer with `fewshot.prompts.parse_answer` (as `meditod
fewshot`), the fine-tuned answer with its family's parser (as `meditod predict`: the chat
family's by default, a span family's for a folder written for Flan-T5, BioGPT or PPTOD); an
answer that does not parse is scored as empty and counted, as everywhere in the kit. `score`
scores a whole split with `Task.score` and the exact judge (`meditod evaluate`'s default), so
F1, Precision@K, BLEU and parse failures are the numbers `meditod evaluate` writes. Harnesses ask
for one metric at a time; the split is scored once and the result reused.

Metric names in a harness are the kit's results.json keys with `.` as `_` (`medical.f1` ->
`medical_f1`, `precision_at_k.1` -> `precision_at_k_1`), plus `parse_failures`; BERTScore is
left out (null without a local model, as in `meditod evaluate`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from meditod_hub.data.metrics import make_judge
from meditod_hub.data.tasks import get_task
from meditod_hub.evaluation.fewshot.prompts import parse_answer
from meditod_hub.models.families import get_family
from meditod_hub.models.records import value_at

SETTINGS = {"icl": "in-context", "ft": "supervised"}  # harness setting -> results' setting
CHAT_FAMILY = "chat"  # the fine-tuned family when none is named (`families`)
PARSE_FAILURES = "parse_failures"
_LEFT_OUT = {"bertscore.f1"}


def harness_name(key: str) -> str:
    return key.replace(".", "_")


def process_name(setting: str, task: str, family: str | None = None) -> str:
    """The task files' per-row function: `process_ft_nlu`, `process_ft_flan_t5_nlu` (a span
    family's fine-tuned task)."""
    fam = f"{family.replace('-', '_')}_" if family and family != CHAT_FAMILY else ""
    return f"process_{setting}_{fam}{task}"


def metric_keys(task: str) -> dict[str, str]:
    """{harness metric name: results.json key} of a task, parse failures last."""
    keys = [m.key for m in get_task(task).metrics if m.key not in _LEFT_OUT] + [PARSE_FAILURES]
    return {harness_name(k): k for k in keys}


def parse(setting: str, task: str, raw: str, family: str | None = None):
    """The label of one raw answer, or None when it does not parse (scored as empty). `family`:
    the fine-tuned model's (`families`; default the chat family)."""
    if setting == "icl":
        parsed = parse_answer(task, raw)
    elif setting == "ft":
        parsed = get_family(family or CHAT_FAMILY).parse(task, raw.strip())  # as predict strips
    else:
        raise ValueError(f"unknown harness setting {setting!r}: choose one of {', '.join(SETTINGS)}")
    return parsed.value if parsed.ok else None


_SCORED: dict[str, dict] = {}


def score(setting: str, task: str, rows: Sequence[dict], raws: Sequence[str],
          family: str | None = None) -> dict:
    """`Task.score` of the parsed answers against their rows (cached per exact input)."""
    key = hashlib.sha256(json.dumps([setting, task, family, [r["id"] for r in rows], list(raws)])
                         .encode()).hexdigest()
    if key not in _SCORED:
        labels = [parse(setting, task, raw, family) for raw in raws]
        _SCORED[key] = get_task(task).score(rows, labels, judge=make_judge("exact"))
    return _SCORED[key]


def item(setting: str, task: str, doc: dict, raw: str, family: str | None = None) -> str:
    """What a harness keeps per row until it aggregates: one JSON text (hashable, picklable). A
    row whose span-family input did not fit (`rows`: `ft_unfit`) keeps no answer, as predict."""
    if not isinstance(raw, str) or doc.get("ft_unfit"):
        raw = ""
    return json.dumps([setting, task, doc["row"], raw, family])


def aggregate(items: Sequence[str], key: str) -> float:
    """One metric of a split from the per-row items."""
    decoded = [json.loads(i) for i in items]
    if not decoded:
        return float("nan")
    setting, task = decoded[0][0], decoded[0][1]
    family = decoded[0][4] if len(decoded[0]) > 4 else None
    rows = [json.loads(d[2]) for d in decoded]
    value = value_at(score(setting, task, rows, [d[3] for d in decoded], family), key)
    return float("nan") if value is None else float(value)
