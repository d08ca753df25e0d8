"""The one training entry point: a recipe -> a finished run directory.

    python -m meditod_hub.train recipes/llama3-8b/nlu.yaml
    python -m meditod_hub.train recipes/tiny-llama/nlu.yaml --num_train_epochs=2 --output_dir=runs/x
    accelerate launch --config_file recipes/accelerate/ddp.yaml -m meditod_hub.train recipes/...
    torchrun --nproc_per_node 2 -m meditod_hub.train recipes/...   # CPU: gloo

A recipe is YAML whose keys are fields of the trainer's own dataclasses (TRL `SFTConfig` for
decoders, transformers `Seq2SeqTrainingArguments` for encoder-decoders), TRL `ModelConfig`
(model, LoRA, 4-bit) and `MeditodArguments` below; every key can be overridden as `--key=value`.
Full fine-tuning vs QLoRA is `use_peft` + `load_in_4bit` (ModelConfig's own flags).

Data flow: dataset rows -> `formats` (the family's input/target) -> token budgets fitted HERE,
before the trainer sees anything (TRL would silently cut or drop long rows): the context is cut
from the left, never the target; an example that cannot fit is skipped, and every cut and skip
is counted in the log and in run_info.json. Decoders train with TRL's `SFTTrainer` on
prompt/completion data (loss on the completion, ending in EOS / the end-of-turn token),
encoder-decoders with `Seq2SeqTrainer`. Both evaluate by generating on the validation split, so
NLU/POL checkpoints are selected by F1 (`metric_for_best_model: f1`), NLG by loss.

The run directory (`output_dir`) gets the model (adapter or full weights) + tokenizer,
`recipe.yaml` (resolved), `run_info.json` and `checkpoints/`; a rerun resumes from the last
checkpoint there.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import platform
import sys
from dataclasses import dataclass, field
from pathlib import Path

import datasets
import peft
import torch
import transformers
import trl
import yaml
from accelerate import PartialState
from accelerate.utils import gather_object
from datasets import Dataset, load_dataset
from peft import get_peft_model, prepare_model_for_kbit_training
from transformers import (AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer,
                          DataCollatorForSeq2Seq, Seq2SeqTrainer, Seq2SeqTrainingArguments)
from transformers.trainer_utils import get_last_checkpoint
from transformers.utils import is_flash_attn_2_available, is_flash_attn_3_available
from trl import (ModelConfig, SFTConfig, SFTTrainer, TrlParser, get_peft_config,
                 get_quantization_config)
from trl.trainer.utils import create_model_from_path

from .formats import TASKS, chat, seq2seq
from .formats.fit import BudgetError, fit_to_budget
from .metrics import nlu_f1, pol_f1
from .predict import (DECODER_FAMILIES, FAMILIES, SEQ2SEQ_FAMILIES, Budget, predict_rows,
                      stop_token_ids)

logger = logging.getLogger("meditod_hub.train")

# Tokens a tokenizer may already hold that can serve as padding when its pad is missing or is
# EOS / end-of-turn (Llama-3 ships no pad; OpenBioLLM's pad is its EOS).
PAD_CANDIDATES = ("<|finetune_right_pad_id|>", "<|reserved_special_token_0|>", "<pad>")


@dataclass
class MeditodArguments:
    """The MediTOD part of a recipe; the trainer's and TRL's dataclasses hold the rest."""

    task: str = field(metadata={"help": "nlu, pol or nlg", "choices": list(TASKS)})
    family: str = field(metadata={"help": "input/output format and trainer",
                                  "choices": list(FAMILIES)})
    model: str = field(metadata={"help": "recipe model name, e.g. llama3-8b (run_info.json)"})
    dataset_name: str = field(default="meditod",
                              metadata={"help": "built dataset folder or Hub dataset id"})
    dataset_train_split: str = "train"
    dataset_eval_split: str | None = field(default="validation",
                                           metadata={"help": "null: no evaluation"})
    max_source_length: int | None = field(
        default=None, metadata={"help": "encoder-decoders: encoder input budget in tokens "
                                        "(decoders use SFTConfig's max_length)"})
    max_new_tokens: int = field(default=500, metadata={
        "help": "generation budget at validation and prediction; BioGPT also reserves it in "
                "max_length"})
    effective_batch_size: int | None = field(default=None, metadata={
        "help": "if set, gradient_accumulation_steps = this / (per-device batch x processes)"})
    eval_max_examples: int | None = field(default=None, metadata={
        "help": "generate on only the first N validation rows (cheap CPU runs)"})


@dataclass
class Recipe:
    script: MeditodArguments
    training: object  # SFTConfig or Seq2SeqTrainingArguments
    model: object     # trl.ModelConfig
    resolved: dict    # the recipe's keys and every overridden key, with their final values

    @property
    def budget(self) -> Budget:
        seq = self.script.family in SEQ2SEQ_FAMILIES
        return Budget(self.script.max_source_length if seq else self.training.max_length,
                      self.script.max_new_tokens)


def parse_recipe(argv: list[str]) -> Recipe:
    """`<recipe.yaml> [--key=value ...]` -> the three dataclasses (TrlParser: YAML, then CLI)."""
    if not argv or argv[0].startswith("-"):
        raise SystemExit("usage: python -m meditod_hub.train <recipe.yaml> [--key=value ...]")
    path, overrides = argv[0], list(argv[1:])
    config = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    cli_keys = [a[2:].split("=", 1)[0] for a in overrides if a.startswith("--")]
    family = _cli_value(overrides, "family") or config.get("family")
    if family not in FAMILIES:
        raise SystemExit(f"{path}: `family` must be one of {FAMILIES}, got {family!r}")
    training_class = SFTConfig if family in DECODER_FAMILIES else Seq2SeqTrainingArguments
    parser = TrlParser((MeditodArguments, training_class, ModelConfig))
    # Without CUDA, TrainingArguments must be told so at construction: it then runs several
    # processes as gloo DDP (otherwise each trains alone) and accepts bf16 recipes.
    device = [] if torch.cuda.is_available() else ["--use_cpu=true"]
    script, training, model = parser.parse_args_and_config(["--config", path, *device, *overrides])
    values = {**_plain(model), **training.to_dict(), **_plain(script)}
    resolved = {k: values[k] for k in dict.fromkeys([*config, *cli_keys]) if k in values}
    return Recipe(script, training, model, resolved)


def _cli_value(args: list[str], key: str) -> str | None:
    for i, arg in enumerate(args):
        if arg.startswith(f"--{key}="):
            return arg.split("=", 1)[1]
        if arg == f"--{key}" and i + 1 < len(args):
            return args[i + 1]
    return None


def _plain(instance) -> dict:
    return {f.name: getattr(instance, f.name) for f in dataclasses.fields(instance)}


# --- data ----------------------------------------------------------------------------------
@dataclass
class Encoded:
    dataset: Dataset | None
    truncated: int = 0                                    # examples whose context was cut
    skipped: list[str] = field(default_factory=list)      # ids of examples that cannot fit


def encode(family: str, task: str, rows: list[dict], tokenizer, budget: Budget) -> Encoded:
    """Trainer-ready examples within the budget; nothing is cut or dropped without a count."""
    examples, truncated, skipped = [], 0, []
    for row in rows:
        if family == "llama":
            messages = chat.messages(task, row)
            length = len(tokenizer.apply_chat_template(messages, tokenize=True,
                                                       return_dict=True)["input_ids"])
            if budget.max_length is not None and length > budget.max_length:
                skipped.append(row["id"])  # the chat window has no context left to cut
                continue
            examples.append({"prompt": messages[:2], "completion": messages[2:]})
            continue
        parts = seq2seq.source_parts(family, task, row)
        text = seq2seq.target_text(family, task, row)
        if family == "biogpt":  # one sequence: fitted prompt, then target + EOS
            target = tokenizer(text, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        else:                   # T5 labels: the tokenizer's own template appends </s>
            target = tokenizer(text)["input_ids"]
        try:
            fitted = fit_to_budget(tokenizer, parts, budget.max_length, row["id"],
                                   len(target) if family == "biogpt" else 0)
        except BudgetError:
            skipped.append(row["id"])
            continue
        truncated += fitted.truncated
        if family == "biogpt":
            examples.append({"input_ids": fitted.input_ids + target,
                             "labels": [-100] * len(fitted.input_ids) + target})
        else:
            examples.append({"input_ids": fitted.input_ids, "labels": target})
    return Encoded(Dataset.from_list(examples) if examples else None, truncated, skipped)


def ensure_pad_token(tokenizer) -> None:
    """Give the tokenizer a pad token that is neither EOS nor the end-of-turn token.

    Upstream set pad = EOS and its collator masked every pad id out of the labels, so the model
    never learned to stop (reference 3.3). Distinct ids keep every collator from confusing them.
    """
    stops = set(stop_token_ids(tokenizer))
    if tokenizer.pad_token_id is not None and tokenizer.pad_token_id not in stops:
        return
    vocab = tokenizer.get_vocab()
    for candidate in PAD_CANDIDATES:
        if candidate in vocab and vocab[candidate] not in stops:
            tokenizer.pad_token = candidate
            return
    raise ValueError(f"{tokenizer.name_or_path}: no pad token distinct from EOS/end-of-turn and "
                     f"none of {PAD_CANDIDATES} in the vocabulary; add one to the tokenizer")


# --- model ---------------------------------------------------------------------------------
def flash_varlen_available(attn_implementation: str | None) -> bool:
    return torch.cuda.is_available() and (
        (attn_implementation == "flash_attention_2" and is_flash_attn_2_available())
        or (attn_implementation == "flash_attention_3" and is_flash_attn_3_available()))


def plan_batching(family: str, training, model_args) -> str:
    """Padding-free where it is exact, length-grouped padded batches everywhere else.

    Padding-free concatenates a batch into one row and relies on FlashAttention's varlen kernel
    plus position ids to keep examples apart. BioGPT's attention ignores position ids, so it
    would let packed examples see each other: never for BioGPT. Without CUDA FlashAttention
    (CPU, or the package missing) the request falls back to padded batches with
    `train_sampling_strategy` (group_by_length in the recipes).
    """
    if not getattr(training, "padding_free", False):
        return "padded"
    if family != "llama":
        raise ValueError(f"padding_free is not exact for family {family!r}: its attention ignores "
                         "position ids, so examples in one batch would attend to each other")
    if flash_varlen_available(model_args.attn_implementation):
        training.max_length = None  # every example is already fitted; TRL refuses both together
        return "padding_free"
    logger.warning("padding_free needs CUDA FlashAttention varlen (attn_implementation=%s): "
                   "using padded batches with train_sampling_strategy=%s instead",
                   model_args.attn_implementation, training.train_sampling_strategy)
    training.padding_free = False
    model_args.attn_implementation = "sdpa"
    return "padded"


def load_model(family: str, model_args, training):
    """The base model (4-bit when the recipe says so), ready for LoRA on a quantized base."""
    quantization = get_quantization_config(model_args)
    # FSDP / ZeRO-3 shard the base themselves; DDP wants one full copy on each process's GPU.
    sharded = bool(training.fsdp or training.deepspeed) or any(
        os.environ.get(f"ACCELERATE_USE_{name}") == "true" for name in ("FSDP", "DEEPSPEED"))
    device_map = None
    if quantization is not None and torch.cuda.is_available() and not sharded:
        device_map = {"": PartialState().local_process_index}
    model = create_model_from_path(
        model_args.model_name_or_path,
        AutoModelForCausalLM if family in DECODER_FAMILIES else AutoModelForSeq2SeqLM,
        revision=model_args.model_revision, dtype=model_args.dtype,
        attn_implementation=model_args.attn_implementation, quantization_config=quantization,
        device_map=device_map)
    if quantization is not None and not sharded:
        model = prepare_model_for_kbit_training(
            model, use_gradient_checkpointing=training.gradient_checkpointing,
            gradient_checkpointing_kwargs=training.gradient_checkpointing_kwargs)
    return model


# --- validation by generation ----------------------------------------------------------------
@dataclass
class ValidationScorer:
    """NLU/POL F1 of greedy generations on the validation rows (exact judge).

    Each process generates a strided share of the rows; all processes gather every prediction
    and compute the same score, so checkpoint selection agrees across ranks.
    """

    family: str
    task: str
    rows: list[dict]
    tokenizer: object
    budget: Budget
    batch_size: int

    def __call__(self, model, accelerator) -> dict:
        mine = list(range(accelerator.process_index, len(self.rows), accelerator.num_processes))
        records = predict_rows(model, self.tokenizer, self.family, self.task,
                               [self.rows[i] for i in mine], self.budget, self.batch_size)
        gathered = dict(gather_object([(i, r["prediction"] if r["parse_ok"] else None)
                                       for i, r in zip(mine, records)]))
        labels = [gathered[i] for i in range(len(self.rows))]
        gold = [row[chat.TARGET_COLUMN[self.task]] for row in self.rows]
        scores = (nlu_f1 if self.task == "nlu" else pol_f1)(gold, labels)
        return {"f1": scores.total().f1, "parse_failures": scores.parse_failures}


class GenerationEvalMixin:
    """Adds the generation scores to each evaluation's metrics (TRL has no generative eval)."""

    scorer: ValidationScorer | None = None

    def evaluation_loop(self, dataloader, description, prediction_loss_only=None,
                        ignore_keys=None, metric_key_prefix="eval"):
        output = super().evaluation_loop(dataloader, description, prediction_loss_only,
                                         ignore_keys, metric_key_prefix)
        if self.scorer is not None:
            scores = self.scorer(self.model, self.accelerator)
            output.metrics.update({f"{metric_key_prefix}_{k}": v for k, v in scores.items()})
        return output


