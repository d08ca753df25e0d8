"""The trainer a run trains with: TRL's `SFTTrainer` for decoders (its loss on CPU over the
labelled positions only, `trl_patch`), transformers' `Seq2SeqTrainer` for encoder-decoders, both
scoring generations at each evaluation (`validation`), and `DivergenceCheck`, which stops either
at a loss that is no longer a number.

Apart from `train` because it is what the trainer is, not what a run does with it: a bench builds
one on its own (bench/bench_train.py).
"""

from __future__ import annotations

import math

from peft import get_peft_model
from transformers import DataCollatorForSeq2Seq, Seq2SeqTrainer, TrainerCallback
from trl import SFTTrainer, get_peft_config

from meditod_hub.models import trl_patch
from meditod_hub.models.encoding import Encoded
from meditod_hub.models.recipes import Recipe
from meditod_hub.models.validation import GenerationEvalMixin, ValidationScorer


class MeditodSFTTrainer(GenerationEvalMixin, SFTTrainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        with trl_patch.labelled_positions_only(self.accelerator.device):
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


class DivergenceCheck(TrainerCallback):
    """Stops the run at a logged training loss that is NaN or infinite: the weights are broken
    from there on, and going on would save (and let `publish` share) a broken model. The trainer
    is stopped without saving or evaluating (not interrupted, so its progress bar ends its line);
    `train.run` then raises `failure`. `train.run` also turns the trainer's
    `logging_nan_inf_filter` off, which would hide such a loss."""

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
