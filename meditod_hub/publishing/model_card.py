"""Render a model card for a finished training run (`runs.Run`).

A card is built only from metrics (`eval/<split>/results.json`), run metadata (`run_info.json`)
and the recipe: never from dataset rows, dialogue text or predictions, so it can be public
while the data stays gated. The `model-index` lists every metric of the task
(`tasks.Task.metrics`) as a `huggingface_hub.EvalResult` whose `metric_config` is the metric's
key path in results.json (`medical.f1`, `precision_at_k.4`), which makes the card
machine-comparable with the paper's rows in `paper_results` and with other runs. The model's
identity (paper row, licence, citation) comes from its base model's entry in the registry
(`data.base_models`), so a `-full` recipe of BioGPT is still BioGPT.

lm-evaluation-harness results a run keeps (`HARNESS_FOLDER`: lm-eval's `--output_path
<run>/eval/lm-eval`) are shown in their own section, read by the one reader `make results`
uses (`evaluation.harness.read`): lm-eval's version, its task names, the splits and every
metric, never the model path or data files lm-eval records.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from huggingface_hub import EvalResult, ModelCard, ModelCardData, constants

from meditod_hub.data import about, paper_results, proof, provenance
from meditod_hub.data.base_models import BaseModel, carded
from meditod_hub.data.card import card_template
from meditod_hub.data.release import EVAL_SPLITS
from meditod_hub.data.tasks import TASKS, Metric
from meditod_hub.evaluation.harness.read import read_folder
from meditod_hub.models.runs import CARD_KEY, Run, base_label, hub_id, run_tasks

HARNESS_FOLDER = "eval/lm-eval"  # a run's lm-eval --output_path, which its card reads


HYPERPARAMETERS = (
    "learning_rate", "num_train_epochs", "max_steps", "per_device_train_batch_size",
    "gradient_accumulation_steps", "lr_scheduler_type", "warmup_ratio", "optim", "max_length",
    "load_in_4bit", "bnb_4bit_quant_type", "use_peft", "lora_r", "lora_alpha", "lora_dropout",
    "lora_target_modules", "seed",
)


def base_model(run: Run) -> BaseModel | None:
    """The registry's base model this run fine-tunes (None for others, e.g. the tiny models)."""
    return carded(run.info["base_model"])


def paper_row(run: Run, split: str, task: str | None = None) -> dict[str, float]:
    """The paper's row for the run's base on `task` (a multi-task run: each of its tasks)."""
    base = base_model(run)
    if base is None or base.paper_name is None or not proof.of_record(run.info).comparable:
        return {}
    return paper_results.paper_row(base.key, task or run.task, split)


def eval_results(run: Run) -> list[EvalResult]:
    origin = proof.of_record(run.info)
    dataset, name = origin.index_type(hub_id(run.info.get("dataset"))), origin.index_name()
    return [EvalResult(task_type=run.family.pipeline_tag, task_name=f"MediTOD {task.upper()}",
                       dataset_type=dataset, dataset_name=name,
                       dataset_config=task, dataset_split=split,
                       metric_type=metric.type, metric_name=metric.name, metric_config=metric.key,
                       metric_value=round(value, 6))
            for task, by_split in run.task_results.items()
            for split, results in by_split.items()
            for metric in results.scored_task.metrics
            if (value := results.value(metric.key)) is not None]


def _cell(value: float | None, metric: Metric) -> str:
    return "—" if value is None else format(value, metric.fmt)


def _results_rows(run: Run, splits: list[str]) -> list[dict]:
    """Metric rows of every task the run answers (named with the task in a multi-task card)."""
    rows = []
    for task in run.trained_tasks:
        ours_by_split = run.task_results.get(task.name, {})
        for metric in task.metrics:
            cells = []
            for split in splits:
                ours = ours_by_split[split].value(metric.key) if split in ours_by_split else None
                paper = paper_row(run, split, task.name).get(metric.key)
                cells += [_cell(ours, metric), _cell(paper, metric)]
            if any(cell != "—" for cell in cells):
                name = f"{task.name.upper()} {metric.name}" if run.multitask else metric.name
                rows.append({"name": name, "cells": cells})
    return rows


def _scoring_note(results: dict) -> str:
    """How non-medical values were matched, which P@K definition was used and whether decoding
    was constrained: each moves numbers."""
    notes = []
    judge = results.get("judge")
    if isinstance(judge, dict) and "name" in judge:
        described = {
            "exact": "exact string match (the paper used a ChatGPT judge, so non-medical and "
                     "overall figures are not directly comparable with its own)",
            "llm": f"an LLM judge (`{judge.get('model')}`) with the paper's prompt",
            "embedding": f"embedding similarity (`{Path(str(judge.get('model'))).name}`, "
                         f"threshold {judge.get('threshold')})"}
        how = described.get(judge["name"], f"the `{judge['name']}` judge")
        notes.append(f"Non-medical attribute values were matched by {how}; medical ones by exact match.")
    mode = results.get("precision_at_k_mode")
    if mode == "exact":
        notes.append("P@K: the authors' definition (`exact`: set equality with one of the next K "
                     "gold turns).")
    elif mode:
        notes.append(f"P@K: `{mode}` mode, not the authors' definition: not comparable with the "
                     "paper's P@K.")
    if results.get("constrained"):
        notes.append("Predictions were decoded under the CMAS grammar (`--constrained`), not "
                     "freely as in the paper.")
    elif results.get("constrained") is False:
        notes.append("Predictions were decoded freely (greedy, unconstrained), as in the paper.")
    return " ".join(notes)


