"""The one training entry point: a recipe (a parsed `Recipe`) -> a finished run directory.
`meditod train` (`commands.train`) resolves MODEL [TASK], parses the recipe and its overrides,
and launches one process or many.

A recipe is YAML whose keys are fields of the trainer's own dataclasses (TRL `SFTConfig` for
decoders, transformers `Seq2SeqTrainingArguments` for encoder-decoders), TRL `ModelConfig`
(model, LoRA, 4-bit) and `MeditodArguments` (`recipes`); every key can be overridden as `--key=value`.
Full fine-tuning vs QLoRA is `use_peft` + `load_in_4bit` (ModelConfig's own flags).
`task: multitask` trains one model on the NLU, POL and NLG examples together (each fitted as in
its single-task run, under the recipe's one budget, mixed by the trainer's shuffling sampler);
run_info.json records `"task": "multitask"` and `"tasks"`, and NLU/POL validation reports each
task's F1 and their mean as `f1`.

Data flow: dataset rows -> the family's training example (`families`: its format, fitted to
the token budget before the trainer sees anything, since TRL would silently cut or drop long
rows): old context is cut from the left, then the oldest state entries, never the target; an
example that cannot fit is skipped, and every cut and skip is counted in the log and in
run_info.json. Decoders train with TRL's `SFTTrainer` on prompt/completion data (loss on the
completion, ending in EOS / the end-of-turn token; on CPU its LM head scores the completion's
positions only, `labelled_positions_only`), encoder-decoders with `Seq2SeqTrainer`. Both
evaluate by generating on the validation split, so NLU/POL checkpoints are selected by F1
(`metric_for_best_model: f1`), NLG by loss.

The run directory (`output_dir`, see `runs`) gets the model (adapter or full weights) +
tokenizer, `recipe.yaml` (resolved), `run_info.json` and `checkpoints/`. A rerun resumes from the
last complete checkpoint there, only if it was trained from the same recipe, dataset and base
model (each checkpoint records them); `train_runtime_s` adds up every segment of a resumed run.
Numeric settings no run can train with are refused before any work (`recipes.NUMBER_RULES`),
and a loss that turns NaN or infinite stops the run (`DivergenceCheck`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import platform
import shutil
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import datasets
import peft
import torch
import transformers
import trl
import trl.trainer.utils as trl_utils
from accelerate import PartialState
from accelerate.utils import gather_object
from datasets import Dataset, concatenate_datasets
from peft import get_peft_model, prepare_model_for_kbit_training
from transformers import (
    AutoConfig,
    AutoTokenizer,
    DataCollatorForSeq2Seq,
    Seq2SeqTrainer,
    TrainerCallback,
)
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR
from transformers.utils import is_flash_attn_2_available, is_flash_attn_3_available
from trl import SFTTrainer, get_peft_config, get_quantization_config

from meditod_hub.data import proof
from meditod_hub.data.dataset import fingerprint, load_split
from meditod_hub.data.tasks import Task, tasks_of, trained_tasks
from meditod_hub.errors import MeditodError, UsageError, load_failure
from meditod_hub.files import atomic_write, output_folder, read_json
from meditod_hub.models import pretrained, tiny
from meditod_hub.models.families import Budget, Family, get_family
from meditod_hub.models.formats.fit import BudgetError
from meditod_hub.models.predictor import DecodeOptions, LocalPredictor
from meditod_hub.models.recipes import (
    MeditodArguments,
)
from meditod_hub.models.runs import CHECKPOINTS, budget_record, write_run_files

logger = logging.getLogger("meditod_hub.models.train")

# Tokens a tokenizer may already hold that can serve as padding when its pad is missing or is
# EOS / end-of-turn (Llama-3 ships no pad; OpenBioLLM's pad is its EOS).
PAD_CANDIDATES = ("<|finetune_right_pad_id|>", "<|reserved_special_token_0|>", "<pad>")
ADDED_PAD = "<pad>"


@dataclass
class Recipe:
    path: Path
    script: MeditodArguments
    training: object  # SFTConfig or Seq2SeqTrainingArguments
    model: object     # trl.ModelConfig
    resolved: dict    # the recipe's keys and every overridden key, with their final values

    @property
    def family(self) -> Family:
        return get_family(self.script.family)

    @property
    def budget(self) -> Budget:
        """The token budget, resolved once from the keys the recipe and command line set (never
        a trainer default) and recorded in run_info.json, where every reader takes it from."""
        return self.family.budget(self.resolved)


# --- data ----------------------------------------------------------------------------------
@dataclass
class Encoded:
    dataset: Dataset | None
    truncated: int = 0                                    # examples whose input was cut
    state_cut: int = 0                                    # ...of which lost state entries
    skipped: list[str] = field(default_factory=list)      # ids of examples that cannot fit


def encode(family: Family, task: Task, rows: list[dict], tokenizer, budget: Budget) -> Encoded:
    """Trainer-ready examples within the budget; nothing is cut or dropped without a count."""
    examples, truncated, state_cut, skipped = [], 0, 0, []
    for row in rows:
        try:
            example = family.training_example(task, row, tokenizer, budget)
        except BudgetError:
            skipped.append(row["id"])
            continue
        truncated += example.fitted.truncated
        state_cut += example.fitted.dropped_state > 0
        examples.append(example.features)
    return Encoded(Dataset.from_list(examples) if examples else None, truncated, state_cut,
                   skipped)


def encode_tasks(family: Family, rows_by_task: dict[Task, list[dict]], tokenizer,
                 budget: Budget) -> Encoded:
    """The examples of one or several tasks under one budget, in one dataset (a multi-task run's
    tasks are mixed by the trainer's shuffling sampler); skipped ids name their task."""
    parts = {task: encode(family, task, rows, tokenizer, budget)
             for task, rows in rows_by_task.items()}
    found = [part.dataset for part in parts.values() if part.dataset is not None]
    several = len(parts) > 1
    return Encoded(concatenate_datasets(found) if found else None,
                   sum(part.truncated for part in parts.values()),
                   sum(part.state_cut for part in parts.values()),
                   [f"{task.name}:{i}" if several else i
                    for task, part in parts.items() for i in part.skipped])


def ensure_pad_token(tokenizer, family: Family) -> bool:
    """Give the tokenizer a pad token that is neither EOS nor the end-of-turn token; True when
    one had to be added (the model's embeddings are then resized: `load_trainable_model`).

    Upstream set pad = EOS and its collator masked every pad id out of the labels, so the model
    never learned to stop (docs/format.md, "Model formats"). Distinct ids keep every collator from
    confusing them. The choice, in order: a pad the tokenizer already has; a known padding token
    of the vocabulary (Llama 3's `<|finetune_right_pad_id|>`); another special token that a chat
    never renders (ChatML's `<|endoftext|>`, SmolLM2's); else a new `<pad>`.
    """
    stops = set(family.stop_token_ids(tokenizer))
    if tokenizer.pad_token_id is not None and tokenizer.pad_token_id not in stops:
        return False
    spare = spare_special_tokens(tokenizer, stops)
    known = [c for c in PAD_CANDIDATES if c in spare]
    if known or spare:
        tokenizer.pad_token = (known or spare)[0]
        return False
    tokenizer.add_special_tokens({"pad_token": ADDED_PAD})
    logger.warning("%s: no pad token distinct from EOS/end-of-turn in the vocabulary; added %s "
                   "(id %d) and resized the embeddings", tokenizer.name_or_path, ADDED_PAD,
                   tokenizer.pad_token_id)
    return True


def spare_special_tokens(tokenizer, stops: set[int]) -> list[str]:
    """Special tokens that can pad: not a stop, not BOS, and never rendered by the chat template
    (a pad id inside a real sequence would be masked out of its labels), in vocabulary order."""
    used = set(stops) | {tokenizer.bos_token_id}
    if tokenizer.chat_template:
        used |= set(tokenizer.apply_chat_template(
            [{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
             {"role": "assistant", "content": "a"}], tokenize=True, return_dict=True)["input_ids"])
    specials = {**{i: t.content for i, t in tokenizer.added_tokens_decoder.items() if t.special},
                **dict(zip(tokenizer.all_special_ids, tokenizer.all_special_tokens))}
    return [token for i, token in sorted(specials.items()) if i not in used]


# --- model ---------------------------------------------------------------------------------
def flash_varlen_available(attn_implementation: str | None) -> bool:
    return torch.cuda.is_available() and (
        (attn_implementation == "flash_attention_2" and is_flash_attn_2_available())
        or (attn_implementation == "flash_attention_3" and is_flash_attn_3_available()))


def plan_batching(family: Family, training, model_args) -> str:
    """Padding-free where it is exact, length-grouped padded batches everywhere else.

    Padding-free concatenates a batch into one row and relies on FlashAttention's varlen kernel
    plus position ids to keep examples apart. BioGPT's attention ignores position ids, so it
    would let packed examples see each other: never for BioGPT. Without CUDA FlashAttention
    (CPU, or the package missing) the request falls back to padded batches with
    `train_sampling_strategy` (group_by_length in the recipes).
    """
    if not getattr(training, "padding_free", False):
        return "padded"
    if not family.exact_padding_free:
        raise UsageError(f"padding_free is not exact for family {family.name!r}: its attention "
                         "ignores position ids, so examples in one batch would attend to each other")
    if flash_varlen_available(model_args.attn_implementation):
        training.max_length = None  # every example is already fitted; TRL refuses both together
        return "padding_free"
    logger.warning("padding_free needs CUDA FlashAttention varlen (attn_implementation=%s): "
                   "using padded batches with train_sampling_strategy=%s instead",
                   model_args.attn_implementation, training.train_sampling_strategy)
    training.padding_free = False
    model_args.attn_implementation = "sdpa"
    return "padded"


def load_trainable_model(family: Family, model_args, training):
    """The base model (4-bit when the recipe says so), ready for LoRA on a quantized base."""
    quantization = get_quantization_config(model_args)
    # FSDP / ZeRO-3 shard the base themselves; DDP wants one full copy on each process's GPU.
    sharded = bool(training.fsdp or training.deepspeed) or any(
        os.environ.get(f"ACCELERATE_USE_{name}") == "true" for name in ("FSDP", "DEEPSPEED"))
    device_map = None
    if quantization is not None and torch.cuda.is_available() and not sharded:
        device_map = {"": PartialState().local_process_index}
    dtype = model_args.dtype
    model = family.auto_model().from_pretrained(
        model_args.model_name_or_path, revision=model_args.model_revision,
        dtype=getattr(torch, dtype) if dtype in ("bfloat16", "float16", "float32") else dtype,
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

    family: Family
    task: Task
    rows: list[dict]
    tokenizer: object
    budget: Budget
    batch_size: int

    def __call__(self, model, accelerator) -> dict:
        mine = list(range(accelerator.process_index, len(self.rows), accelerator.num_processes))
        predictor = LocalPredictor(model, self.tokenizer, self.family, self.task, self.budget,
                                   DecodeOptions(self.batch_size))
        records = predictor.predict([self.rows[i] for i in mine])
        gathered = dict(gather_object([(i, r.label) for i, r in zip(mine, records)]))
        scores = self.task.score(self.rows, [gathered[i] for i in range(len(self.rows))])
        return {"f1": scores["f1"], "parse_failures": scores["parse_failures"]}


@dataclass
class MultiTaskScorer:
    """A multi-task run's validation: each structured task's F1 and their mean as `f1` (what
    `metric_for_best_model: f1` selects on)."""

    scorers: list[ValidationScorer]

    def __call__(self, model, accelerator) -> dict:
        scores = {s.task.name: s(model, accelerator) for s in self.scorers}
        return {"f1": sum(v["f1"] for v in scores.values()) / len(scores),
                "parse_failures": sum(v["parse_failures"] for v in scores.values()),
                **{f"{task}_f1": v["f1"] for task, v in scores.items()}}


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


@contextmanager
def labelled_positions_only(device: torch.device):
    """On CPU, TRL's fused LM head scores only the positions that carry a label, as it does on CUDA.

    `trl.trainer.utils.add_fused_lm_head` (TRL 1.16) projects only the labelled positions where its
    Triton kernels run (CUDA, XPU) and every position elsewhere, keeping tile shapes fixed for graph
    compilers (Neuron). Eager CPU training compiles nothing, and an NLU example is mostly prompt,
    which carries no label: scoring the labelled positions alone gives the same loss and gradients
    (tests/test_train.py) for 1.42x faster steps of SmolLM2's NLU recipe (bench/bench_cpu_step.py).
    TRL decides through its module's `_use_triton`, patched here for the forward's duration only;
    drop this once TRL compacts off CUDA too.
    """
    if device.type != "cpu" or not hasattr(trl_utils, "_use_triton"):  # a TRL that decides otherwise
        yield
        return
    decides = trl_utils._use_triton
    trl_utils._use_triton = lambda on: on.type == "cpu" or decides(on)
    try:
        yield
    finally:
        trl_utils._use_triton = decides


class MeditodSFTTrainer(GenerationEvalMixin, SFTTrainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        with labelled_positions_only(self.accelerator.device):
            return super().compute_loss(model, inputs, return_outputs=return_outputs,
                                        num_items_in_batch=num_items_in_batch)


class MeditodSeq2SeqTrainer(GenerationEvalMixin, Seq2SeqTrainer):
    pass


def make_trainer(recipe: Recipe, model, tokenizer, train: Encoded, evaluation: Encoded | None,
                 scorer: ValidationScorer | None, callbacks=()):
    peft_config = get_peft_config(recipe.model)
    common = dict(args=recipe.training, train_dataset=train.dataset,
                  eval_dataset=evaluation.dataset if evaluation else None,
                  processing_class=tokenizer, callbacks=list(callbacks))
    if recipe.family.encoder_decoder:  # Seq2SeqTrainer takes no peft_config: wrap the model here
        if peft_config is not None:
            model = get_peft_model(model, peft_config)
        trainer = MeditodSeq2SeqTrainer(model=model, **common,
                                        data_collator=DataCollatorForSeq2Seq(tokenizer, model))
    else:
        trainer = MeditodSFTTrainer(model=model, peft_config=peft_config, **common)
    trainer.scorer = scorer
    return trainer


# --- resuming only what was started ------------------------------------------------------------
RESUME_RECORD = "meditod_resume.json"  # in each checkpoint-N: what it was trained from
# Settings that change nothing about the weights a resumed run would produce.
NOT_FINGERPRINTED = frozenset({"output_dir", "overwrite_output_dir", "resume_from_checkpoint",
                               "logging_steps", "report_to", "save_total_limit",
                               "per_device_eval_batch_size", "dataloader_num_workers"})


WHOLE_FILE_BYTES = 64 << 20  # a base's files up to this size count by content, larger by size


def base_identity(model_name_or_path: str, revision: str | None) -> str:
    """Which base a run starts from: a Hub id with its revision, or a local folder with a hash of
    its files (config, tokenizer and small weights by content, large weights by name and size),
    so a base rebuilt at the same path is another base."""
    folder = Path(model_name_or_path)
    if not folder.is_dir():
        return f"{model_name_or_path}@{revision or 'main'}"
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.iterdir() if p.is_file()):
        size = path.stat().st_size
        digest.update(f"{path.name}\n{size}\n".encode())
        if size <= WHOLE_FILE_BYTES:
            digest.update(path.read_bytes())
    return f"{model_name_or_path} (files sha256:{digest.hexdigest()[:16]})"


def resume_fingerprint(recipe: Recipe) -> dict:
    """What a checkpoint was trained from: the resolved recipe, the data and the base model."""
    settings = {k: v for k, v in recipe.resolved.items() if k not in NOT_FINGERPRINTED}
    return {"settings": json.loads(json.dumps(settings, default=str)),
            "data": fingerprint(recipe.script.dataset_name),
            "base_model": base_identity(recipe.model.model_name_or_path,
                                        recipe.model.model_revision)}


class ResumeRecorder(TrainerCallback):
    """Writes RESUME_RECORD into each checkpoint once the trainer has saved it whole, with the
    wall-clock of every training segment so far (so a resumed run's runtime adds up)."""

    def __init__(self, fingerprint: dict, runtime_before: float):
        self.fingerprint, self.runtime_before = fingerprint, runtime_before
        self.started = time.perf_counter()
        self.stepping = False  # the trainer has loaded any checkpoint and started its steps

    def on_step_begin(self, args, state, control, **kwargs):
        self.stepping = True

    def runtime(self) -> float:
        return self.runtime_before + time.perf_counter() - self.started

    def on_save(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            folder = Path(args.output_dir) / f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}"
            atomic_write(folder / RESUME_RECORD, json.dumps(
                {**self.fingerprint, "runtime_s": round(self.runtime(), 2)}, indent=2) + "\n")


class DivergenceCheck(TrainerCallback):
    """Stops the run at a logged training loss that is NaN or infinite: the weights are broken
    from there on, and going on would save (and let `publish` share) a broken model. The trainer
    is stopped without saving or evaluating (not interrupted, so its progress bar ends its line);
    `run` then raises `failure`. `run` also turns the trainer's `logging_nan_inf_filter` off,
    which would hide such a loss."""

    def __init__(self):
        self.failure: str | None = None

    def on_log(self, args, state, control, logs=None, **kwargs):
        for key in ("loss", "train_loss"):
            value = (logs or {}).get(key)
            if self.failure is None and isinstance(value, (int, float)) \
                    and not math.isfinite(value):
                self.failure = (f"step {state.global_step}: the training loss is {value}: the run "
                                "diverged and was stopped, nothing saved as the model; lower "
                                f"learning_rate (now {args.learning_rate:g}) or check the data, "
                                "and rerun with --overwrite_output_dir=true")
        if self.failure:
            control.should_training_stop = True
            control.should_save = control.should_evaluate = False
        return control


def _checkpoints(folder: Path) -> list[Path]:
    found = [p for p in folder.glob(f"{PREFIX_CHECKPOINT_DIR}-*") if p.is_dir()
             and p.name.rsplit("-", 1)[1].isdigit()]
    return sorted(found, key=lambda p: int(p.name.rsplit("-", 1)[1]))


def plan_resume(recipe: Recipe, checkpoints: Path) -> tuple[Path | None, float]:
    """The checkpoint to resume from (None: start) and the runtime already spent.

    A checkpoint without its record was cut off while saving: the one before it is used. A
    checkpoint of another recipe, dataset or base model is refused, unless `overwrite_output_dir`.
    """
    fingerprint = resume_fingerprint(recipe)
    explicit = recipe.training.resume_from_checkpoint
    found = [Path(explicit)] if explicit else _checkpoints(checkpoints)
    complete = [c for c in found if (c / RESUME_RECORD).exists()]
    if not complete:
        if found and not explicit:
            logger.warning("%s holds only incomplete checkpoints (cut off while saving): starting "
                           "over", checkpoints)
        elif explicit:
            raise UsageError(f"--resume_from_checkpoint {explicit}: not a complete checkpoint of "
                             "this kit (no meditod_resume.json)")
        return None, 0.0
    last = complete[-1]
    if found[-1] != last:
        logger.warning("%s is incomplete (cut off while saving): resuming from %s instead",
                       found[-1].name, last.name)
    record = read_json(last / RESUME_RECORD, fix=f"a damaged checkpoint: delete {last} to resume "
                       "from the one before, or pass --overwrite_output_dir=true to start over")
    if not isinstance(record.get("settings", {}), dict):
        raise MeditodError(f"{last / RESUME_RECORD}: not a resume record of this kit: delete {last} "
                           "to resume from the one before")
    changed = _changes(record, fingerprint)
    if not changed:
        return last, float(record.get("runtime_s", 0.0))
    if recipe.script.overwrite_output_dir:
        logger.warning("overwrite_output_dir: deleting the checkpoints of another run in %s "
                       "(changed: %s)", checkpoints, "; ".join(changed))
        shutil.rmtree(checkpoints)
        return None, 0.0
    raise UsageError(f"{checkpoints.parent} holds checkpoints of another run (changed: "
                     f"{'; '.join(changed[:6])}): pass --overwrite_output_dir=true to start over, "
                     "or choose another output_dir")


def _changes(record: dict, fingerprint: dict) -> list[str]:
    """`what checkpoint's-value -> this-run's-value` for each difference between a checkpoint's
    record and this run's fingerprint (a setting left at its default is in neither)."""
    before, now = record.get("settings", {}), fingerprint["settings"]
    pairs = [(k, before.get(k, "(default)"), now.get(k, "(default)"))
             for k in sorted(set(before) | set(now)) if before.get(k) != now.get(k)]
    pairs += [(what, record.get(key, "(not recorded)"), fingerprint[key])
              for key, what in (("base_model", "base model"), ("data", "the dataset's content"))
              if record.get(key) != fingerprint[key]]
    return [f"{what} {_shown(old)} -> {_shown(new)}" for what, old, new in pairs]


def _shown(value) -> str:
    return value if isinstance(value, str) else json.dumps(value)


# --- the run -------------------------------------------------------------------------------
def apply_effective_batch(recipe: Recipe) -> None:
    """gradient_accumulation_steps = effective batch / (per-device batch x processes)."""
    target, training = recipe.script.effective_batch_size, recipe.training
    if not target:
        return
    per_step = training.per_device_train_batch_size * training.world_size
    if target % per_step:
        raise UsageError(f"effective_batch_size {target} is not a multiple of per-device batch "
                         f"x processes = {per_step}")
    training.gradient_accumulation_steps = target // per_step


def hardware(world_size: int) -> str:
    device = (torch.cuda.get_device_name() if torch.cuda.is_available()
              else f"CPU ({platform.processor() or platform.machine()}, {os.cpu_count()} cores)")
    return f"{world_size} x {device}"


def framework_versions() -> dict:
    return {m.__name__: m.__version__ for m in (torch, transformers, trl, peft, datasets)}


def prepare_data(recipe: Recipe, tokenizer, budget: Budget):
    """Fitted train / validation examples and, for NLU and POL, the generating F1 scorer (of
    every task a multi-task recipe trains)."""
    script, training, family = recipe.script, recipe.training, recipe.family
    tasks = trained_tasks(script.task)
    train = encode_tasks(family, {t: load_split(script.dataset_name, t.name,
                                                script.dataset_train_split)
                                  for t in tasks}, tokenizer, budget)
    if train.dataset is None:
        raise MeditodError(f"{script.dataset_name}: no {script.task} training example fits "
                           f"within {budget.max_length} tokens; raise the budget")
    _log_fit("train", train, budget)
    if not script.dataset_eval_split or training.eval_strategy == "no":
        return train, None, None
    rows = {t: load_split(script.dataset_name, t.name, script.dataset_eval_split) for t in tasks}
    evaluation = encode_tasks(family, rows, tokenizer, budget)
    _log_fit(script.dataset_eval_split, evaluation, budget)
    scorers = [ValidationScorer(family, t, rows[t][:script.eval_max_examples], tokenizer, budget,
                                training.per_device_eval_batch_size)
               for t in tasks if t.structured]
    scorer = (MultiTaskScorer(scorers) if len(tasks) > 1 else scorers[0]) if scorers else None
    return train, evaluation, scorer


def _log_fit(split: str, encoded: Encoded, budget: Budget) -> None:
    kept = len(encoded.dataset) if encoded.dataset else 0
    log = logger.warning if encoded.skipped else logger.info
    log("%s: %d examples, %d cut to fit %s tokens (%d of them lost state entries), %d skipped%s",
        split, kept, encoded.truncated, budget.max_length, encoded.state_cut,
        len(encoded.skipped), f" (ids: {', '.join(encoded.skipped)})" if encoded.skipped else "")


def check_positions(recipe: Recipe) -> None:
    """Refuse a token budget beyond the base model's positions before any work
    (`Budget.beyond_positions`)."""
    base = recipe.model.model_name_or_path
    try:  # a local folder or the Hub cache only: a download (with its retries) waits for `run`
        config = AutoConfig.from_pretrained(base, revision=recipe.model.model_revision,
                                            local_files_only=True)
    except (OSError, ValueError):
        return  # no config here yet: loading the model downloads it, or says why not (`run`)
    for key, value, limit in recipe.budget.beyond_positions(config, recipe.family.encoder_decoder):
        key = recipe.family.budget_key if key == "max_length" else key
        raise UsageError(f"{recipe.path}: {key} {value} is beyond the {limit} positions of "
                         f"{base} (its max_position_embeddings): set {key} to at most {limit}")


def run(recipe: Recipe, callbacks=()) -> dict:
    """Train, save the run directory, return its run_info."""
    script, training, family = recipe.script, recipe.training, recipe.family
    check_positions(recipe)
    run_dir = Path(training.output_dir)
    if training.process_index == 0:  # new, empty, or an earlier (maybe interrupted) run's
        output_folder(run_dir, purpose="train", what="output_dir",
                      input_folders=[script.dataset_name, recipe.model.model_name_or_path])
    training.output_dir = str(run_dir / CHECKPOINTS)  # checkpoints are never published
    budget = recipe.budget
    if not family.encoder_decoder:  # TRL's own cut follows it (plan_batching may lift it)
        training.max_length = budget.max_length
    apply_effective_batch(recipe)
    training.logging_nan_inf_filter = False  # a NaN loss must reach DivergenceCheck
    batching = plan_batching(family, training, recipe.model)
    logger.info("%s/%s: %s batches, %d process(es) x %d per device x %d accumulation",
                script.model, script.task, batching, training.world_size,
                training.per_device_train_batch_size, training.gradient_accumulation_steps)
    resume, runtime_before = plan_resume(recipe, Path(training.output_dir))

    try:
        tokenizer = AutoTokenizer.from_pretrained(recipe.model.model_name_or_path,
                                                  revision=recipe.model.model_revision)
    except (OSError, ValueError) as exc:  # no such folder, not cached offline, damaged files
        raise MeditodError(f"model_name_or_path {recipe.model.model_name_or_path}: cannot load "
                           f"its tokenizer ({load_failure(exc)}): give a model folder, or a Hub "
                           "id that is cached or reachable") from None
    added_pad = ensure_pad_token(tokenizer, family)
    train, evaluation, scorer = prepare_data(recipe, tokenizer, budget)
    model = load_trainable_model(family, recipe.model, training)
    if added_pad:
        model.resize_token_embeddings(len(tokenizer))
    recorder = ResumeRecorder(resume_fingerprint(recipe), runtime_before)
    divergence = DivergenceCheck()
    trainer = make_trainer(recipe, model, tokenizer, train, evaluation, scorer,
                           [*callbacks, recorder, divergence])
    if len(trainer.train_dataset) != len(train.dataset):  # TRL filters rows without a word
        raise MeditodError(f"the trainer dropped {len(train.dataset) - len(trainer.train_dataset)}"
                           " of the fitted training examples")
    if resume:
        logger.info("resuming from %s", resume)
    try:
        trainer.train(resume_from_checkpoint=str(resume) if resume else None)
    except Exception as exc:
        if resume is None or recorder.stepping or isinstance(exc, MeditodError):
            raise
        raise MeditodError(f"{resume}: cannot resume from this checkpoint ({load_failure(exc)}): "
                           "delete it to resume from the one before, or pass "
                           "--overwrite_output_dir=true to start over") from None
    if divergence.failure:
        raise MeditodError(divergence.failure)

    trainer.save_model(str(run_dir))  # the best checkpoint's weights with load_best_model_at_end
    trainer.save_state()              # checkpoints/trainer_state.json: loss and eval history
    info = {
        "model": script.model, "task": script.task, "tasks": list(tasks_of(script.task)),
        "family": family.name,
        "base_model": recipe.model.model_name_or_path, "adapter": recipe.model.use_peft,
        "quantization": recipe.model.bnb_4bit_quant_type if recipe.model.load_in_4bit else None,
        "global_step": trainer.state.global_step,
        "train_runtime_s": round(recorder.runtime(), 2),
        "hardware": hardware(training.world_size), "framework_versions": framework_versions(),
        "train_examples": len(train.dataset), "truncated_examples": train.truncated,
        "state_cut_examples": train.state_cut, "skipped_examples": len(train.skipped),
        **proof.record(script.dataset_name),
        "seed": training.seed, "budget": budget_record(budget),
    }
    if trainer.is_world_process_zero():
        tokenizer.save_pretrained(run_dir)
        for path in pretrained.provenance_files(recipe.model.model_name_or_path):
            shutil.copyfile(path, run_dir / path.name)  # the base's licence travels with the run
        write_run_files(run_dir, info, recipe.resolved)
    return info


def ensure_tiny_base(model_args, dataset: str) -> None:
    """Make a tiny recipe's missing base (`build/tiny-models/<name>`) from `dataset`'s training
    split, as `meditod tiny` does, so the tiny recipes run on a fresh checkout."""
    path = Path(model_args.model_name_or_path)
    if tiny.is_built(path) or path.parent != tiny.DEFAULT_OUT or path.name not in tiny.FAMILY_OF:
        return
    with PartialState().main_process_first():
        if not tiny.is_built(path):
            logger.info("%s: not built yet; building it from %s (meditod tiny --data %s --models "
                        "%s)", path, dataset, dataset, path.name)
            tiny.build_all(dataset, path.parent, [path.name])