class MeditodSFTTrainer(GenerationEvalMixin, SFTTrainer):
    pass


class MeditodSeq2SeqTrainer(GenerationEvalMixin, Seq2SeqTrainer):
    pass


def make_trainer(recipe: Recipe, model, tokenizer, train: Encoded, evaluation: Encoded | None,
                 scorer: ValidationScorer | None, callbacks=()):
    peft_config = get_peft_config(recipe.model)
    common = dict(args=recipe.training, train_dataset=train.dataset,
                  eval_dataset=evaluation.dataset if evaluation else None,
                  processing_class=tokenizer, callbacks=list(callbacks))
    if recipe.script.family in DECODER_FAMILIES:
        trainer = MeditodSFTTrainer(model=model, peft_config=peft_config, **common)
    else:  # Seq2SeqTrainer takes no peft_config: wrap the model here
        if peft_config is not None:
            model = get_peft_model(model, peft_config)
        trainer = MeditodSeq2SeqTrainer(model=model, **common,
                                        data_collator=DataCollatorForSeq2Seq(tokenizer, model))
    trainer.scorer = scorer
    return trainer


# --- the run -------------------------------------------------------------------------------
def apply_effective_batch(recipe: Recipe) -> None:
    """gradient_accumulation_steps = effective batch / (per-device batch x processes)."""
    target, training = recipe.script.effective_batch_size, recipe.training
    if not target:
        return
    per_step = training.per_device_train_batch_size * training.world_size
    if target % per_step:
        raise ValueError(f"effective_batch_size {target} is not a multiple of per-device batch "
                         f"x processes = {per_step}")
    training.gradient_accumulation_steps = target // per_step


