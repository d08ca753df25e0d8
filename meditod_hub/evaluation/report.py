"""Human-readable companions of a results JSON: a Markdown table and a PNG chart.

NLU/POL: F1 per slot type and attribute class (medical / non-medical / both), with the gold
tuple count, so a reader sees where a model fails. NLG: one row per score.
"""

from __future__ import annotations

import io
import json
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from meditod_hub.data.provenance import Provenance
from meditod_hub.data.tasks import Task
from meditod_hub.files import atomic_write
from meditod_hub.models.records import Results, side_files

CLASS_LABELS = {"medical": "medical", "non_medical": "non-medical", "overall": "overall"}


def _cell(scores: dict | None) -> str:
    if not scores or scores["tp"] + scores["fn"] + scores["fp"] == 0:
        return "–"
    return f"{scores['f1']:.4f} ({scores['tp'] + scores['fn']})"


def _f1_markdown(results: dict) -> list[str]:
    lines = ["| | precision | recall | F1 |", "|---|---|---|---|"]
    for cls, label in CLASS_LABELS.items():
        s = results[cls]
        lines.append(f"| {label} | {s['precision']:.4f} | {s['recall']:.4f} | {s['f1']:.4f} |")
    lines += ["", f"Joint accuracy {results['joint_accuracy']:.4f}; {results['examples']} examples, "
                  f"{results['scored_turns']} scored, {results['parse_failures']} parse failures; "
                  f"judge `{results['judge']['name']}`."]
    if "precision_at_k" in results:
        pak = ", ".join(f"P@{k} {v:.4f}" for k, v in results["precision_at_k"].items())
        lines += ["", f"Precision@K ({results['precision_at_k_mode']}): {pak}."]
    lines += ["", "F1 per slot type (gold tuples in brackets):", "",
              "| slot type | medical | non-medical | overall |", "|---|---|---|---|"]
    for slot, per_class in results["per_slot"].items():
        cells = " | ".join(_cell(per_class.get(cls)) for cls in CLASS_LABELS)
        lines.append(f"| {slot} | {cells} |")
    return lines


def _nlg_markdown(results: dict) -> list[str]:
    lines = ["| score | value |", "|---|---|"]
    lines += [f"| {name} | {results[name]:.4f} |" for name in ("bleu2", "bleu4", "rouge1", "rougeL")]
    lines.append(f"| sacreBLEU | {results['sacrebleu']['score']:.4f} |")
    bert = results["bertscore"]
    lines.append(f"| BERTScore F1 | {bert['f1']:.4f} |" if bert else "| BERTScore F1 | not configured |")
    lines += ["", f"{results['examples']} examples, {results['parse_failures']} parse failures; "
                  f"sacreBLEU signature `{results['sacrebleu']['signature']}`."]
    return lines


def markdown(results: dict, task: Task) -> str:
    """The results table of `results` (a results.json's content) of `task`, titled with what
    it was scored on (MediTOD only for MediTOD's data)."""
    data = Provenance.from_json(results.get("provenance"))
    title = (f"# MediTOD {task.display_name} results ({results['split']})"
             if data is None or data.comparable else
             f"# {task.display_name} results ({results['split']}) on {data.short()}")
    body = _f1_markdown(results) if task.structured else _nlg_markdown(results)
    if "constrained" in results:  # the decoding setting that produced the predictions
        setting = "constrained (CMAS grammar)" if results["constrained"] else "unconstrained"
        body = [f"Decoding: {setting}.", ""] + body
    return "\n".join([title, ""] + body) + "\n"


# --- the kit's one chart engine: Pillow, not matplotlib (importing matplotlib cost 1.9 s of a
# 3.1 s evaluation, and it is no dependency of the kit) ---------------------------------------------
_COLOURS = ((31, 119, 180), (255, 127, 14), (44, 160, 44))  # the n-th series of every chart
_SHADE = (236, 236, 236)  # the band behind a shaded row
_FONT_SIZE, _BAR, _GAP, _PLOT_WIDTH, _MARGIN = 13, 12, 10, 420, 14


def chart_title(results: dict, system: str | None = None) -> tuple[str, str]:
    """Title and subtitle: which model, task and split, on what data, with which decoding."""
    data = Provenance.from_json(results.get("provenance"))
    decoding = "constrained" if results.get("constrained") else "free"
    title = f"{system + ': ' if system else ''}{results['task'].upper()}, {results['split']} split"
    return title, (f"{data.short() if data else 'unrecorded data'}; {decoding} decoding; "
                   f"{results.get('parse_failures', 0)} of {results.get('examples', '?')} "
                   "outputs unparsed")


