"""The one training entry point: a recipe (a parsed `recipes.Recipe`) -> a finished run directory.
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

Data flow: dataset rows -> the family's training example (`families`: its format; `encoding`:
fitted to the token budget before the trainer sees anything, since TRL would silently cut or drop long
rows): old context is cut from the left, then the oldest state entries, never the target; an
example that cannot fit is skipped, and every cut and skip is counted in the log and in
run_info.json. Decoders train with TRL's `SFTTrainer` on prompt/completion data (loss on the
completion, ending in EOS / the end-of-turn token; on CPU its LM head scores the completion's
positions only, `trl_patch`), encoder-decoders with `Seq2SeqTrainer` (`trainers`). Both
evaluate by generating on the validation split (`validation`), so NLU/POL checkpoints are
selected by F1 (`metric_for_best_model: f1`), NLG by loss.

The run directory (`output_dir`, see `runs`) gets the model (adapter or full weights) +
tokenizer, `recipe.yaml` (resolved), `run_info.json` and `checkpoints/`. A rerun resumes from the
last complete checkpoint there, only if it was trained from the same recipe, dataset and base
model (each checkpoint records them: `resume`); `train_runtime_s` adds up every segment of a
resumed run (`run_info`). Numeric settings no run can train with are refused before any work
(`recipes.NUMBER_RULES`), and a loss that turns NaN or infinite stops the run
(`trainers.DivergenceCheck`).

This module is the run itself, in order (`run`); each job it calls has a module of its own:
`encoding` (rows -> fitted examples), `padding` (the pad token, padding-free or padded batches),
`loading.load_trainable_model` (the base), `validation` (generative eval), `trainers` (the
trainer), `trl_patch` (TRL's CPU LM head), `resume` (checkpoints) and `run_info` (the record).
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from accelerate import PartialState
from transformers import AutoConfig, AutoTokenizer

from meditod_hub.data.dataset import load_split
from meditod_hub.data.tasks import trained_tasks
from meditod_hub.errors import MeditodError, UsageError, load_failure
from meditod_hub.files import output_folder
from meditod_hub.models import pretrained, tiny
from meditod_hub.models.encoding import Encoded, encode_tasks
from meditod_hub.models.families import Budget
from meditod_hub.models.loading import load_trainable_model
from meditod_hub.models.padding import ensure_pad_token, plan_batching
from meditod_hub.models.recipes import Recipe
from meditod_hub.models.resume import ResumeRecorder, plan_resume, resume_fingerprint
from meditod_hub.models.run_info import run_info
from meditod_hub.models.runs import CHECKPOINTS, write_run_files
from meditod_hub.models.trainers import DivergenceCheck, make_trainer
from meditod_hub.models.validation import MultiTaskScorer, ValidationScorer

logger = logging.getLogger("meditod_hub.models.train")


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
    info = run_info(recipe, budget, train, trainer.state.global_step, recorder.runtime())
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