def hardware(world_size: int) -> str:
    device = (torch.cuda.get_device_name() if torch.cuda.is_available()
              else f"CPU ({platform.processor() or platform.machine()}, {os.cpu_count()} cores)")
    return f"{world_size} x {device}"


def framework_versions() -> dict:
    return {m.__name__: m.__version__ for m in (torch, transformers, trl, peft, datasets)}


def prepare_data(recipe: Recipe, tokenizer, budget: Budget):
    """Fitted train / validation examples and, for NLU and POL, the generating F1 scorer."""
    script, training = recipe.script, recipe.training
    data = load_dataset(script.dataset_name, script.task)
    train = encode(script.family, script.task, list(data[script.dataset_train_split]), tokenizer,
                   budget)
    if train.dataset is None:
        raise ValueError(f"{script.dataset_name}: no {script.task} training example fits within "
                         f"{budget.max_length} tokens")
    _log_fit("train", train, budget)
    if not script.dataset_eval_split or training.eval_strategy == "no":
        return train, None, None
    rows = list(data[script.dataset_eval_split])
    evaluation = encode(script.family, script.task, rows, tokenizer, budget)
    _log_fit(script.dataset_eval_split, evaluation, budget)
    scorer = None if script.task == "nlg" else ValidationScorer(
        script.family, script.task, rows[:script.eval_max_examples], tokenizer, budget,
        training.per_device_eval_batch_size)
    return train, evaluation, scorer


