"""The three stages' learning curves: SmolLM2-135M-Instruct trained with a stage's recipe
(recipes/smollm2-135m/<task>.yaml, LoRA) for N steps on the realistic synthetic corpus, each point
a run of its own (the cosine schedule ends at N and examples are drawn at random, as the demo's
POL and NLG are), scored on that stage's held-out dev and test sets beside the untrained model
under the same decoding (0 steps: the baseline of the ratio column):

- NLU: `meditod eval-state`, the exact state of the kit's held-out patient lines;
- POL: `meditod eval-policy`, acceptable next actions on the held-out interview moments;
- NLG: `meditod eval-nlg`, the slot error rate on the held-out action sets.

    .venv/bin/python bench/bench_curves.py                         # every stage, its default steps
    .venv/bin/python bench/bench_curves.py --tasks nlu --steps 0 80 150 250 400 --dialogues 60 --bf16
    .venv/bin/python bench/bench_curves.py --tasks pol nlg --steps 0 10 40
    .venv/bin/python bench/bench_curves.py --quick                 # it runs (tiny stand-in, 1 step, 2 items)

`dev` chooses (the demo's NLU step count was chosen on it); `test` chose nothing.

POL and NLG, measured on 2 AMD EPYC cores (2026-12-08, bf16, the demo's 16-dialogue corpus;
`.venv/bin/python bench/bench_curves.py --tasks pol nlg --steps 20 40 --bf16`, 25 minutes), beside
the demo's own runs (POL 2 steps, NLG 12: the `make demo` of the same day, then `meditod
eval-policy --set dev` and `eval-nlg --set dev` on them):

| stage | steps | train min | dev | test | also (test) |
|---|---:|---:|---:|---:|---|
| POL acceptable | 2 (demo) | 0.5 | 0.000 | 0.000 | inquire 0.000 (dev; chit-chat), repeats 0.028 |
| POL acceptable | 20 | 3.3 | 0.056 | 0.125 | inquire 1.000, repeats 0.444 |
| POL acceptable | 40 | 6.5 | 0.194 | 0.139 | inquire 1.000, repeats 0.167 |
| NLG slot error rate | 12 (demo) | 0.5 | 0.511 | 0.444 | questions 1.000 (dev) |
| NLG slot error rate | 20 | 0.8 | 0.467 | 0.309 | questions 0.984 |
| NLG slot error rate | 40 | 1.7 | 0.444 | 0.346 | questions 0.984 |

Read: a POL step costs ~10 s (whole-dialogue states: several times an NLU step's tokens); 20
steps already turn the doctor from chit-chat to asking, and on dev 40 steps choose acceptable
actions 3.5 times as often as 20, still far from the 0.70 issue 45 asks; on dev NLG's slot error
rate falls with the steps (0.511, 0.467, 0.444). The demo keeps 2 POL and
12 NLG steps for its minutes; a cheaper POL example (the state and the last exchange instead of
the whole history) is the lever to measure next.

NLU, measured:

The figures below were measured before the test set existed, on the 52 lines that are now the
dev set (`--set dev`), which the demo's step count was chosen on.

Measured on 2 AMD EPYC cores (2026-12-06), with the bench's own two commands per point (`meditod
train recipes/smollm2-135m/nlu.yaml --dataset_name=<60-dialogue realistic build> --max_steps=N
--train_sampling_strategy=random --bf16=true`, then `meditod eval-state --nlu <run>`):

| steps | train min | exact state | slots P / R | attributes P / R | denials |
|---:|---:|---:|---:|---:|---:|
| 150 | 11.2 | 0.596 | 0.836 / 0.793 | 0.583 / 0.467 | 0.833 |
| 400 | 47.3 (shared cores) | 0.827 | 0.927 / 0.879 | 0.852 / 0.767 | 0.889 |

Within the demo's budget (~11 minutes of NLU training on 2 cores, the demo's 16-dialogue corpus,
bf16), the recipe's other levers were measured against its 140 steps drawn at random (0.596):
each as `meditod train recipes/smollm2-135m/nlu.yaml --dataset_name=<16-dialogue build>
--bf16=true` with the flags below, then `meditod eval-state` (2026-12-06, 2 AMD EPYC cores):

| flags | train s | exact state |
|---|---:|---:|
| `--max_steps=140 --train_sampling_strategy=random --learning_rate=3e-3` | 652 | 0.577 |
| `--max_steps=170 --train_sampling_strategy=group_by_length` | 660 | 0.596 |
| `--max_steps=340 --train_sampling_strategy=group_by_length --per_device_train_batch_size=2` | 645 | 0.596 |

`time make demo` (the NLU run's batches grouped by length, the rest as the demo has it): 140 NLU
steps, 408 s of NLU training, 0.538 exact, the demo 10 min 29 s; 185 steps, 603 s, 0.635 exact,
the demo 14 min 4 s; 200 steps, 678 s, 0.635, the demo 15 min 3 s.

Grouping by length computes 18% fewer padded tokens (NLU examples: mean 161 tokens, 123-213 for
the middle 80%), so 170 steps fit where 140 random ones did, and learn no more: within the same
minutes every variant stays at 30-31 of 52 lines (one line is 0.019).

What bought the steps 0.70 needs: TRL's fused LM head scored every position of a batch on CPU,
the prompt's too, which carries no label (`trl_patch.labelled_positions_only`; the same losses,
bench/bench_cpu_step.py). Scoring the labelled positions only, `time make demo` (grouped):
245 steps, 630 s of NLU training, 0.654 exact (34 of 52), the demo 13 min 49 s; 260 steps, 691 s,
0.731 exact (38 of 52), the demo 14 min 59 s; the same 260 with POL's 4 steps cut to 2 (what make
demo trains now), 628 s, 0.731, the demo 13 min 40 s (the same NLU run: the machine's step time
varied by 10% between the two). Between 185 and 260 steps the curve is steep and uneven: a few
lines come and go from one length to the next.

Every command is the kit's own (`meditod synthetic`, `build`, `train`, `eval-state`), in its own
process; the corpus is the demo's (scripts/demo.py's DIALOGUES). Figures are about the
invented held-out lines only: not MediTOD's, nor comparable with the paper's.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

from kit import base_model, meditod, synthetic


@dataclass(frozen=True)
class Check:
    """A stage's held-out check: its command, its results file, what it counts and its columns
    (the first is the headline, whose ratio to 0 steps is printed)."""

    command: str
    results: str
    items: str
    columns: tuple[str, ...]


CHECKS = {
    "nlu": Check("eval-state", "state_accuracy.json", "lines",
                 ("exact_state_accuracy", "slots_precision", "slots_recall",
                  "attributes_precision", "attributes_recall", "denial_accuracy")),
    "pol": Check("eval-policy", "policy_accuracy.json", "moments",
                 ("acceptable_rate", "inquire_rate", "repeat_rate", "parse_failures")),
    "nlg": Check("eval-nlg", "nlg_accuracy.json", "items",
                 ("slot_error_rate", "all_said_rate", "question_rate", "parse_failures")),
}
DEFAULT_STEPS = {"nlu": [0, 80, 150, 250, 400], "pol": [0, 10, 40, 80], "nlg": [0, 12, 40, 80]}


def realistic_corpus(work: Path, dialogues: int) -> Path:
    """A realistic synthetic corpus built under `work`."""
    synthetic("--out", work / "release", "--dialogues", dialogues, "--style", "realistic")
    meditod("build", "--source", work / "release", "--out", work / "realistic")
    return work / "realistic"


def point(base: Path, steps: int, data: Path, work: Path, limit: list[str], bf16: bool,
          sets: tuple[str, ...] = ("dev",), flags: tuple[str, ...] = (
              "--train_sampling_strategy=random",), task: str = "nlu"
          ) -> tuple[float, dict[str, dict]]:
    """Train `base` for `steps` of `task`'s recipe (none: the base itself) with `flags` and score
    it on each held-out set of the task's check; (training minutes, set -> results)."""
    check = CHECKS[task]
    model, family, minutes = base, ["--family", "chat"], 0.0
    name = "-".join([task, str(steps), *(f.strip("-").replace("=", "") for f in flags)])
    if steps:
        model, family = work / f"{name}-{'bf16' if bf16 else 'fp32'}", []
        minutes = meditod("train", f"recipes/smollm2-135m/{task}.yaml",
                          f"--model_name_or_path={base}", f"--dataset_name={data}",
                          f"--max_steps={steps}", *flags, f"--bf16={str(bf16).lower()}",
                          f"--output_dir={model}") / 60
    scores = {}
    for held_out in sets:
        out = work / f"{check.command}-{model.name}-{held_out}"
        meditod(check.command, f"--{task}", model, "--set", held_out, "--out", out, *family,
                *limit)
        scores[held_out] = json.loads((out / check.results).read_text())
    return minutes, scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", choices=tuple(CHECKS), default=list(CHECKS))
    parser.add_argument("--steps", type=int, nargs="+",
                        help="the points (default: each task's, DEFAULT_STEPS)")
    parser.add_argument("--bf16", action="store_true",
                        help="bf16 autocast (what make demo uses where the CPU has native bf16)")
    parser.add_argument("--dialogues", type=int, default=16, help="the realistic corpus' size")
    parser.add_argument("--sets", nargs="+", choices=("dev", "test"), default=["dev", "test"],
                        help="the held-out sets scored (dev chooses, test reports)")
    parser.add_argument("--quick", action="store_true",
                        help="0 and 1 step on 12 dialogues, the first 2 items of each set")
    args = parser.parse_args()
    limit = ["--limit", "2"] if args.quick else []
    if args.quick:
        args.dialogues, args.steps = 12, [0, 1]
    base, named = base_model(args.quick)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        data = realistic_corpus(work, args.dialogues)
        curves = {task: [(n, *point(base, n, data, work, limit, args.bf16, tuple(args.sets),
                                    task=task))
                         for n in sorted(set(args.steps or DEFAULT_STEPS[task]))]
                  for task in args.tasks}
    print(f"{named}, LoRA (recipes/smollm2-135m/<task>.yaml"
          f"{', bf16 autocast' if args.bf16 else ''}) trained on a realistic synthetic corpus "
          f"({args.dialogues} dialogues, invented), scored on the kit's held-out material "
          "(invented; not MediTOD), NLU and POL under the CMAS grammar:")
    for task, points in curves.items():
        check = CHECKS[task]
        headline = check.columns[0]
        print(f"\n{task.upper()} (`meditod {check.command}`):")
        print("| set | steps | train min | " + " | ".join(check.columns)
              + f" | {headline} vs {points[0][0]} steps |")
        print("|---|---:|---:|" + "---:|" * (len(check.columns) + 1))
        for held_out in args.sets:
            baseline = points[0][2][held_out][headline]
            for n, minutes, scores in points:
                results = scores[held_out]
                ratio = results[headline] / baseline if baseline else float("nan")
                print(f"| {held_out} ({results[check.items]} {check.items}) | {n} | "
                      f"{minutes:.1f} | " + " | ".join(_shown(results[c]) for c in check.columns)
                      + f" | {ratio:.2f}x |")


def _shown(value) -> str:
    return str(value) if isinstance(value, int) else f"{value:.3f}"


if __name__ == "__main__":
    main()
