"""Model cards and the paper's numbers. Offline, CPU, no model weights needed.

Runs here are written by `write_run` with invented metric values; the leak test scores real
gold labels with the evaluation command and scans the card for every text and label of the data.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from helpers import NLU_RESULTS, POL_RESULTS, RESULTS, write_release, write_run
from huggingface_hub import ModelCard

from meditod_hub.data import paper_results, proof
from meditod_hub.data.tasks import TASKS
from meditod_hub.models.records import Results
from meditod_hub.models.runs import RunError, card_identity, read_run
from meditod_hub.publishing.model_card import render_model_card

PROJECT_ROOT = Path(__file__).resolve().parent.parent

def _render(run_dir: Path, **kwargs) -> ModelCard:
    return render_model_card(read_run(run_dir), run_id="0123456789ab", repo_id="org/model",
                             revision="run-0123456789ab", **kwargs)


# --- the paper's numbers ------------------------------------------------------------------------

def test_paper_keys_are_card_metrics():
    """Every paper number has a row in the card's table (same key as results.json)."""
    for (model, task, split), row in paper_results.RESULTS.items():
        assert set(row) <= {m.key for m in TASKS[task].metrics}, (model, task, split)
    assert paper_results.paper_row("llama3-8b", "nlu", "test")["f1"] == 0.7139
    assert paper_results.paper_row("tiny-llama", "nlu", "test") == {}


# --- rendering ----------------------------------------------------------------------------------

@pytest.mark.parametrize("task", ["nlu", "pol", "nlg"])
def test_model_index_parses_back_with_every_metric(tmp_path, task):
    ood = json.loads(json.dumps(RESULTS[task]).replace("0.", "0.0"))  # different OOD values
    run_dir = write_run(tmp_path, task=task, splits={"test": RESULTS[task], "test_ood": ood})
    card = ModelCard(str(_render(run_dir)))  # parse the rendered text back
    got = {(r.dataset_split, r.metric_config): r.metric_value for r in card.data.eval_results}
    expected = {(split, metric.key): Results(task, split, results).value(metric.key)
                for split, results in (("test", RESULTS[task]), ("test_ood", ood))
                for metric in TASKS[task].metrics
                if Results(task, split, results).value(metric.key) is not None}
    assert got == pytest.approx(expected)
    assert {r.dataset_type for r in card.data.eval_results} == {"meditod"}
    assert {r.dataset_config for r in card.data.eval_results} == {task}
    assert card_identity(card) == {"model": "llama3-8b", "task": task, "run_id": "0123456789ab",
                                   "merged": False}
    if task == "nlg":  # a null BERTScore is left out, not reported as 0
        assert ("test", "bertscore.f1") not in got


def test_card_sets_results_beside_the_paper_row(tmp_path):
    text = str(_render(write_run(tmp_path, task="pol")))
    row = next(line for line in text.splitlines() if line.startswith("| Overall F1 |"))
    assert row.split("|")[2:4] == [" 0.5614 ", " 0.2389 "]  # ours, then the paper's Llama3 8B
    assert "| P@inf | 0.5000 | 0.4162 |" in text
    assert "exact string match" in text  # the judge used for non-medical values is stated
    assert "P@K: the authors' definition" in text


def test_a_multitask_card_reports_each_task_beside_the_papers_rows(tmp_path):
    run_dir = write_run(tmp_path, task="multitask", model="llama3-8b-multitask", splits={})
    for task in TASKS:  # evaluated per task: eval/<split>/<task>/
        (run_dir / "eval" / "test" / task).mkdir(parents=True)
        (run_dir / "eval" / "test" / task / "results.json").write_text(
            json.dumps({"task": task, "split": "test", **RESULTS[task]}))
    run = read_run(run_dir)
    assert run.tasks == tuple(TASKS) and set(run.task_results) == set(TASKS)
    text = str(_render(run_dir))
    assert "| NLU Overall F1 | 0.5614 | 0.7139 |" in text   # ours, then the paper's Llama3 8B
    assert "| POL Overall F1 | 0.5614 | 0.2389 |" in text
    assert "| NLG BLEU-4 (NLTK, x100) | 9.25 | 17.50 |" in text
    assert "`eval/test/pol/results.json`" in text and "NLU / POL / NLG" in text
    card = ModelCard(text)
    assert {r.dataset_config for r in card.data.eval_results} == set(TASKS)
    assert card_identity(card)["task"] == "multitask"


