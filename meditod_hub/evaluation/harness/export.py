"""Write the harness task folder for a built dataset (`meditod harness`).

    OUT/harness.json                 what the folder was written from: dataset, fingerprint,
                                     provenance, splits, shots, retriever, budgets
    OUT/data/<task>-<split>.jsonl    the rows the harnesses read (`rows`)
    OUT/lm_eval/*.yaml, utils.py     lm-evaluation-harness tasks (`lm_eval --include_path`)
    OUT/data/README.md               the rows as a dataset with one config per task and split
    OUT/lighteval_tasks.py           lighteval custom tasks, fine-tuned (`--custom-tasks`)
    OUT/lighteval/<task>_ft.system.txt  the system message lighteval must be given (its
                                     model's `system_prompt`); with a model, <task>_ft.model.yaml,
                                     its endpoint model config (`lighteval endpoint litellm`)

lm-eval task names: `meditod_<task>[_ood]_<setting>`, `<setting>` `icl` (the paper's in-context
setting: the authors' system prompt, the row's retrieved exemplars as chat turns, greedy, 200 new
tokens) or `ft` (a checkpoint fine-tuned with the recipes, in its family's own prompt, greedy, the
run's answer budget: a chat model gets the chat family's system and user message; a span-format
model (Flan-T5, BioGPT, PPTOD: `ft_family`, from the `--model` run) gets its family's source text,
fitted to the run's budget by its tokenizer exactly as `meditod predict` fits it, with no system
message and no chat template, and its answers go to that family's parser); `_ood` for the test_ood
split. Groups `meditod_icl`
and `meditod_ft` hold every task of their setting. Paths inside the YAMLs are absolute: the
folder is written for this machine. The lighteval module holds the fine-tuned tasks only (its
few-shot examples come from a split, not per row), for lighteval's own venv (`make harness-env`:
0.13 does not run beside the kit's locked packages; docs/harness.md).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from meditod_hub.data import proof
from meditod_hub.data.dataset import fingerprint, load_split
from meditod_hub.data.release import OOD_SPLIT
from meditod_hub.data.tasks import TASK_NAMES, TASKS, get_task
from meditod_hub.errors import UsageError
from meditod_hub.evaluation.fewshot import prompts
from meditod_hub.evaluation.fewshot.retrieval import ExemplarPool
from meditod_hub.evaluation.harness import scoring
from meditod_hub.evaluation.harness.rows import harness_rows, span_sources
from meditod_hub.files import atomic_write
from meditod_hub.models.families import Budget, Family, SpanFamily, get_family
from meditod_hub.models.runs import run_budget, run_settings

PURPOSE = "harness"
INFO = "harness.json"
PAPER_MAX_TOKENS = 200  # the paper's in-context answers (`fewshot.run.PAPER_MAX_TOKENS`)
SUITE = "meditod"


def task_name(task: str, split: str, setting: str) -> str:
    """`meditod_nlu_icl` (test), `meditod_nlu_ood_icl` (test_ood), `meditod_nlu_train_icl`."""
    part = {"test": "", OOD_SPLIT: "_ood"}.get(split, f"_{split}")
    return f"{SUITE}_{task}{part}_{setting}"


@dataclass
class Written:
    out: Path
    tasks: dict[str, list[str]] = field(default_factory=dict)  # setting -> lm-eval task names
    rows: dict[str, int] = field(default_factory=dict)         # data file -> rows
    family: str = scoring.CHAT_FAMILY                           # the fine-tuned tasks' family
    lighteval: dict[str, str] = field(default_factory=dict)     # task -> its model config file


@dataclass(frozen=True)
class FineTuned:
    """What the fine-tuned tasks are written for: the family, and for a span family the
    tokenizer and budget its inputs are fitted with (None for the chat family)."""

    family: Family
    tokenizer: object = None
    budget: Budget | None = None

    @property
    def span(self) -> bool:
        return isinstance(self.family, SpanFamily)


def ft_family(model: str | None, family: str | None = None, max_new_tokens: int | None = None
              ) -> FineTuned:
    """The family of the fine-tuned tasks: `family` if given, else `model`'s run's (its
    run_info.json), else the chat family; their budget, `model`'s run's (`runs.run_budget`, as
    `meditod predict` reads it; `max_new_tokens` replaces its answer budget). A span family
    needs `model`: its tokenizer fits the inputs to that budget."""
    local = bool(model) and Path(model).is_dir()
    info, recipe = run_settings(model) if local else ({}, {})
    chosen = get_family(family or info.get("family") or scoring.CHAT_FAMILY)
    span = isinstance(chosen, SpanFamily)
    budget = run_budget(info, recipe, chosen) if local or span else None
    if budget and max_new_tokens:
        budget = Budget(budget.max_length, max_new_tokens)
    if not span:
        return FineTuned(chosen, budget=budget)
    if not model:
        raise UsageError(f"a {chosen.name} model's inputs are fitted to its budget by its own "
                         "tokenizer: give --model (its run folder)")
    # deferred: transformers is slow to import
    from transformers import AutoTokenizer

    return FineTuned(chosen, AutoTokenizer.from_pretrained(model), budget)


def _raw(text: str) -> str:
    """A literal for lm-eval's description field, which it renders as a Jinja template."""
    return "{% raw %}" + text + "{% endraw %}"