def harness_section(run: Run, folder: Path | None = None) -> dict | None:
    """The card's lm-eval section: the MediTOD tasks of the run's own tasks in the lm-eval
    results files under `folder` (default the run's `HARNESS_FOLDER`), or None when there are
    none."""
    folder = Path(folder) if folder is not None else run.path / HARNESS_FOLDER
    found = [f for f in read_folder(folder) if f.task in run.tasks] if folder.is_dir() else []
    if not found:
        return None
    rows = []
    for entry in sorted(found, key=lambda f: (f.task, f.split, f.name)):
        for metric in TASKS[entry.task].metrics:
            value = entry.scores
            for part in metric.key.split("."):
                value = value.get(part) if isinstance(value, dict) else None
            if isinstance(value, float):
                rows.append({"name": entry.name, "split": entry.split, "setting": entry.setting,
                             "metric": metric.name, "value": _cell(value, metric)})
        if "parse_failures" in entry.scores:
            rows.append({"name": entry.name, "split": entry.split, "setting": entry.setting,
                         "metric": "parse failures", "value": f"{entry.scores['parse_failures']:g}"})
    limited = sorted({f"`{f.name}` (--limit {f.limit:g})" for f in found if f.limit})
    notes = ("Run on a subset of the split: " + ", ".join(limited) + "." if limited else "")
    return {"versions": ", ".join(sorted({f.lm_eval_version or "unknown" for f in found})),
            "rows": rows, "notes": notes}


def _data_note(origin: provenance.Provenance) -> str:
    """The card's word on the training data's licence, for data that is not MediTOD's."""
    if origin.synthetic:
        return "The training data was invented by the kit: no licensed data went into the weights."
    return ("The training dialogues are their authors' own (not MediTOD's), under the licence "
            "their dataset card states.")


