"""Batching and generation throughput of the recipe paths on the paper-scale synthetic corpus.

    .venv/bin/python bench/bench_train.py                   # 233 dialogues (paper Table 3)
    .venv/bin/python bench/bench_train.py --dialogues 40    # a quicker look

Examples are the Llama chat format (`recipes/llama3-8b/<task>.yaml`: its budgets, per-device
batch 8, accumulation 2) of the train split of `meditod_hub.data.synthetic`, tokenised by a tiny
Llama tokenizer trained here; batches come from the real trainer (TRL SFTTrainer's sampler and collator).

1. Real-token share per batch over one epoch: the recipe's batching (`group_by_length`; on CUDA
   with FlashAttention it is padding-free, 100% by construction) vs plain padding (random
   order), same run. Target: >= 98% on the recipe path.
2. CPU training throughput, real tokens/s, of the tiny Llama (all weights) with each batching:
   both arms train one epoch over the same examples (steps x 16 of them), in several
   interleaved repetitions (recipe, plain, recipe, plain, ...); medians are reported, with the
   spread, so a busy moment of a shared machine hits both arms alike.
3. Batched greedy generation at batch 16 vs a one-example loop over the same prompts (outputs
   are checked equal), as a ratio. Target: >= 8x.
Seconds depend on the machine and its load; the same-run ratios are the figures to compare.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
from datasets import disable_progress_bars
from transformers import PrinterCallback
from transformers.utils import logging as hf_logging

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from meditod_hub.commands import train as train_cmd  # noqa: E402
from meditod_hub.data.synthetic import PAPER_DIALOGUES, generate_dialogues, split_ids  # noqa: E402
from meditod_hub.data.tasks import (
    TASKS,  # noqa: E402
    view_rows,  # noqa: E402
)
from meditod_hub.models import tiny  # noqa: E402
from meditod_hub.models import train as T  # noqa: E402
from meditod_hub.models.encoding import encode  # noqa: E402
from meditod_hub.models.families import FAMILIES, Budget  # noqa: E402
from meditod_hub.models.predictor import generate_texts  # noqa: E402
from meditod_hub.models.trainers import make_trainer  # noqa: E402

RECIPES = Path(__file__).resolve().parent.parent / "recipes" / "llama3-8b"
TASK_ROWS = {"nlu": "nlu", "pol": "pol", "nlg": "nlg"}
SHARE_TARGET, GENERATION_TARGET = 0.98, 8.0
CPU_RECIPE = ["--load_in_4bit=false", "--use_peft=false", "--dtype=float32", "--bf16=false",
              "--activation_checkpointing=false", "--attn_implementation=sdpa",
              "--padding_free=false", "--optim=adamw_torch", "--learning_rate=1e-3",
              "--report_to=none", "--save_strategy=no", "--eval_strategy=no",
              "--disable_tqdm=true"]


def train_rows(seed: int, dialogues: int) -> dict[str, list[dict]]:
    corpus = generate_dialogues(seed, dialogues)
    ids = split_ids(dialogues)["train"]
    return {task: [r for d in ids for r in view_rows(config, d, corpus[d])]
            for task, config in TASK_ROWS.items()}


def trainer_for(task: str, model_dir: Path, rows: list[dict], out: Path, sampling: str):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    recipe = train_cmd.parse_recipe([str(RECIPES / f"{task}.yaml"), f"--model_name_or_path={model_dir}",
                                     f"--output_dir={out}", f"--train_sampling_strategy={sampling}",
                                     "--num_train_epochs=1", "--logging_steps=1000", *CPU_RECIPE])
    T.apply_effective_batch(recipe)  # 8 per device x 2 accumulation, as on one GPU
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    encoded = encode(FAMILIES["chat"], TASKS[task], rows, tokenizer, recipe.budget)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    trainer = make_trainer(recipe, model, tokenizer, encoded, None, None)
    trainer.remove_callback(PrinterCallback)  # the figures are printed once, below
    return trainer


def real_token_share(trainer) -> tuple[float, int]:
    real = total = 0
    for batch in trainer.get_train_dataloader():
        real += int(batch["attention_mask"].sum())
        total += batch["attention_mask"].numel()
    return real / total, real


def tokens_per_second(trainer) -> float:
    result = trainer.train()
    tokens = [e["num_tokens"] for e in trainer.state.log_history if "num_tokens" in e][-1]
    return tokens / result.metrics["train_runtime"]


def generation_ratio(model_dir: Path, rows: list[dict], n: int, new_tokens: int):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    llama = FAMILIES["chat"]
    prompts = [llama.prompt(TASKS["nlu"], row, tokenizer, Budget(None, new_tokens)).input_ids
               for row in rows[:n]]
    stops = llama.stop_token_ids(tokenizer)
    timings, outputs = {}, {}
    for batch_size in (16, 1):
        start = time.perf_counter()
        outputs[batch_size] = generate_texts(model, tokenizer, prompts, new_tokens, stops,
                                             batch_size)
        timings[batch_size] = time.perf_counter() - start
    same = sum(a == b for a, b in zip(outputs[16], outputs[1]))
    return timings[1] / timings[16], timings, same


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dialogues", type=int, default=PAPER_DIALOGUES)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=20,
                        help="optimiser steps per timed run: both arms train on steps x 16 examples")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved runs per arm")
    parser.add_argument("--prompts", type=int, default=64, help="prompts for generation")
    parser.add_argument("--new_tokens", type=int, default=64)
    parser.add_argument("--quick", action="store_true",
                        help="a small run that checks the bench works (CI); its figures mean nothing")
    args = parser.parse_args(argv)
    if args.quick:
        args.dialogues, args.steps, args.repeats, args.prompts, args.new_tokens = 12, 2, 1, 4, 4
    torch.manual_seed(args.seed)
    disable_progress_bars()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()

    rows = train_rows(args.seed, args.dialogues)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        sample = {TASKS[task]: task_rows[:200] for task, task_rows in rows.items()}
        model_dir = tiny.build("tiny-llama", list(tiny.texts_of(sample)), tmp)
        print(f"synthetic corpus: {args.dialogues} dialogues, train rows "
              + ", ".join(f"{t} {len(r)}" for t, r in rows.items()) + "; per-device batch 8")
        print(f"| task | real-token share, recipe (group_by_length) | plain padding | "
              f"tokens/s recipe | tokens/s plain | speed-up, medians of {args.repeats} |")
        print("|---|---|---|---|---|---|")
        for task in rows:
            figures = []
            for sampling in ("group_by_length", "random"):
                share, _ = real_token_share(trainer_for(task, model_dir, rows[task],
                                                        tmp / "share", sampling))
                figures.append(share)
            same = rows[task][:args.steps * 16]  # both arms: exactly these examples, one epoch
            runs = {"group_by_length": [], "random": []}
            for _ in range(args.repeats):
                for sampling in runs:
                    runs[sampling].append(tokens_per_second(
                        trainer_for(task, model_dir, same, tmp / "speed", sampling)))
            speeds = [statistics.median(runs[s]) for s in runs]
            spread = " / ".join(f"{min(v):,.0f}-{max(v):,.0f}" for v in runs.values())
            verdict = "ok" if figures[0] >= SHARE_TARGET else f"BELOW {SHARE_TARGET:.0%}"
            print(f"| {task} | {figures[0]:.1%} ({verdict}) | {figures[1]:.1%} | "
                  f"{speeds[0]:,.0f} | {speeds[1]:,.0f} | {speeds[0] / speeds[1]:.2f}x "
                  f"(range {spread}) |")
        ratio, timings, same = generation_ratio(model_dir, rows["nlu"], args.prompts,
                                                args.new_tokens)
        verdict = "ok" if ratio >= GENERATION_TARGET else f"BELOW {GENERATION_TARGET:.0f}x"
        print(f"generation, {args.prompts} NLU prompts, up to {args.new_tokens} new tokens: "
              f"batch 16 {timings[16]:.1f} s, one at a time {timings[1]:.1f} s -> "
              f"{ratio:.1f}x ({verdict}); identical outputs {same}/{args.prompts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