def test_card_flags_scoring_that_differs_from_the_paper(tmp_path):
    results = {**POL_RESULTS, "precision_at_k_mode": "medical_present",
               "judge": {"name": "llm", "model": "judge-model-x", "endpoint": "http://127.0.0.1:1/v1"}}
    text = str(_render(write_run(tmp_path, task="pol", splits={"test": results})))
    assert "not comparable with the paper's P@K" in text
    assert "an LLM judge (`judge-model-x`)" in text and "127.0.0.1" not in text


def test_card_body_sections_and_metadata(tmp_path):
    run_dir = write_run(tmp_path)
    (run_dir / "eval" / "test" / "results.png").write_bytes(b"\x89PNG fake")
    card = _render(run_dir)
    text = str(card)
    for needed in ("## Intended use", "Out of scope", "## Limitations",
                   "## How to use", "peft.AutoPeftModelForCausalLM",
                   'load_predictor(ModelSpec("org/model", revision="run-0123456789ab"), "nlu")',
                   "predictor.predict(rows)",
                   "meditod predict --model_path org/model --revision run-0123456789ab",
                   "![F1 per slot type, test](eval/test/results.png)",
                   "learning_rate", "1 h 30 min", "torch 2.13.0", "saley2024meditod",
                   "dubey2024llama3", "respiratory"):
        assert needed in text, needed
    assert card.data.base_model == "meta-llama/Meta-Llama-3-8B-Instruct"
    assert card.data.library_name == "peft" and card.data.license == "llama3"
    assert "meditod" in card.data.tags
    assert str(tmp_path) not in text  # local paths (the dataset build here) stay out of cards


def test_tiny_local_base_has_no_paper_row_and_no_local_path(tmp_path):
    run_dir = write_run(tmp_path, model="tiny-t5", family="flan-t5", adapter=False,
                        base_model=str(tmp_path / "models" / "tiny-t5"))
    card = _render(run_dir)
    text = str(card)
    assert card.data.base_model is None and str(tmp_path) not in text
    assert "the paper has no row for this model" in text
    assert "transformers.AutoModelForSeq2SeqLM" in text
    assert 'load_predictor(ModelSpec("org/model", revision="run-0123456789ab"), "nlu")' in text
    assert card.data.pipeline_tag == "text-generation"  # the Hub has no text2text-generation tag


def test_full_recipes_keep_the_paper_row_licence_and_citation_of_their_base(tmp_path):
    run_dir = write_run(tmp_path, model="biogpt-full", family="biogpt", adapter=False,
                        base_model="microsoft/biogpt")
    card = _render(run_dir)
    text = str(card)
    assert "the paper has no row" not in text
    assert "| Overall F1 | 0.5614 | 0.6090 |" in text  # ours, then the paper's BioGPT
    assert card.data.license == "mit" and "luo2022biogpt" in text


def test_model_index_names_the_hub_dataset_it_was_trained_on(tmp_path):
    card = _render(write_run(tmp_path, dataset="org/meditod"))
    assert card.data.datasets == ["org/meditod"]
    assert {r.dataset_type for r in card.data.eval_results} == {"org/meditod"}


def test_merged_card_says_full_weights(tmp_path):
    card = _render(write_run(tmp_path), merged=True)
    assert card.data.library_name == "transformers"
    assert "Full weights: `transformers.AutoModelForCausalLM`" in str(card)
    assert "trained on a nf4 base and merged into the bf16 base" in str(card)
    assert card_identity(card)["merged"] is True


def test_run_without_results_is_refused(tmp_path):
    run_dir = write_run(tmp_path, splits={})
    with pytest.raises(RunError, match=r"no evaluation results \(eval/test/results.json\)"):
        read_run(run_dir)


def test_results_of_another_task_are_refused(tmp_path):
    run_dir = write_run(tmp_path, task="nlg", splits={"test": NLU_RESULTS})
    with pytest.raises(RunError, match="results.json: no 'bleu4'"):
        read_run(run_dir)


def test_run_info_without_required_keys_is_refused(tmp_path):
    run_dir = write_run(tmp_path)
    info = json.loads((run_dir / "run_info.json").read_text())
    del info["family"]
    (run_dir / "run_info.json").write_text(json.dumps(info))
    with pytest.raises(RunError, match="run_info.json: missing keys family"):
        read_run(run_dir)


# --- lm-evaluation-harness results --------------------------------------------------------------