def _scalar(value) -> str:
    return json.dumps(value, ensure_ascii=False)  # JSON strings are YAML strings


def task_yaml(task: str, split: str, setting: str, data_file: Path, shots: int,
              max_gen_toks: int, meta: dict, family: Family | None = None) -> str:
    """One task's YAML; `family`: the fine-tuned model's (default the chat family)."""
    span = setting == "ft" and isinstance(family, SpanFamily)
    system = prompts.system_prompt(task) if setting == "icl" else get_task(task).system_message
    question = {"icl": "icl_question", "ft": "ft_source" if span else "ft_user"}[setting]
    lines = [f"task: {task_name(task, split, setting)}",
             "dataset_path: json",
             "dataset_kwargs:",
             "  data_files:",
             f"    test: {_scalar(str(data_file))}",
             "test_split: test",
             "output_type: generate_until"]
    if not span:  # a span family's input is the whole prompt: no system message
        lines.append(f"description: {_scalar(_raw(system))}")
    lines += [f"doc_to_text: {question}",
             "doc_to_target: icl_answer",
             f"num_fewshot: {shots if setting == 'icl' else 0}"]
    if setting == "icl":
        lines += ["fewshot_config:",
                  "  sampler: !function utils.RetrievedExemplars",
                  "  split: test",
                  "  doc_to_text: icl_question",
                  "  doc_to_target: icl_answer"]
    lines += ["generation_kwargs:",
              "  until: []",
              "  do_sample: false",
              f"  max_gen_toks: {max_gen_toks}"]
    if span and family.encoder_decoder:
        # lm-eval bounds an encoder-decoder's output at input length + max_gen_toks; predict at
        # max_new_tokens after the decoder's start token (lm-eval passes max_length through)
        lines.append(f"  max_length: {max_gen_toks + 1}")
    lines += [f"process_results: !function utils."
              f"{scoring.process_name(setting, task, family.name if span else None)}",
              "metric_list:"]
    for name, key in scoring.metric_keys(task).items():
        lines += [f"  - metric: {name}",
                  f"    aggregation: !function utils.{name}",
                  f"    higher_is_better: {'false' if key == scoring.PARSE_FAILURES else 'true'}"]
    lines += ["metadata:",
              "  version: 1.0",
              f"  meditod: {_scalar({'task': task, 'split': split, 'setting': setting, **meta})}"]
    return "\n".join(lines) + "\n"


def data_config(task: str, split: str) -> str:
    """The config of OUT/data (its README) holding one task's split."""
    return f"{task}-{split}"


def data_card(configs: list[str]) -> str:
    """OUT/data/README.md: `load_dataset(OUT/data, "nlu-test")` (lighteval reads it so)."""
    lines = ["---", "configs:"]
    for name in configs:
        lines += [f"- config_name: {name}", "  data_files:", "  - split: test",
                  f"    path: {name}.jsonl"]
    return "\n".join(lines + ["---", "", "Rows written by `meditod harness` (not for sharing: "
                              "they hold the dataset's text).", ""])


LIGHTEVAL_MODULE = '''"""Written by `meditod harness`: this folder's fine-tuned MediTOD tasks for lighteval
(`lighteval accelerate <model config> "meditod_nlu_ft|0" --custom-tasks lighteval_tasks.py`)."""
from pathlib import Path

from meditod_hub.evaluation.harness.lighteval_tasks import tasks_table

TASKS_TABLE = tasks_table(Path(__file__).resolve().parent)
'''


def lighteval_model(model: str, system: str, endpoint: str, eos: str | None) -> str:
    """A lighteval model config for its endpoint backend (`lighteval endpoint litellm`): the
    model behind an OpenAI-compatible server, greedy, the task's system message (lighteval takes
    it from the model, not the task) and the model's EOS token as the stop string (lighteval
    sends its task's empty stop list otherwise, which `transformers serve` answers with a 500).
    The endpoint, not lighteval's own transformers backend: lighteval 0.13 needs transformers 4,
    which cannot read a tokenizer transformers 5 saved (a run of the kit's)."""
    generation = {"temperature": 0.0, **({"stop_tokens": [eos]} if eos else {})}
    config = {"model_name": f"openai/{model}", "base_url": endpoint, "system_prompt": system,
              "concurrent_requests": 1, "generation_parameters": generation}
    return "model_parameters:\n" + "".join(f"  {k}: {_scalar(v)}\n" for k, v in config.items())