def _log_fit(split: str, encoded: Encoded, budget: Budget) -> None:
    kept = len(encoded.dataset) if encoded.dataset else 0
    log = logger.warning if encoded.skipped else logger.info
    log("%s: %d examples, %d with context cut to fit %s tokens, %d skipped%s", split, kept,
        encoded.truncated, budget.max_length, len(encoded.skipped),
        f" (ids: {', '.join(encoded.skipped)})" if encoded.skipped else "")


def run(recipe: Recipe, callbacks=()) -> dict:
    """Train, save the run directory, return its run_info."""
    script, training = recipe.script, recipe.training
    run_dir = Path(training.output_dir)
    training.output_dir = str(run_dir / "checkpoints")  # checkpoints are never published
    budget = recipe.budget  # before plan_batching, which may lift TRL's own max_length
    apply_effective_batch(recipe)
    batching = plan_batching(script.family, training, recipe.model)
    logger.info("%s/%s: %s batches, %d process(es) x %d per device x %d accumulation",
                   script.model, script.task, batching, training.world_size,
                   training.per_device_train_batch_size, training.gradient_accumulation_steps)

    tokenizer = AutoTokenizer.from_pretrained(recipe.model.model_name_or_path,
                                              revision=recipe.model.model_revision)
    ensure_pad_token(tokenizer)
    train, evaluation, scorer = prepare_data(recipe, tokenizer, budget)
    model = load_model(script.family, recipe.model, training)
    trainer = make_trainer(recipe, model, tokenizer, train, evaluation, scorer, callbacks)
    if len(trainer.train_dataset) != len(train.dataset):  # TRL filters rows without a word
        raise RuntimeError(f"the trainer dropped {len(train.dataset) - len(trainer.train_dataset)}"
                           " of the fitted training examples")
    last = get_last_checkpoint(training.output_dir) if Path(training.output_dir).is_dir() else None
    resume = training.resume_from_checkpoint or last
    if resume:
        logger.info("resuming from %s", resume)
    result = trainer.train(resume_from_checkpoint=resume)

    trainer.save_model(str(run_dir))  # the best checkpoint's weights with load_best_model_at_end
    trainer.save_state()              # checkpoints/trainer_state.json: loss and eval history
    info = {
        "model": script.model, "task": script.task, "family": script.family,
        "base_model": recipe.model.model_name_or_path, "adapter": recipe.model.use_peft,
        "quantization": recipe.model.bnb_4bit_quant_type if recipe.model.load_in_4bit else None,
        "global_step": trainer.state.global_step,
        "train_runtime_s": round(result.metrics["train_runtime"], 2),
        "hardware": hardware(training.world_size), "framework_versions": framework_versions(),
        "train_examples": len(train.dataset), "truncated_examples": train.truncated,
        "skipped_examples": len(train.skipped), "dataset": script.dataset_name,
        "seed": training.seed,
    }
    if trainer.is_world_process_zero():
        tokenizer.save_pretrained(run_dir)
        (run_dir / "recipe.yaml").write_text(yaml.safe_dump(recipe.resolved, sort_keys=False),
                                             encoding="utf-8")
        (run_dir / "run_info.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return info


def main(argv: list[str] | None = None, callbacks=()) -> int:
    logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
    logger.setLevel(logging.INFO)  # this module's figures; libraries stay at WARNING
    info = run(parse_recipe(list(sys.argv[1:] if argv is None else argv)), callbacks)
    print(json.dumps({k: info[k] for k in ("model", "task", "global_step", "train_examples",
                                           "truncated_examples", "skipped_examples")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
