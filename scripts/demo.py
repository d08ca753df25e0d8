"""`make demo`: the whole MediTOD pipeline on synthetic data, on CPU, offline, in one interpreter.

    .venv/bin/python scripts/demo.py [--profile full|smoke] [--precision auto|float32|bf16]
                                     [--verbose]

1. build data/sample (10 invented dialogues, MediTOD's release format) into out/demo/meditod:
   the release checks and the Hub-ready folder
2. a realistic synthetic corpus (DIALOGUES invented dialogues: varied phrasings, denials, several
   slots a turn) built into out/demo/realistic
3. the real model: SmolLM2-135M-Instruct converted offline (`meditod pretrained`, once, into
   build/pretrained), one LoRA run per task on the realistic corpus (STEPS: more updates of 4
   examples learn more than fewer of 8 in the same CPU time); the NLU run predicted and evaluated
   on the corpus's unseen test dialogue
4. each run on the kit's held-out material, invented for these checks and never trained on:
   NLU's state accuracy on patient lines (`meditod eval-state`), POL's acceptable next actions on
   interview moments (`eval-policy`), NLG's slot errors on action sets (`eval-nlg`), and the
   assistant through a scripted patient conversation, each turn marked right or wrong
   (`eval-conversations`)
5. the assistant on the three runs (as `make chat` loads them), fed patient lines; the check
   (scripts/demo_check.py) fails the demo when the state accuracy is below its floor, an NLU
   answer does not parse, a reply that asks is not a question, or the tracked state is not
   exactly what the patient said; it prints the figures of 4 and the conversation's transcript
6. the NLU run's model card (no network), the summary, and what to run next

Each stage is a `meditod` command (or the corpus generator, or the check) called in this
process, so torch, transformers, peft and trl import once for the demo instead of once per
command (~6 s a command on 2 cores). One progress line per stage; a stage's own output goes to
out/demo/logs/<stage>.log (`--verbose`: also to the terminal), and its last lines are shown if it
fails. Everything goes under out/demo, which the demo replaces, except the converted real model
(build/pretrained/smollm2-135m, made once and reused). How long it takes, measured: the README.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]
DEMO = Path("out/demo")
REALISTIC = DEMO / "realistic"
LOGS = DEMO / "logs"
RUNS = DEMO / "runs/smollm2-135m"
# 16 dialogues keep the corpus's test split to one dialogue, which the NLU run predicts.
DIALOGUES = 16
# The training budget (bench/bench_curves.py measures the state accuracy along the steps):
# NLU gets most of it, as the assistant's state is NLU's (on a 60-dialogue corpus, bf16: 150
# steps 0.60 exact, 400 steps 0.83, on the dev lines); 260 steps of 4 see the corpus's 613 NLU
# rows about 1.7 times (grouped by length; the step count chosen on the dev lines: bf16 0.731
# exact, float32 0.615; 245 steps: 0.654; 185: 0.635). On the test lines, which chose nothing:
# scripts/demo_check.py. POL's 2 steps only teach it the answer format the assistant reads (its
# few steps learn no policy: bench/bench_real_model.py), NLG's 12 the shape of a doctor's
# question.
# The smoke profile (the suite's docs test: a minute or two) runs the same commands and the
# check's parsing and provenance checks at a step or a few of one example each, predicting the
# corpus's test dialogue and the first 4 held-out lines, moments and action sets with 16 new
# tokens a row, the conversation's first turn at 16 tokens a stage, and one patient line (a run
# of a few steps answers up to its whole token budget: each row costs seconds),
# without the floors: `make test` proves the pipeline runs; the full demo, after it in CI
# (.ci/run), proves it learns.
PROFILES = {
    "full": dict(steps={"nlu": 260, "pol": 2, "nlg": 12}, limit=[], budget=[], turns=[],
                 check=[], batch=[]),
    "smoke": dict(steps={"nlu": 3, "pol": 1, "nlg": 1}, limit=["--limit", "4"],
                  budget=["--max_new_tokens", "16"], turns=["--turns", "1"], check=["--smoke"],
                  batch=["--per_device_train_batch_size=1", "--gradient_accumulation_steps=1"]),
}
# The scripted conversation the demo prints, each turn marked right or wrong (`meditod
# eval-conversations --script`; the kit's five scripts: meditod_hub/evaluation/conversations.json).
CONVERSATION = "cough"
# auto: bf16 autocast where the CPU computes bf16 natively (AVX512-BF16, AMX): 2.8 s a step of 4
# NLU examples against 3.6 in float32 on 2 AMD EPYC cores (bench/bench_cpu_step.py); where it is
# emulated it is slower, so float32 there (and wherever /proc/cpuinfo is not). float32 forces
# float32 on a CPU with bf16 (what a CPU without it runs), bf16 forces bf16.
PRECISIONS = ("auto", "float32", "bf16")


def native_bf16() -> bool:
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return re.search(r"\b(avx512_bf16|amx_bf16)\b", flags) is not None


@contextlib.contextmanager
def output_to(log: Path, verbose: bool) -> Iterator[None]:
    """Everything written to file descriptors 1 and 2 meanwhile (Python's, the libraries' and
    C code's alike) into `log`, and to the terminal too when `verbose`."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    read_end, write_end = os.pipe()
    copier = threading.Thread(target=_copy, args=(read_end, log, saved[1] if verbose else None))
    copier.start()
    os.dup2(write_end, 1)
    os.dup2(write_end, 2)
    os.close(write_end)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)  # the pipe's last writer closed: the copier reads its end
        copier.join()
        for fd in saved:
            os.close(fd)