UTILS = '''"""Written by `meditod harness`: the kit's functions these task YAMLs call."""
from meditod_hub.evaluation.harness.lm_eval_tasks import *  # noqa: F401,F403
from meditod_hub.evaluation.harness.lm_eval_tasks import RetrievedExemplars  # noqa: F401
'''


def write(out: Path, data: str, splits: list[str], *, settings=("icl", "ft"), shots: int = 5,
          retriever=None, retrieval_cache=None, ft_max_new_tokens: int | None = None,
          limit: int | None = None, model: str | None = None, family: str | None = None,
          endpoint: str | None = None, eos: str | None = None) -> Written:
    """The task folder for `data`'s `splits` (`retriever`: a `retrieval.Retriever`, needed for
    the in-context setting; `family`: the fine-tuned tasks' family, default `model`'s run's,
    `ft_family`; `ft_max_new_tokens`: their answer budget, default the run's, else the family's;
    `endpoint`, `eos`: where lighteval's model config finds `model` served, and its EOS token)."""
    tuned = ft_family(model, family, ft_max_new_tokens) if "ft" in settings \
        else FineTuned(get_family(scoring.CHAT_FAMILY))
    ft_max_new_tokens = tuned.budget.max_new_tokens if tuned.budget else \
        ft_max_new_tokens or tuned.family.default_budget.max_new_tokens
    written = Written(out, family=tuned.family.name)
    meta = {**proof.record(data), "shots": shots}
    files: dict[str, str] = {}
    for task in TASK_NAMES:
        pool = None
        if "icl" in settings:
            pool = ExemplarPool(retriever, task, load_split(data, task, "train"), fingerprint(data),
                                retrieval_cache)
            if shots > len(pool.rows):
                raise UsageError(f"--shots {shots}: the train split of {data} has "
                                 f"{len(pool.rows)} {task} rows: give at most --shots {len(pool.rows)}")
        for split in splits:
            rows = load_split(data, task, split)[:limit]
            exemplars = ([[pool.rows[i] for i in found_ids] for found_ids in pool.search(rows, shots)]
                         if pool is not None else None)
            sources = (span_sources(tuned.family, TASKS[task], rows, tuned.tokenizer, tuned.budget)
                       if tuned.span else None)
            data_file = (out / "data" / f"{data_config(task, split)}.jsonl").resolve()
            files[f"data/{data_file.name}"] = "".join(
                json.dumps(doc, ensure_ascii=False) + "\n"
                for doc in harness_rows(task, rows, exemplars, sources))
            written.rows[f"data/{data_file.name}"] = len(rows)
            for setting in settings:
                name = task_name(task, split, setting)
                gen = PAPER_MAX_TOKENS if setting == "icl" else ft_max_new_tokens
                extra = {"family": tuned.family.name} if setting == "ft" else {}
                files[f"lm_eval/{name}.yaml"] = task_yaml(task, split, setting, data_file, shots,
                                                          gen, {**meta, "max_gen_toks": gen, **extra},
                                                          tuned.family)
                written.tasks.setdefault(setting, []).append(name)
    for setting, names in written.tasks.items():
        files[f"lm_eval/{SUITE}_{setting}.yaml"] = (
            f"group: {SUITE}_{setting}\ntask:\n" + "".join(f"  - {n}\n" for n in names)
            + "metadata:\n  version: 1.0\n")
    files["lm_eval/utils.py"] = UTILS
    files["data/README.md"] = data_card([data_config(t, s) for t in TASK_NAMES for s in splits])
    if "ft" in settings and not tuned.span:  # lighteval: the chat family's prompt only
        files["lighteval_tasks.py"] = LIGHTEVAL_MODULE
        for task in TASK_NAMES:
            files[f"lighteval/{task}_ft.system.txt"] = get_task(task).system_message
            if model and endpoint:
                written.lighteval[task] = f"lighteval/{task}_ft.model.yaml"
                files[written.lighteval[task]] = lighteval_model(
                    model, get_task(task).system_message, endpoint, eos)
    info = {**meta, "splits": splits, "settings": list(settings),
            "retriever": pool.describe() if "icl" in settings else None,
            "max_gen_toks": {"icl": PAPER_MAX_TOKENS, "ft": ft_max_new_tokens},
            "ft_family": tuned.family.name if "ft" in settings else None,
            "ft_budget": tuned.budget and {"max_length": tuned.budget.max_length,
                                           "max_new_tokens": tuned.budget.max_new_tokens},
            "tasks": written.tasks, "tasks_of": list(TASK_NAMES), "rows": written.rows}
    files[INFO] = json.dumps(info, indent=2, ensure_ascii=False) + "\n"
    for name, text in files.items():
        atomic_write(out / name, text, purpose=PURPOSE)
    return written