def _wall_clock(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    hours, rest = divmod(round(seconds), 3600)
    return f"{hours} h {rest // 60:02d} min" if hours else f"{seconds / 60:.1f} min"


def _training_data(info: dict) -> str:
    dataset = hub_id(info.get("dataset"))
    where = (f"[{dataset}](https://huggingface.co/datasets/{dataset})" if dataset
             else "a local build")
    where = f"{where}: {proof.of_record(info).describe()}"
    counts = ", ".join(f"{info[key]} {label}" for key, label in (
        ("train_examples", "training examples"), ("truncated_examples", "cut to fit the token "
         "budget"), ("state_cut_examples", "of them losing old state entries"),
        ("skipped_examples", "skipped (over budget)")) if key in info)
    tasks = run_tasks(info)
    configs = (f"`{tasks[0]}` config" if len(tasks) == 1 else
               ", ".join(f"`{t}`" for t in tasks) + " configs (their examples mixed)")
    return f"{where}, {configs}, train split; {counts}; seed {info.get('seed')}."


def _hyperparameters(recipe_text: str) -> list[tuple[str, object]]:
    recipe = yaml.safe_load(recipe_text) or {}
    return [(key, recipe[key]) for key in HYPERPARAMETERS if recipe.get(key) is not None]


def _loading(run: Run, repo_id: str, revision: str | None, merged: bool) -> tuple[str, str]:
    """How to load this repo and run it on dataset rows, through the project's own inference."""
    task = run.tasks[0]
    adapter = run.info["adapter"] and not merged
    auto = ("AutoPeftModelFor" if adapter else "AutoModelFor") + run.family.auto_model_name
    text = (f"A LoRA adapter: `peft.{auto}` loads its base model "
            f"(`{base_label(run.info['base_model'])}`, named in `adapter_config.json`) and applies it."
            if adapter else f"Full weights: `transformers.{auto}` loads them.")
    if merged and run.info.get("quantization"):
        text += (f" The adapter was trained on a {run.info['quantization']} base and merged into the "
                 "bf16 base: outputs are close to, not identical with, the adapter's.")
    text += (" Inputs are built and outputs parsed by the project's family registry "
             f"(`meditod_hub.models.families`) on rows of the `{task}` config of a MediTOD build; "
             "`meditod_hub.models.predictor` does both, with the token budget this repo's "
             "`run_info.json` recorded at training:")
    rev = f', revision="{revision}"' if revision else ""
    code = f"""from meditod_hub.data.dataset import load_split
from meditod_hub.models.predictor import ModelSpec, load_predictor

predictor = load_predictor(ModelSpec("{repo_id}"{rev}), "{task}")
rows = load_split("meditod", "{task}", "test")[:4]  # a build of your data (MediTOD is gated)
for record in predictor.predict(rows):
    print(record.id, record.parse_ok, record.prediction)"""
    return text, code


def _predict_command(repo_id: str, revision: str | None, task: str) -> str:
    rev = f" --revision {revision}" if revision else ""
    return (f"meditod predict --model_path {repo_id}{rev} --task {task} --data meditod "
            "--split test --out predictions.jsonl\n"
            f"meditod evaluate --task {task} --data meditod --split test "
            "--predictions predictions.jsonl --out results.json")


def render_model_card(run: Run, *, run_id: str, repo_id: str, revision: str | None = None,
                      merged: bool = False, cascade: dict | None = None,
                      leaderboard: str | None = None, harness_results: Path | None = None
                      ) -> ModelCard:
    """`cascade`: the cascaded-evaluation table (`eval_cascade.card_section`), or None;
    `leaderboard`: the leaderboard Space's id (ORG/NAME) the card links to, or None;
    `harness_results`: a folder of lm-eval results files (default the run's `HARNESS_FOLDER`)."""
    info, task = run.info, run.task
    base = base_model(run)
    adapter = info["adapter"] and not merged
    splits = [s for s in EVAL_SPLITS if any(s in r for r in run.task_results.values())
              or any(paper_row(run, s, t) for t in run.tasks)]
    evaluated = [(t, split) for t, by_split in run.task_results.items() for split in by_split]
    first_test = next(r["test"] for r in run.task_results.values() if "test" in r)
    # the splits whose decoding was constrained (results' `constrained`): the leaderboard reads it
    constrained = [s for s, results in run.results.items() if results.scores.get("constrained")]
    card_data = ModelCardData(
        model_name=f"meditod-{run.model}-{task}", base_model=hub_id(info["base_model"]),
        library_name="peft" if adapter else "transformers", pipeline_tag=run.family.pipeline_tag,
        license=base.license if base else None, language="en",
        datasets=[d] if (d := hub_id(info.get("dataset"))) else None,
        tags=["meditod", *(f"meditod-{t}" for t in run.tasks), "medical", "dialogue",
              "task-oriented-dialogue", run.family_label] + (["lora"] if info["adapter"] else [])
        + (["multitask"] if run.multitask else []),
        metrics=sorted({m.type for t in run.trained_tasks for m in t.metrics}),
        eval_results=eval_results(run),
        **{CARD_KEY: {"model": run.model, "task": task, "run_id": run_id, "merged": merged,
                      **({"constrained": constrained} if constrained else {})}})
    load_text, load_code = _loading(run, repo_id, revision, merged)
    origin = proof.of_record(info)
    title = (f"MediTOD {task.upper()}: {run.model}" if origin.comparable
             else f"{task.upper()} on {origin.short()}: {run.model}")
    base_name = f"[{base.name}]({base.link})" if base else f"`{base_label(info['base_model'])}`"
    weights = ("A LoRA adapter on " if adapter else
               "Full weights (LoRA merged in 16 bits) of " if merged else "Full weights of ")
    return ModelCard.from_template(
        card_data, template_path=str(card_template("model_card.md")),
        title=title, trained_on=origin.describe(), comparable=origin.comparable,
        weights_summary=weights + base_name,
        task_upper=" / ".join(t.upper() for t in run.tasks),
        task_description=("one model for all three, which its system message tells apart: "
                          if run.multitask else "") + "; ".join(t.description
                                                                for t in run.trained_tasks),
        paper=about.PAPER,
        run_id=run_id, revision=revision, family=run.family_label,
        licence_note=about.LICENCE_NOTE if origin.comparable else _data_note(origin),
        load_text=load_text, load_code=load_code,
        predict_command="\n".join(_predict_command(repo_id, revision, t) for t in run.tasks),
        splits=splits, results_rows=_results_rows(run, splits),
        paper_source=paper_results.SOURCE,
        has_paper_row=any(paper_row(run, "test", t) for t in run.tasks),
        scoring_note=_scoring_note(first_test.scores),
        charts=[{"path": f"{run.eval_folder(s, t)}/results.png",
                 "alt": (f"{t.upper()} " if run.multitask else "") + f"F1 per slot type, {s}"}
                for t, s in evaluated if run.chart(s, t)],
        results_files=[f"{run.eval_folder(s, t)}/results.json" for t, s in evaluated],
        training_data=_training_data(info), hardware=info.get("hardware", "unknown"),
        wall_clock=_wall_clock(info.get("train_runtime_s")), global_step=info.get("global_step"),
        quantization=info.get("quantization") or "none",
        framework_versions=", ".join(f"{k} {v}" for k, v in info.get("framework_versions", {}).items()),
        hyperparameters=_hyperparameters(run.recipe_text), recipe=run.recipe_text.strip(),
        citation=about.CITATION, base_citations=[base.citation] if base else [], cascade=cascade,
        harness=harness_section(run, harness_results),
        leaderboard=f"{constants.ENDPOINT}/spaces/{leaderboard}" if leaderboard else None)