def lm_eval_results(task: str, scores: dict, split: str = "test", limit=None,
                    version: str = "0.4.13") -> dict:
    """An lm-eval results file (`results_<date>.json`) for one task written by `meditod harness`,
    with the fields lm-eval 0.4.13 writes that the reader reads (trimmed from a real one: the
    tiny-t5 NLU run's), local paths included as lm-eval records them."""
    from meditod_hub.evaluation.harness.export import task_name
    from meditod_hub.evaluation.harness.scoring import metric_keys
    from meditod_hub.models.records import value_at

    name = task_name(task, split, "ft")
    results = {"name": name, "alias": name, "sample_len": 10}
    for metric, key in metric_keys(task).items():
        if value_at(scores, key) is not None:
            results[f"{metric},none"] = value_at(scores, key)
            results[f"{metric}_stderr,none"] = "N/A"
    meta = {"task": task, "split": split, "setting": "ft", "data": "/home/me/meditod",
            "shots": 5, "provenance": {"kind": "embedded-sample",
                                       "name": "MediTOD-shaped synthetic sample"},
            "max_gen_toks": 256, "family": "flan-t5"}
    return {"results": {name: results}, "group_subtasks": {name: []},
            "configs": {name: {"task": name, "dataset_path": "json", "output_type": "generate_until",
                               "metadata": {"version": 1.0, "meditod": meta,
                                            "pretrained": "/home/me/runs/tiny-t5/nlu"}}},
            "versions": {name: 1.0}, "n-shot": {name: 0},
            "config": {"model": "hf", "model_args": {"pretrained": "/home/me/runs/tiny-t5/nlu",
                                                     "backend": "seq2seq"}, "limit": limit},
            "lm_eval_version": version, "model_name": "/home/me/runs/tiny-t5/nlu"}


def _write_lm_eval(folder: Path, stamp: str, *entries: dict) -> None:
    merged: dict = {}
    for entry in entries:
        for key, value in entry.items():
            merged[key] = {**merged.get(key, {}), **value} if isinstance(value, dict) else value
    (folder / "__home__me__runs__tiny-t5__nlu").mkdir(parents=True, exist_ok=True)
    (folder / "__home__me__runs__tiny-t5__nlu" / f"results_{stamp}.json").write_text(
        json.dumps(merged))


def test_card_shows_the_runs_lm_eval_results_with_the_same_figures(tmp_path):
    """lm-eval results kept in the run's eval/lm-eval: a card section naming lm-eval's version,
    the task names and splits, every metric formatted as the card's own table formats it; other
    tasks' entries and lm-eval's local paths left out; the newest file of a task wins."""
    from meditod_hub.publishing.model_card import HARNESS_FOLDER

    run_dir = write_run(tmp_path / "run", model="tiny-t5", family="flan-t5", adapter=False,
                        base_model="build/tiny-models/tiny-t5")
    assert "lm-evaluation-harness" not in str(_render(run_dir))  # none kept: no section
    folder = run_dir / HARNESS_FOLDER
    old = {**NLU_RESULTS, "f1": 0.1}
    _write_lm_eval(folder, "2026-01-01T00-00-00", lm_eval_results("nlu", old))
    _write_lm_eval(folder, "2026-02-01T00-00-00", lm_eval_results("nlu", NLU_RESULTS),
                   lm_eval_results("pol", POL_RESULTS))
    _write_lm_eval(folder, "2026-02-02T00-00-00",  # --limit is a run's, so a file's
                   lm_eval_results("nlu", NLU_RESULTS, split="test_ood", limit=4))
    text = str(_render(run_dir))
    table, section = text.split("### Through lm-evaluation-harness")
    assert "lm-eval 0.4.13" in section and "`meditod_nlu_ood_ft` (--limit 4)" in section
    for metric in TASKS["nlu"].metrics:
        value = Results("nlu", "test", NLU_RESULTS).value(metric.key)
        if value is None:
            continue
        shown = format(value, metric.fmt)
        assert f"| {metric.name} | {shown} |" in table  # the card's own row, same figure
        for name, split in (("meditod_nlu_ft", "test"), ("meditod_nlu_ood_ft", "test_ood")):
            assert f"| `{name}` | {split} | supervised | {metric.name} | {shown} |" in section
    assert "| `meditod_nlu_ft` | test | supervised | parse failures | 1 |" in section
    assert "0.1000" not in section and "meditod_pol" not in section and "/home/me" not in text

    # elsewhere: given as harness_results (`meditod publish --harness_results`)
    elsewhere = tmp_path / "harness-results"
    _write_lm_eval(elsewhere, "2026-03-01T00-00-00", lm_eval_results("nlu", old, version="0.4.9"))
    assert "lm-eval 0.4.9" in str(_render(run_dir, harness_results=elsewhere))