def chart_png(results: dict, task: Task, system: str | None = None) -> bytes:
    """A horizontal bar chart of `results` (a results.json's content) of `task`: F1 over all
    slots and per slot type, by class (NLU/POL), or each score (NLG); every bar carries its
    value, so zeros read as zeros, not as a blank chart."""
    if not task.structured:
        rows = {"BLEU-2/100": {"score": results["bleu2"] / 100},
                "BLEU-4/100": {"score": results["bleu4"] / 100},
                "ROUGE-1": {"score": results["rouge1"]}, "ROUGE-L": {"score": results["rougeL"]}}
        if results.get("bertscore"):
            rows["BERTScore"] = {"score": results["bertscore"]["f1"]}
        series, axis = ["score"], "score"
    else:
        series, axis = list(CLASS_LABELS.values()), "F1"
        overall = {"medical": results.get("medical", {}), "non_medical": results.get("non_medical", {}),
                   "overall": {"f1": results.get("f1", 0.0)}}
        rows = {"all slots": {label: (overall[cls] or {}).get("f1", 0.0)
                              for cls, label in CLASS_LABELS.items()}}
        rows.update({slot: {label: per_class.get(cls, {}).get("f1", 0.0)
                            for cls, label in CLASS_LABELS.items()}
                     for slot, per_class in results["per_slot"].items()})
    return bar_chart(*chart_title(results, system), rows, series, axis)


def bar_chart(title: str, subtitle: str,
              rows: Mapping[str, Mapping[str, float]] | Sequence[tuple[str, Mapping[str, float]]],
              series: list[str], axis: str, *, axis_max: float = 1.0, fmt: str = ".3f",
              row_colours: Sequence[tuple[int, int, int]] | None = None,
              shaded: Collection[int] = ()) -> bytes:
    """PNG bytes: one group of horizontal bars per row, one bar per series (values in
    0..`axis_max`), each bar labelled with its value (`fmt`). Rows are a mapping or (label,
    values) pairs (labels may repeat); `row_colours` colours each row's bars (else the n-th
    series' colour), `shaded` puts rows (by index) on a grey band. The kit's one chart
    renderer: evaluate's, eval-cascade's and `meditod results`' charts."""
    rows = list(rows.items()) if isinstance(rows, Mapping) else list(rows)
    font = ImageFont.load_default(size=_FONT_SIZE)
    small = ImageFont.load_default(size=_FONT_SIZE - 3)  # the bars' value labels
    measure = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    label_width = max([measure.textlength(r, font=font) for r, _ in rows] + [40]) + _MARGIN
    value_width = max(measure.textlength(t, font=font) for t in ("0.000", format(axis_max, fmt))) + 8
    legend_width = (max(measure.textlength(s, font=font) for s in series) + 30
                    if len(series) > 1 else 0)
    group = _BAR * len(series) + _GAP
    top = 2 * _MARGIN + 2 * (_FONT_SIZE + 4)
    width = int(max(label_width + _PLOT_WIDTH + value_width + legend_width + 2 * _MARGIN,
                    measure.textlength(title, font=font) + 2 * _MARGIN,
                    measure.textlength(subtitle, font=font) + 2 * _MARGIN))
    height = int(top + group * max(len(rows), 1) + 3 * _MARGIN + _FONT_SIZE)
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    draw.text((width / 2, _MARGIN), title, fill="black", font=font, anchor="mt")
    draw.text((width / 2, _MARGIN + _FONT_SIZE + 4), subtitle, fill=(90, 90, 90), font=font,
              anchor="mt")
    x0, bottom = label_width, top + group * len(rows)
    for n in shaded:  # bands first, then the grid, then bars and labels on top
        draw.rectangle([0, top + n * group, width, top + (n + 1) * group - 1], fill=_SHADE)
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        x = x0 + tick * _PLOT_WIDTH
        draw.line([(x, top), (x, bottom)], fill=(225, 225, 225))
        draw.text((x, bottom + 4), f"{tick * axis_max:g}", fill="black", font=font, anchor="mt")
    draw.text((x0 + _PLOT_WIDTH / 2, bottom + 6 + _FONT_SIZE), axis, fill="black", font=font,
              anchor="mt")
    for n, (label, values) in enumerate(rows):
        y = top + n * group
        draw.text((x0 - 6, y + group / 2 - _GAP / 2), label, fill="black", font=font, anchor="rm")
        for k, name in enumerate(series):
            value = min(max(values.get(name, 0.0), 0.0), axis_max)
            length = value / axis_max * _PLOT_WIDTH
            draw.rectangle([x0, y + k * _BAR, x0 + length, y + (k + 1) * _BAR - 1],
                           fill=row_colours[n] if row_colours else _COLOURS[k])
            draw.text((x0 + length + 4, y + k * _BAR + _BAR / 2), format(value, fmt),
                      fill="black", font=small, anchor="lm")
    draw.line([(x0, top), (x0, bottom)], fill="black")
    if len(series) > 1:
        for k, name in enumerate(series):
            y = top + k * (_FONT_SIZE + 6)
            lx = x0 + _PLOT_WIDTH + value_width + _MARGIN
            draw.rectangle([lx, y, lx + 12, y + 12], fill=_COLOURS[k])
            draw.text((lx + 18, y + 6), name, fill="black", font=font, anchor="lm")
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()


def write_results(results: Results, path: str | Path, chart: bool = True, *,
                  purpose: str, system: str | None = None) -> list[Path]:
    """results JSON, then its .md (and .png, titled with `system`: the model) beside it; each
    written atomically and recorded as `purpose`'s output."""
    markdown_path, chart_path = side_files(path)
    data = results.as_json()
    written = [atomic_write(path, json.dumps(data, indent=2) + "\n", purpose=purpose),
               atomic_write(markdown_path, markdown(data, results.scored_task), purpose=purpose)]
    if chart:
        written.append(atomic_write(chart_path, chart_png(data, results.scored_task, system),
                                    purpose=purpose))
    return written
