"""Human-readable companions of a results JSON: a Markdown table and a PNG chart.

NLU/POL: F1 per slot type and attribute class (medical / non-medical / both), with the gold
tuple count, so a reader sees where a model fails. NLG: one row per score.
"""

from __future__ import annotations

from pathlib import Path

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


def write_markdown(results: dict, path: str | Path) -> None:
    title = f"# MediTOD {results['task'].upper()} results ({results['split']})"
    body = _nlg_markdown(results) if results["task"] == "nlg" else _f1_markdown(results)
    Path(path).write_text("\n".join([title, ""] + body) + "\n", encoding="utf-8")


def write_chart(results: dict, path: str | Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if results["task"] == "nlg":
        names = ["BLEU-2/100", "BLEU-4/100", "ROUGE-1", "ROUGE-L"]
        values = [results["bleu2"] / 100, results["bleu4"] / 100, results["rouge1"], results["rougeL"]]
        if results["bertscore"]:
            names.append("BERTScore")
            values.append(results["bertscore"]["f1"])
        fig, ax = plt.subplots(figsize=(6, 3.5))
        ax.bar(names, values, color="tab:blue")
        ax.set_ylabel("score")
        ax.set_ylim(0, 1)
    else:
        slots = list(results["per_slot"])
        fig, ax = plt.subplots(figsize=(8, 0.45 * len(slots) + 1.5))
        height = 0.8 / len(CLASS_LABELS)
        for n, (cls, label) in enumerate(CLASS_LABELS.items()):
            f1 = [results["per_slot"][s].get(cls, {}).get("f1", 0.0) for s in slots]
            ax.barh([i + n * height for i in range(len(slots))], f1, height, label=label)
        ax.set_yticks([i + height for i in range(len(slots))], slots)
        ax.invert_yaxis()
        ax.set_xlabel("F1")
        ax.set_xlim(0, 1)
        ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    ax.set_title(f"MediTOD {results['task'].upper()} ({results['split']})")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