# --- no MediTOD data in cards -------------------------------------------------------------------

def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _data_strings(release: Path) -> set[str]:
    """Every utterance text and label value (not schema keys) of a release, of >= 12 chars."""
    dialogues = json.loads((release / "dialogs.json").read_text(encoding="utf-8"))
    found = set()
    for dialogue in dialogues.values():
        for utterance in dialogue["utterances"]:
            found.add(utterance["text"])
            for key in ("nlu", "actions", "dialog_state"):
                found.update(_strings(utterance.get(key)))
    return {s.strip() for s in found if len(s.strip()) >= 12}


@pytest.mark.parametrize("source", ["sample", "embedded"])
def test_cards_and_published_results_carry_no_dataset_text_or_labels(request, tmp_path, source):
    from meditod_hub.commands.evaluate import main as evaluate
    from meditod_hub.data.dataset import load_split
    from meditod_hub.errors import run_main

    build = request.getfixturevalue(f"{source}_build")
    release = request.getfixturevalue(f"{source}_release")
    needles = _data_strings(release)
    assert needles, "the scan must have something to look for"
    for task, column in (("nlu", "nlu"), ("pol", "actions"), ("nlg", "response")):
        run_dir = write_run(tmp_path / task, task=task, splits={}, dataset=str(build))
        eval_dir = run_dir / "eval" / "test"
        eval_dir.mkdir(parents=True)
        rows = load_split(build, task, "test")
        with (eval_dir / "predictions.jsonl").open("w") as out:
            for row in rows:  # gold as predictions: real labels flow through the evaluation
                out.write(json.dumps({"id": row["id"], "prediction": row[column]}) + "\n")
        assert run_main(evaluate, ["--task", task, "--data", str(build), "--split", "test",
                                   "--predictions", str(eval_dir / "predictions.jsonl"),
                                   "--out", str(eval_dir / "results.json")]) == 0
        card = str(_render(run_dir))
        assert yaml.safe_load(card.split("---")[1])["meditod"]["task"] == task
        published = {"card": card, **{p.name: p.read_text() for p in eval_dir.glob("results.*")
                                      if p.suffix in (".json", ".md")}}  # uploaded beside it
        assert len(published) == 3
        for name, text in published.items():
            leaked = sorted(s for s in needles if s in text)
            assert not leaked, f"{len(leaked)} dataset strings in the {task} {name}"


# --- what the model was trained on --------------------------------------------------------------

def test_a_card_says_a_synthetic_run_is_not_meditod_and_sets_no_paper_column(tmp_path,
                                                                            embedded_build):
    """Before: "Data: a local MediTOD build", 0 lines with "synthetic", the paper's numbers beside."""
    text = str(_render(write_run(tmp_path, task="pol", **proof.record(embedded_build))))
    assert text.lower().count("synthetic") >= 3
    assert "a local MediTOD build" not in text and "MediTOD build (gated" not in text
    assert "# POL on synthetic sample (embedded), 10 dialogues: llama3-8b" in text
    assert "**Trained and evaluated on the kit's embedded synthetic sample (10 dialogues, 136 " \
        "utterances, invented; not MediTOD).**" in text
    assert "not MediTOD results" in text and "staged (simulated)" not in text
    row = next(line for line in text.splitlines() if line.startswith("| Overall F1 |"))
    assert row.split("|")[2:4] == [" 0.5614 ", " — "]  # no paper figure beside synthetic scores
    card = ModelCard(text)
    assert {r.dataset_name for r in card.data.eval_results} == {
        "synthetic sample (embedded), 10 dialogues"}


def test_a_meditod_run_keeps_the_papers_column_and_names_its_build(tmp_path):
    """A build of dialogues no licence makes anyone's is MediTOD's (here 2 hand-written ones);
    its record alone, the folder gone, says so and loses the paper's column."""
    from meditod_hub.data.build import BuildArguments, build

    data = tmp_path / "meditod"
    build(BuildArguments(source=write_release(tmp_path / "release"), out=data))
    run = write_run(tmp_path / "run", task="pol", **proof.record(data))
    text = str(_render(run))
    assert "# MediTOD POL: llama3-8b" in text
    assert "(licence-restricted MediTOD data, 3 dialogues, " in text
    assert "| Overall F1 | 0.5614 | 0.2389 |" in text
    shutil.rmtree(data)
    text = str(_render(run))
    assert "its dataset folder is not at hand to prove it" in text
    assert "| Overall F1 | 0.5614 | 0.2389 |" not in text
