"""An lm-evaluation-harness results file (`results_<date>.json` under `--output_path`) read back
as the kit's scores: one entry per MediTOD task in it, with the results.json keys `meditod
evaluate` writes (the harness names map back through `scoring.metric_keys`), the split, the
setting, the model and what the rows were (the task folder's dataset provenance). `meditod
results` (`make results`) lists them beside the runs; `meditod publish` shows those a run keeps
in its `eval/lm-eval/` on the model card (`read_folder`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from meditod_hub.data.tasks import TASKS
from meditod_hub.evaluation.harness import scoring

FILTER = "none"  # lm-eval's name for the unfiltered answers: `<metric>,none`
RESULTS_PREFIX = "results_"  # lm-eval's results_<date>.json under --output_path/<model>/


@dataclass
class HarnessScores:
    task: str
    split: str
    setting: str        # in-context | supervised
    system: str         # the model as lm-eval names it
    scores: dict        # results.json keys -> values
    record: dict       # what the task folder recorded of its data (`proof.record`)
    note: str
    name: str = ""             # the lm-eval task name (`meditod_nlu_ft`)
    lm_eval_version: str = ""
    limit: int | float | None = None  # lm-eval's --limit: a subset of the split


def is_lm_eval(data: dict) -> bool:
    return isinstance(data.get("results"), dict) and isinstance(data.get("configs"), dict)


def _system(data: dict) -> str:
    config = data.get("config") if isinstance(data.get("config"), dict) else {}
    args = config.get("model_args") if isinstance(config.get("model_args"), dict) else {}
    return str(data.get("model_name") or args.get("pretrained") or args.get("model")
               or config.get("model") or "?")


def harness_scores(data: dict) -> list[HarnessScores]:
    """The MediTOD tasks of an lm-eval results file (others are left out)."""
    out = []
    config = data.get("config") if isinstance(data.get("config"), dict) else {}
    for name, results in data["results"].items():
        task_config = data["configs"].get(name)
        meta = ((task_config or {}).get("metadata") or {}).get("meditod") \
            if isinstance(task_config, dict) else None
        if not isinstance(meta, dict) or meta.get("task") not in TASKS or not isinstance(results, dict):
            continue
        scores: dict = {}
        for harness_name, key in scoring.metric_keys(meta["task"]).items():
            value = results.get(f"{harness_name},{FILTER}")
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                node = scores
                *parents, last = key.split(".")
                for part in parents:
                    node = node.setdefault(part, {})
                node[last] = float(value)
        shots = (data.get("n-shot") or {}).get(name)
        setting = scoring.SETTINGS.get(meta.get("setting"), "unknown")
        note = f"lm-eval {data.get('lm_eval_version', '')}".strip()
        if setting == "in-context":
            note += f", {shots if shots is not None else meta.get('shots')} retrieved exemplars"
        if config.get("limit"):
            note += f", --limit {config['limit']} (a subset of the split)"
        out.append(HarnessScores(meta["task"], str(meta.get("split", "test")), setting,
                                 _system(data), scores, meta, note, name,
                                 str(data.get("lm_eval_version") or ""), config.get("limit")))
    return out


def read_folder(folder: Path) -> list[HarnessScores]:
    """The MediTOD tasks of every lm-eval results file under `folder`, the newest file's entry
    for a task lm-eval ran more than once (its files are named by date); unreadable files and
    other JSON are passed over."""
    newest: dict[str, HarnessScores] = {}
    for path in sorted(Path(folder).rglob(f"{RESULTS_PREFIX}*.json"), key=lambda p: p.name):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            continue
        if isinstance(data, dict) and is_lm_eval(data):
            newest.update({found.name: found for found in harness_scores(data)})
    return list(newest.values())
