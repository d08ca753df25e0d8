"""The demo's NLU recipe across seeds and number formats: SmolLM2-135M-Instruct trained as `make
demo` trains it (recipes/smollm2-135m/nlu.yaml, the demo's steps, batches grouped by length, its
16-dialogue realistic corpus), once per seed and format, each run scored by `meditod eval-state`
on both held-out sets: mean and spread (min-max) of the exact state, never the best run. The
demo's floor (scripts/demo_check.py) sits below the lowest of these on the test set.

    .venv/bin/python bench/bench_seeds.py                         # seeds 1 2 3, float32 and bf16
    .venv/bin/python bench/bench_seeds.py --seeds 1 --formats float32
    .venv/bin/python bench/bench_seeds.py --quick                 # it runs (tiny stand-in, 0 steps, 2 lines)

A run is a few minutes per 100 steps on 2 cores (bench_cpu_step.py), so the whole grid is about
1.5 hours. `dev` chose the recipe and the step count; `test` chose nothing. The figures are
about the invented held-out lines only: not MediTOD's, nor comparable with the paper's.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from bench_curves import point, realistic_corpus
from kit import base_model

DEMO_NLU_STEPS = 260  # scripts/demo.py's full profile's NLU steps
DEMO_DIALOGUES = 16   # and its DIALOGUES


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--formats", nargs="+", choices=("float32", "bf16"),
                        default=["float32", "bf16"])
    parser.add_argument("--steps", type=int, default=DEMO_NLU_STEPS)
    parser.add_argument("--quick", action="store_true",
                        help="the base model (no training: bench_curves --quick trains the "
                             "same path), 1 seed, the first 2 lines: that the table is made")
    args = parser.parse_args()
    limit = []
    if args.quick:
        args.steps, args.seeds, args.formats, limit = 0, args.seeds[:1], args.formats[:1], \
            ["--limit", "2"]
    sets = ("dev", "test")
    base, named = base_model(args.quick)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        data = realistic_corpus(work, DEMO_DIALOGUES)
        runs = {(fmt, seed): point(base, args.steps, data, work, limit, fmt == "bf16", sets, (
            "--train_sampling_strategy=group_by_length", f"--seed={seed}"))
                for fmt in args.formats for seed in args.seeds}
    print(f"{named} NLU, the demo's recipe ({args.steps} LoRA steps, grouped by "
          f"length) on a realistic synthetic corpus ({DEMO_DIALOGUES} dialogues, invented), "
          "exact state on the kit's held-out patient lines (invented; not MediTOD):")
    print("| format | set | " + " | ".join(f"seed {s}" for s in args.seeds)
          + " | mean | min-max | train min (mean) |")
    print("|---|---|" + "---:|" * (len(args.seeds) + 3))
    for fmt in args.formats:
        for held_out in sets:
            exact = [runs[fmt, seed][1][held_out]["exact_state_accuracy"] for seed in args.seeds]
            minutes = statistics.mean(runs[fmt, seed][0] for seed in args.seeds)
            lines = runs[fmt, args.seeds[0]][1][held_out]["lines"]
            print(f"| {fmt} | {held_out} ({lines} lines) | "
                  + " | ".join(f"{x:.3f}" for x in exact)
                  + f" | {statistics.mean(exact):.3f} | {min(exact):.3f}-{max(exact):.3f} | "
                    f"{minutes:.1f} |")


if __name__ == "__main__":
    main()
