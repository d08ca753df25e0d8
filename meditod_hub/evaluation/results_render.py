"""A results report as files: results.md, .csv and .json, and one chart per task."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path

from meditod_hub.data import paper_results
from meditod_hub.data.paper_results import cell
from meditod_hub.data.release import EVAL_SPLITS, OOD_SPLIT
from meditod_hub.data.tasks import TASK_NAMES, TASKS, get_task
from meditod_hub.evaluation.report import bar_chart
from meditod_hub.evaluation.results_table import PAPER_DATASET, Report, Row, heading, table_metrics
from meditod_hub.files import atomic_write, output_path

CSV_FIELDS = ("task", "split", "system", "dataset", "setting", "source", "constrained", "family",
              "link", "note")
_SOURCE_COLOURS = {"paper": (150, 150, 150), "local": (31, 119, 180), "hub": (255, 127, 14)}


def markdown(report: Report) -> str:
    lines = ["# MediTOD results", "",
             f"The paper's rows ({paper_results.SOURCE}) beside evaluated runs"
             + (f" and the Hub's models trained on `{report.dataset}`" if report.dataset else "")
             + f"; {report.generated}. Paper rows score non-medical values with a ChatGPT judge."]
    for task, split, rows in report.tables():
        metrics = table_metrics(task, rows)
        lines += ["", f"## {heading(task, split, rows)}", "",
                  "| system | dataset | setting | source | constrained | family | "
                  + " | ".join(m.name for m in metrics) + " | note |",
                  "|---" * (7 + len(metrics)) + "|"]
        for row in rows:
            name = f"[{row.system}]({row.link})" if row.source == "hub" else row.system
            lines.append(f"| {name} | {row.dataset} | {row.setting} | {row.source} | "
                         f"{'yes' if row.constrained else 'no'} | {row.family or '—'} | "
                         + " | ".join(cell(row.value(m.key), m) for m in metrics)
                         + f" | {row.note} |")
    if report.unread:
        lines += ["", "## Hub models without a row", ""]
        lines += [f"- [{u.repo}]({u.link}): {u.reason}" for u in report.unread]
    return "\n".join(lines) + "\n"


def json_data(report: Report) -> dict:
    """results.json: every table with its heading and metrics, the unread models, the skipped
    files."""
    return {"generated": report.generated, "dataset": report.dataset,
            "paper": paper_results.SOURCE,
            "tables": [{"task": task, "split": split, "heading": heading(task, split, rows),
                        "metrics": [{"key": m.key, "name": m.name}
                                    for m in table_metrics(task, rows)],
                        "rows": [asdict(r) for r in rows]}
                       for task, split, rows in report.tables()],
            "unread": [asdict(u) for u in report.unread], "skipped": report.skipped}


def csv_text(report: Report) -> str:
    keys = list(dict.fromkeys(m.key for t in TASK_NAMES for m in get_task(t).metrics))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([*CSV_FIELDS, *keys])
    for row in report.rows:
        writer.writerow([row.task, row.split, row.system, row.dataset, row.setting, row.source,
                         "yes" if row.constrained else "no", row.family, row.link, row.note,
                         *("" if row.value(k) is None else repr(row.value(k)) for k in keys)])
    for u in report.unread:
        writer.writerow(["", "", u.repo, "", "", "hub", "", "", u.link, u.reason,
                         *[""] * len(keys)])
    return buffer.getvalue()


def chart_heading(task: str, metric: str, rows: list[Row]) -> str:
    """The chart's title says what its bars were scored on: MediTOD only when every bar was
    (the paper's rows, runs on MediTOD or on a Hub dataset), else each dataset by name."""
    if all(r.comparable for r in rows):
        return f"MediTOD {task.upper()}: {metric} by system"
    datasets = list(dict.fromkeys(PAPER_DATASET if r.comparable else r.dataset for r in rows))
    return f"{task.upper()}: {metric} by system, on {' and '.join(datasets)}"


def chart_png(task: str, rows: list[Row]) -> bytes:
    """Horizontal bars: the task's headline metric per system, test then test_ood; the paper's
    rows on a shaded band (the kit's one renderer, `evaluation.report.bar_chart`)."""
    metric = TASKS[task].headline_metric
    shown = [r for split in EVAL_SPLITS for r in rows if r.split == split and r.value(metric.key)
             is not None]
    labels = [f"{r.system} ({r.setting}{', constrained' if r.constrained else ''}"
              f"{', OOD' if r.split == OOD_SPLIT else ''})"
              + ("" if r.comparable else f" on {r.dataset}") for r in shown]
    top_value = max([r.value(metric.key) for r in shown] + [1e-9])
    axis_max = 1.0 if top_value <= 1 else math.ceil(top_value / 10) * 10
    return bar_chart(chart_heading(task, metric.name, shown),
                     "grey band: the paper's rows · blue: local runs · orange: Hub models",
                     [(label, {metric.name: r.value(metric.key)}) for r, label in zip(shown, labels)],
                     [metric.name], metric.name, axis_max=axis_max, fmt=metric.fmt,
                     row_colours=[_SOURCE_COLOURS[r.source] for r in shown],
                     shaded=[n for n, r in enumerate(shown) if r.source == "paper"])


def write_report(report: Report, out: Path, input_folders: Iterable = ()) -> list[Path]:
    """results.md, .csv, .json and one chart per task in `out`; every path checked first (never
    inside the folders the runs were read from, never over a file another command wrote)."""
    targets = {name: output_path(out / name, purpose="results", input_folders=input_folders,
                                 what="results output")
               for name in ("results.md", "results.csv", "results.json",
                            *(f"{task}.png" for task in TASK_NAMES))}
    texts = {"results.md": markdown(report), "results.csv": csv_text(report),
             "results.json": json.dumps(json_data(report), indent=2) + "\n",
             **{f"{task}.png": chart_png(task, [r for r in report.rows if r.task == task])
                for task in TASK_NAMES}}
    return [atomic_write(targets[name], data, purpose="results") for name, data in texts.items()]