def _copy(read_end: int, log: Path, terminal: int | None) -> None:
    with open(log, "wb") as out, os.fdopen(read_end, "rb", buffering=0) as pipe:
        while chunk := pipe.read(65536):
            out.write(chunk)
            if terminal is not None:
                os.write(terminal, chunk)


def stage(name: str, run: Callable[[list[str]], int], argv: list[str], verbose: bool) -> None:
    """One step, one line of progress; its output in logs/<name>.log. A failure ends the demo
    with the log's last lines."""
    print(f"{'[' + time.strftime('%H:%M:%S') + '] ' + name:<44}", end="\n" if verbose else "",
          file=sys.stderr, flush=True)
    begun = time.monotonic()
    log = LOGS / f"{name}.log"
    with output_to(log, verbose):
        try:
            code = run(argv)
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else 1
    if code:
        tail = log.read_text(encoding="utf-8", errors="replace").splitlines()[-20:]
        sys.exit(" FAILED; the end of " + str(log) + ":\n" + "\n".join(tail))
    print(f" {time.monotonic() - begun:.0f} s", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", choices=PROFILES, default="full",
                        help="full (the quality floors) or smoke (a few steps: that it runs)")
    parser.add_argument("--precision", choices=PRECISIONS, default="auto",
                        help="auto: bf16 where the CPU computes it natively, else float32")
    parser.add_argument("--verbose", action="store_true", help="every command's own output too")
    args = parser.parse_args(argv)
    profile = PROFILES[args.profile]
    bf16 = args.precision == "bf16" or (args.precision == "auto" and native_bf16())
    os.chdir(ROOT)

    from demo_check import main as check

    from meditod_hub.cli import main as meditod
    from meditod_hub.commands.synthetic import main as synthetic
    from meditod_hub.errors import run_main

    started = time.monotonic()
    shutil.rmtree(DEMO, ignore_errors=True)  # the demo's own folder, from an earlier demo
    LOGS.mkdir(parents=True)
    print(f"MediTOD pipeline demo on synthetic data (no MediTOD text), CPU only; logs in {LOGS}",
          file=sys.stderr)

    def step(name: str, *words: str | Path, run: Callable[[list[str]], int] = meditod) -> None:
        stage(name, run, [str(w) for w in words], args.verbose)

    step("build-sample", "build", "--source", "data/sample", "--out", DEMO / "meditod")
    step("realistic-corpus", "--out", DEMO / "realistic-release", "--dialogues", DIALOGUES,
         "--style", "realistic", run=lambda words: run_main(synthetic, words))
    step("realistic-build", "build", "--source", DEMO / "realistic-release", "--out", REALISTIC)
    step("smollm2-convert", "pretrained")
    for task, steps in profile["steps"].items():
        # NLU's batches are grouped by length (18% fewer padded tokens than batches drawn at
        # random, for the same accuracy: bench/bench_curves.py); POL's and NLG's few steps
        # draw theirs at random: grouped, a short run's first batches would be the corpus's
        # longest (POL's whole-dialogue states), at several times the cost of a mean one
        sampling = "group_by_length" if task == "nlu" else "random"
        step(f"smollm2-{task}-train", "train", f"recipes/smollm2-135m/{task}.yaml",
             f"--dataset_name={REALISTIC}", f"--max_steps={steps}",
             f"--train_sampling_strategy={sampling}", f"--bf16={str(bf16).lower()}",
             *profile["batch"], f"--output_dir={RUNS / task}")
    nlu = RUNS / "nlu"
    step("smollm2-nlu-predict", "predict", "--model_path", nlu, "--task", "nlu", "--split",
         "test", "--batch_size", "32", "--out", nlu / "eval/test", *profile["budget"])
    step("smollm2-nlu-evaluate", "evaluate", "--task", "nlu", "--split", "test", "--predictions",
         nlu / "eval/test/predictions.jsonl")
    step("smollm2-nlu-eval-state", "eval-state", "--nlu", nlu, *profile["limit"],
         *profile["budget"])
    step("smollm2-pol-eval-policy", "eval-policy", "--pol", RUNS / "pol", *profile["limit"],
         *profile["budget"])
    step("smollm2-nlg-eval-nlg", "eval-nlg", "--nlg", RUNS / "nlg", *profile["limit"],
         *profile["budget"])
    step("assistant-conversation", "eval-conversations",
         *(word for task in ("nlu", "pol", "nlg") for word in (f"--{task}", RUNS / task)),
         "--script", CONVERSATION, *profile["turns"], *profile["budget"])
    step("assistant-check", "--demo", DEMO, *profile["check"], run=check)
    step("model-card", "publish", "--run", nlu, "--repo", "local/meditod-demo-smollm2-nlu",
         "--dry_run", "--card_dir", DEMO / "model-card")
    if not args.verbose:
        print((LOGS / "assistant-check.log").read_text(encoding="utf-8"), end="")
    took = round(time.monotonic() - started)
    print(f"The demo took {took // 60} min {took % 60} s.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
