"""The paper's numbers (`meditod_hub.data.paper_results`, their one home) against the paper itself:
every number of its results tables (LaTeX source, supervised and in-context, in-domain and
out-of-domain, appendix included) is in the module, and the module holds no other number; the
spec's summary tables (`../shared/spec/paper-results.md`) agree with it. Skips with the reason
when ../shared is absent (it is beside the project only in development checkouts)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from meditod_hub.data import paper_results

SHARED = Path(__file__).resolve().parent.parent.parent / "shared"
PAPER_TEX = SHARED / "paper" / "meditod-arxiv-2410.14204.tex"
SPEC = SHARED / "spec" / "paper-results.md"

NAMES = {"PPTOD (base)": "pptod-base", "Flan-T5 (base)": "flan-t5-base", "BioGPT": "biogpt",
         "OpenBioLLM 8B": "openbiollm-8b", "OpenBioLLM 70B": "openbiollm-70b",
         "Llama3 8B": "llama3-8b", "Llama 8B": "llama3-8b", "Llama3 70B": "llama3-70b",
         "ChatGPT": "chatgpt", "GPT-4": "gpt-4", "GPT-4-Turbo": "gpt-4-turbo"}
PRF = tuple(f"{p}{s}" for p in ("", "medical.", "non_medical.") for s in ("precision", "recall", "f1"))
F1 = ("f1", "medical.f1", "non_medical.f1")
PAK = tuple(f"precision_at_k.{k}" for k in ("1", "4", "8", "inf"))
NLG = ("bleu2", "bleu4", "rouge1", "rougeL", "bertscore.f1")
TEX_TABLES = {  # LaTeX label -> (task, split, results.json key of each numeric column)
    "tab:nlu_results": ("nlu", "test", F1), "tab:nlu_results_ext": ("nlu", "test", PRF),
    "tab:pol_results": ("pol", "test", F1), "tab:pol_results2": ("pol", "test", PAK),
    "tab:pol_results_ext": ("pol", "test", PRF + PAK), "tab:nlg_results": ("nlg", "test", NLG),
    "tab:ood_nlu": ("nlu", "test_ood", F1), "tab:ood_pol": ("pol", "test_ood", F1),
    "tab:ood_nlg": ("nlg", "test_ood", NLG),
}


def _table_rows(tex: str, label: str) -> list[tuple[str, list[float]]]:
    """(model key, numbers) per row of the table labelled `label` (not a commented-out copy)."""
    table = tex[:re.search(rf"^\\label\{{{label}\}}", tex, re.M).start()]
    table = table[table.rindex("\\begin{table"):]
    rows, setting = [], None
    for line in table.splitlines():
        if line.lstrip().startswith("%"):
            continue
        cells = line.split("&")
        if re.search(r"Supervised", cells[0]):
            setting = "supervised"
        elif re.search(r"In-[cC]ontext", cells[0]):
            setting = "in-context"
        if len(cells) > 2 and cells[1].strip() in NAMES:
            model = NAMES[cells[1].strip()]
            rows.append((paper_results.IN_CONTEXT + model if setting == "in-context" else model,
                         [float(re.findall(r"\d+(?:\.\d+)?", c)[-1]) for c in cells[2:]]))
    return rows


def _printed() -> dict[tuple[str, str, str], dict[str, float]]:
    tex = PAPER_TEX.read_text(encoding="utf-8")
    printed: dict[tuple[str, str, str], dict[str, float]] = {}
    for label, (task, split, keys) in TEX_TABLES.items():
        rows = _table_rows(tex, label)
        assert rows, f"no rows parsed from {label}"
        for model, values in rows:
            assert len(values) == len(keys), (label, model, values)
            row = printed.setdefault((model, task, split), {})
            for key, value in zip(keys, values):
                assert row.setdefault(key, value) == value, f"{label} disagrees on {model} {key}"
    return printed


def test_every_number_of_the_papers_tables_and_no_other():
    if not PAPER_TEX.is_file():
        pytest.skip(f"the paper's LaTeX is not at {PAPER_TEX}")
    printed = _printed()
    assert paper_results.RESULTS == printed
    # 5 supervised + 7 in-context rows in each in-domain task; 2 + 2 out-of-domain
    assert len(printed) == 3 * 12 + 3 * 4
    assert sum(len(row) for row in printed.values()) == 12 * (9 + 13 + 5) + 4 * (3 + 3 + 5)


def test_the_spec_summary_agrees():
    if not SPEC.is_file():
        pytest.skip(f"the paper's tables are not at {SPEC}")
    sections = {"NLU, in-domain": ("nlu", ("precision", "recall", "f1", "medical.f1",
                                           "non_medical.f1")),
                "POL, in-domain": ("pol", F1 + PAK), "NLG, in-domain": ("nlg", NLG)}
    ood_names = {"F1": "f1", "medical": "medical.f1", "non-medical": "non_medical.f1",
                 "BLEU-2": "bleu2", "BLEU-4": "bleu4", "ROUGE-1": "rouge1", "ROUGE-L": "rougeL",
                 "BERTScore": "bertscore.f1"}

    def model(cell: str) -> str:
        cell = re.sub(r"\s*\((best few-shot|supervised)\)$", "", cell.replace("**", ""))
        name = NAMES[cell.removeprefix("in-context ")]
        return paper_results.IN_CONTEXT + name if cell.startswith("in-context ") else name

    checked = 0
    for section in re.split(r"^## ", SPEC.read_text(encoding="utf-8"), flags=re.M)[1:]:
        title, body = section.split("\n", 1)
        rows = [[c.strip() for c in line.strip().strip("|").split("|")]
                for line in body.splitlines() if line.startswith("| ") and "---" not in line][1:]
        key = next((k for k in sections if title.startswith(k)), None)
        for cells in rows:
            if key:
                task, keys = sections[key]
                figures = dict(zip(keys, (float(c.replace("*", "")) for c in cells[1:])))
                split, name = "test", cells[0]
            elif title.startswith("Out-of-domain"):
                task, name, result = cells[0].lower(), cells[1], cells[2]
                split = "test_ood"
                figures = {ood_names[n]: float(v) for n, v in re.findall(
                    r"(non-medical|medical|F1|BLEU-[24]|ROUGE-[1L]|BERTScore) ([\d.]+)", result)}
            else:
                continue
            row = paper_results.paper_row(model(name), task, split)
            assert {k: row.get(k) for k in figures} == figures, (name, task, split)
            checked += len(figures)
    assert checked == 6 * 5 + 6 * 7 + 6 * 5 + 3 + 1 + 1 + 1 + 5 + 5


def test_every_model_has_the_papers_name_and_a_setting():
    for model, _task, _split in paper_results.RESULTS:
        assert NAMES[paper_results.paper_model(model).paper_name] == model.removeprefix("in-context-")
    assert paper_results.setting("in-context-gpt-4") == "in-context"
    assert paper_results.paper_row("tiny-llama", "nlu", "test") == {}
