"""`meditod harness`: MediTOD as tasks of the evaluation harnesses researchers already run.

    meditod harness --data meditod --out out/harness            # then run the printed commands
    meditod harness --data org/meditod --model runs/llama3-8b/nlu --retriever <folder>

Writes OUT (`export`: the rows of every task and evaluation split with the authors' in-context
questions and their retrieved exemplars, lm-eval task YAMLs, a lighteval task module) and prints
the `lm_eval` and `lighteval` command lines that run them. The harnesses' answers are scored by
the kit's own parsers and `Task.score` (`scoring`): the numbers `meditod fewshot` and `meditod
predict` + `evaluate` give for the same model on the same rows. `make results` reads the
harness's results JSON beside the runs.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from meditod_hub.data.dataset import (
    DatasetError,
    available_splits,
    check_built_folder,
    load_split,
)
from meditod_hub.data.release import EVAL_SPLITS, OOD_SPLIT
from meditod_hub.data.tasks import TASK_NAMES
from meditod_hub.evaluation.fewshot.retrieval import DEFAULT_CACHE_DIR, DEFAULT_RETRIEVER
from meditod_hub.evaluation.harness import export
from meditod_hub.models.adapters import adapter_base
from meditod_hub.models.families import SpanFamily, get_family

DEFAULT_ENDPOINT = "http://127.0.0.1:8000/v1"


@dataclass
class HarnessArguments:
    data: str = field(default="meditod", metadata={"help": "built dataset folder or Hub id"})
    out: str = field(default="out/harness", metadata={"help": "the task folder to write"})
    splits: str | None = field(default=None, metadata={
        "help": "comma-separated splits (default: test, and test_ood when the dataset has it)"})
    settings: str = field(default="icl,ft", metadata={
        "help": "icl (the paper's in-context setting: needs the retriever) and/or ft (a "
                "checkpoint fine-tuned with the recipes, in its family's own prompt)"})
    shots: int = field(default=5, metadata={"min": 1, "help": "retrieved exemplars per row (paper: 5)"})
    retriever: str = field(default=DEFAULT_RETRIEVER,
                           metadata={"help": "sentence-transformers model id or folder"})
    retrieval_cache: str = field(default=DEFAULT_CACHE_DIR,
                                 metadata={"help": "folder of cached pool embeddings"})
    model: str | None = field(default=None, metadata={
        "help": "the model the printed commands evaluate (a run folder, a Hugging Face folder or "
                "id); a run folder also sets the fine-tuned answer budget"})
    family: str | None = field(default=None, metadata={
        "help": "the fine-tuned model's family (chat, flan-t5, biogpt, pptod; default: "
                "--model's run's, else chat); a span family's inputs are fitted by --model's "
                "tokenizer"})
    max_new_tokens: int | None = field(default=None, metadata={
        "min": 1, "help": "fine-tuned answer budget (default: --model's run budget, else its family's)"})
    endpoint: str = field(default=DEFAULT_ENDPOINT, metadata={
        "help": "the OpenAI-compatible base URL the printed local-chat-completions command uses"})
    limit: int | None = field(default=None, metadata={
        "min": 1, "help": "only the first N rows of each split"})


def splits_of(data: str) -> list[str]:
    """test, and test_ood when the dataset has it; a folder with neither is refused (the harness
    would have no task to write)."""
    path = Path(data)
    if path.is_dir():
        check_built_folder(path, TASK_NAMES[0])
        have = set(available_splits(path, TASK_NAMES[0]))
        splits = [s for s in EVAL_SPLITS if s in have]
        if not splits:
            raise DatasetError(f"{path} has no {' or '.join(EVAL_SPLITS)} split in "
                               f"{TASK_NAMES[0]}/: the harness expects a dataset built by "
                               "`meditod build` (or give --splits)")
        return splits
    try:
        load_split(data, TASK_NAMES[0], OOD_SPLIT)
    except DatasetError:
        return ["test"]
    return list(EVAL_SPLITS)


def eos_token(model: str | None) -> str | None:
    """The end-of-sequence token of a model folder's tokenizer, when it names one."""
    config = Path(model) / "tokenizer_config.json" if model else None
    if config is None or not config.is_file():
        return None

    try:
        eos = json.loads(config.read_text(encoding="utf-8")).get("eos_token")
    except (OSError, ValueError):
        return None
    eos = eos.get("content") if isinstance(eos, dict) else eos
    return eos if isinstance(eos, str) and eos else None


def commands(written: export.Written, model: str | None, endpoint: str) -> list[str]:
    """The command lines that run the folder's tasks. The chat-completions client is given the
    model's EOS token as its stop string (`eos_string`): without one it sends `"stop": []`,
    which `transformers serve` answers with a 500. A span family's fine-tuned tasks are plain
    text, without chat template: an encoder-decoder runs with `backend=seq2seq`, and no
    OpenAI-compatible server serves it."""
    include = shlex.quote(str(written.out.resolve() / "lm_eval"))
    eos = eos_token(model)
    base = adapter_base(model, quantized=False) if model else None
    model = model or "MODEL"
    # an adapter run (LoRA) is its base plus `peft=`: lm-eval cannot load the run folder alone
    hf_model = f"pretrained={base.model},peft={model}" if base else f"pretrained={model}"
    served = f"model={model},base_url={endpoint.rstrip('/')}/chat/completions" \
        + f",eos_string={eos or 'EOS_TOKEN'}"
    family = get_family(written.family)
    lines = []
    for setting, what in (("icl", "in-context"), ("ft", "fine-tuned")):
        if setting not in written.tasks:
            continue
        tasks = f"{export.SUITE}_{setting}"
        if setting == "ft" and isinstance(family, SpanFamily):
            backend = ",backend=seq2seq" if family.encoder_decoder else ""
            lines.append(f"# {what}, {family.name} ({tasks}: {', '.join(written.tasks[setting])}; "
                         "its own input text, no chat template):")
            lines.append(f"lm_eval --model hf --model_args {shlex.quote(hf_model + backend)} "
                         f"--batch_size 1 --include_path {include} --tasks {tasks} --log_samples "
                         "--output_path out/harness-results")
            continue
        common = (f"--include_path {include} --tasks {tasks} --apply_chat_template "
                  "--fewshot_as_multiturn --log_samples --output_path out/harness-results")
        lines.append(f"# {what} ({tasks}: {', '.join(written.tasks[setting])}), a Hugging Face "
                     "model folder or id:")
        lines.append(f"lm_eval --model hf --model_args {shlex.quote(hf_model)} "
                     f"--batch_size 1 {common}")
        lines.append(f"# {what}, the same model behind an OpenAI-compatible server (vLLM, TGI, "
                     "transformers serve):")
        lines.append(f"lm_eval --model local-chat-completions --model_args {shlex.quote(served)} "
                     f"{common}")
    if written.lighteval:
        custom = shlex.quote(str(written.out.resolve() / "lighteval_tasks.py"))
        lines.append("# fine-tuned, lighteval in its own venv (make harness-env), the same model "
                     "behind the server (one model config per task: its system message):")
        for task, config in written.lighteval.items():
            names = ",".join(f"{n}|0" for n in written.tasks.get("ft", [])
                             if n.startswith(f"{export.SUITE}_{task}_"))
            lines.append(f".venv-lighteval/bin/lighteval endpoint litellm "
                         f"{shlex.quote(str((written.out / config).resolve()))} "
                         f"{shlex.quote(names)} --custom-tasks {custom} "
                         "--output-dir out/harness-results")
    return lines
