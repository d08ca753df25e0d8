"""Seconds a CPU training step of SmolLM2-135M-Instruct's recipes (`recipes/smollm2-135m`, the
demo's runs): TRL's fused LM head scoring every position, as TRL 1.16 does off CUDA, against the
labelled positions only (`trl_patch.labelled_positions_only`, what `meditod train` does on CPU). Both
arms train the same batches from the same start, in interleaved repetitions (every position,
labelled only, every position, ...); medians are reported with the spread, and whether their
logged losses agree.

    .venv/bin/python bench/bench_cpu_step.py                  # NLU, 24 steps, 3 repetitions an arm
    .venv/bin/python bench/bench_cpu_step.py --bf16           # as make demo trains on bf16 CPUs
    .venv/bin/python bench/bench_cpu_step.py --task pol --steps 4 --repeats 1
    .venv/bin/python bench/bench_cpu_step.py --quick          # it runs (tiny stand-in, 2 steps, 1 each)

Data: the realistic synthetic corpus (`--dialogues` invented dialogues, not MediTOD), batches of 4
drawn at random (seed 42). Measured on 2 idle AMD EPYC cores (2026-12-06), the commands above
(NLG `--task nlg --steps 12 --repeats 1`); the logged losses agreed in every row:

| recipe | precision | steps x repeats | every position s/step | labelled only s/step | ratio |
|---|---|---:|---:|---:|---:|
| NLU | bf16 autocast | 24 x 2 | 4.01 | 2.82 | 1.42x |
| NLU | float32 | 24 x 1 | 4.77 | 3.64 | 1.31x |
| POL | float32 | 4 x 1 | 21.61 | 15.12 | 1.43x |
| NLG | float32 | 12 x 1 | 4.11 | 2.60 | 1.58x |
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
from pathlib import Path

from bench_curves import realistic_corpus  # the same corpus and base as the curves'
from kit import base_model

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ARMS = ("every position", "labelled only")


def one_run(arm: str, task: str, base: Path, data: Path, out: Path, steps: int,
            bf16: bool) -> tuple[float, list]:
    """Train `steps` steps in this process; (seconds a step, the logged losses)."""
    from meditod_hub.commands.train import parse_recipe
    from meditod_hub.models import train as T
    from meditod_hub.models import trl_patch

    recipe = parse_recipe([f"recipes/smollm2-135m/{task}.yaml", f"--model_name_or_path={base}",
                           f"--dataset_name={data}",
                           f"--max_steps={steps}", "--train_sampling_strategy=random",
                           f"--bf16={str(bf16).lower()}", "--logging_steps=1",
                           "--disable_tqdm=true", f"--output_dir={out}"])
    original = trl_patch.labelled_positions_only
    if arm == "every position":  # TRL's own choice off CUDA
        trl_patch.labelled_positions_only = lambda device: contextlib.nullcontext()
    try:
        info = T.run(recipe)
    finally:
        trl_patch.labelled_positions_only = original
    state = json.loads((out / "checkpoints" / "trainer_state.json").read_text())
    return info["train_runtime_s"] / steps, [e["loss"] for e in state["log_history"]
                                             if "loss" in e]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=("nlu", "pol", "nlg"), default="nlu")
    parser.add_argument("--steps", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dialogues", type=int, default=16, help="the realistic corpus' size")
    parser.add_argument("--bf16", action="store_true", help="bf16 autocast")
    parser.add_argument("--quick", action="store_true",
                        help="a tiny stand-in base, 2 steps, 1 repetition an arm")
    args = parser.parse_args()
    if args.quick:
        args.steps, args.repeats, args.dialogues = 2, 1, 12
    import torch
    from datasets import disable_progress_bars
    from transformers.utils import logging as hf_logging

    disable_progress_bars()
    hf_logging.set_verbosity_error()
    seconds = {arm: [] for arm in ARMS}
    losses = {}
    base, named = base_model(args.quick)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        data = realistic_corpus(work, args.dialogues)
        for repeat in range(args.repeats):
            for arm in ARMS:
                per_step, losses[arm] = one_run(arm, args.task, base, data,
                                                work / f"run-{repeat}-{arm[:5]}", args.steps,
                                                args.bf16)
                seconds[arm].append(per_step)
    median = {arm: statistics.median(s) for arm, s in seconds.items()}
    same = all(abs(a - b) <= 1e-3 * max(1.0, abs(a))
               for a, b in zip(*losses.values(), strict=True))
    print(f"{named} {args.task.upper()} LoRA (recipes/smollm2-135m/{args.task}.yaml, "
          "batches of 4 at random"
          f"{', bf16 autocast' if args.bf16 else ', float32'}), {args.steps} steps on a realistic "
          f"synthetic corpus ({args.dialogues} dialogues, invented; not MediTOD), "
          f"{torch.get_num_threads()} torch threads, medians of {args.repeats}:")
    print("| fused LM head scores | s / step | range |")
    print("|---|---:|---:|")
    for arm in ARMS:
        print(f"| {arm} | {median[arm]:.2f} | {min(seconds[arm]):.2f}-{max(seconds[arm]):.2f} |")
    print(f"labelled only is {median[ARMS[0]] / median[ARMS[1]]:.2f}x as fast; "
          f"logged losses {'agree' if same else 'DIFFER'} ({len(losses[ARMS[0]])} steps)")


if __name__ == "__main__":
    main()
