"""The assistant on CPU: turn latency, and cascaded evaluation against three predict calls.

    make tiny-runs                                            # runs/tiny-llama/{nlu,pol,nlg}
    .venv/bin/python bench/bench_assistant.py                 # paper-scale synthetic test split
    .venv/bin/python bench/bench_assistant.py --dialogues 60  # a quicker look

1. Turn latency: the embedded sample's training dialogues replayed through `Assistant.respond`
   (patient lines one at a time, as in a chat): median and p95 seconds per turn and each
   module's share of the time.
2. Cascaded generation on the test split of the paper-scale synthetic corpus
   (`meditod_hub.data.synthetic`): NLU -> POL -> NLG as three `meditod predict` runs one after
   another (each loads its model, reads the split, writes its predictions; POL and NLG with
   `--upstream`, as `make predict` would), against `models.cascade.cascade` (one process, every
   module batched across all dialogues and turns), and against a turn-synchronous schedule
   (turn t of every dialogue in one batch per module). Outputs are checked equal; the same
   `--max_new_tokens` budget applies to all (the tiny runs never saw synthetic text, so they
   would otherwise run to the recipe's 256 tokens on every row). The full `eval-cascade`
   (gold-input columns and scoring too) is timed after them.
Seconds depend on the machine and its load; the same-run ratios are the figures to compare.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
from datasets import disable_progress_bars, load_dataset

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from meditod_hub.apps.assistant import Assistant  # noqa: E402
from meditod_hub.commands import predict  # noqa: E402
from meditod_hub.data.build import BuildArguments, build  # noqa: E402
from meditod_hub.data.synthetic import PAPER_DIALOGUES, generate_release  # noqa: E402
from meditod_hub.data.views import cascade_nlg_rows, cascade_pol_rows  # noqa: E402
from meditod_hub.evaluation.eval_cascade import EvalCascadeArguments, evaluate_cascade, load_split  # noqa: E402
from meditod_hub.models.cascade import cascade, pipeline_arguments, stages  # noqa: E402
from meditod_hub.models.predictor import DecodeOptions, ModelSpec  # noqa: E402

PROJECT = Path(__file__).resolve().parent.parent
TASKS = ("nlu", "pol", "nlg")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def turn_latency(runs: Path, sample: Path, replays: int) -> None:
    assistant = Assistant.load({t: ModelSpec(str(runs / t)) for t in TASKS})
    rows = list(load_dataset(str(sample), "nlu", split="train"))
    dialogues: dict[str, list[str]] = {}
    for row in rows:
        dialogues.setdefault(row["dialogue_id"], []).append(row["patient_text"])
    turns, per_module = [], {t: 0.0 for t in TASKS}
    assistant.respond(assistant.new_conversation(), "warm-up")
    for _ in range(replays):
        for did, lines in dialogues.items():
            conversation = assistant.new_conversation(did)
            for line in lines:
                start = time.perf_counter()
                turn = assistant.respond(conversation, line)
                turns.append(time.perf_counter() - start)
                for task in TASKS:
                    per_module[task] += getattr(turn, task).seconds
    total = sum(turns)
    shares = ", ".join(f"{t.upper()} {per_module[t] / total:.0%}" for t in TASKS)
    print(f"1. turn latency ({len(turns)} turns of {len(dialogues)} replayed dialogues x "
          f"{replays}, tiny runs, {torch.get_num_threads()} threads): median "
          f"{statistics.median(turns) * 1000:.0f} ms, p95 {percentile(turns, 0.95) * 1000:.0f} ms; "
          f"share of the turn: {shares}; outside the models (rows, state fold): "
          f"{1 - sum(per_module.values()) / total:.1%}")


def three_predict_calls(runs: Path, data: Path, out: Path, max_new_tokens: int) -> dict:
    previous = None
    for task in TASKS:
        argv = ["--model_path", str(runs / task), "--task", task, "--data", str(data), "--split",
                "test", "--out", str(out / f"{task}.jsonl"), "--max_new_tokens",
                str(max_new_tokens)]
        predict.main(argv + (["--upstream", str(previous)] if previous else []))
        previous = out / f"{task}.jsonl"
    return {t: [json.loads(line)["raw"] for line in (out / f"{t}.jsonl").read_text().splitlines()]
            for t in TASKS}


def turn_synchronous(assistant: Assistant, rows: dict) -> dict:
    """Turn t of every dialogue in one batch per module (alternating dialogues: POL turn t
    needs NLU turns <= t only)."""
    labels, raws = {}, {t: {} for t in TASKS}
    for t in range(max(r["turn"] for r in rows["nlu"]) + 1):
        nlu = [r for r in rows["nlu"] if r["turn"] == t]
        records, _ = assistant.run_stage("nlu", nlu)
        labels.update({r.id: r.label for r in records})
        raws["nlu"].update({r.id: r.raw for r in records})
        pol = cascade_pol_rows([r for r in rows["pol"] if r["turn"] == t], labels)
        records, _ = assistant.run_stage("pol", pol)
        raws["pol"].update({r.id: r.raw for r in records})
        actions = {r.id: r.label for r in records}
        nlg = cascade_nlg_rows([r for r in rows["nlg"] if r["turn"] == t], actions)
        records, _ = assistant.run_stage("nlg", nlg)
        raws["nlg"].update({r.id: r.raw for r in records})
    return {t: [raws[t][r["id"]] for r in rows[t]] for t in TASKS}


def timed(function, *args):
    start = time.perf_counter()
    result = function(*args)
    return time.perf_counter() - start, result


def cascaded_evaluation(runs: Path, dialogues: int, max_new_tokens: int, batch: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-assistant-") as tmp:
        tmp = Path(tmp)
        generate_release(tmp / "release", seed=0, dialogues=dialogues)
        build(BuildArguments(source=tmp / "release", out=tmp / "meditod"))
        rows = load_split(str(tmp / "meditod"), "test")
        counts = ", ".join(f"{len(rows[t])} {t}" for t in TASKS)
        print(f"2. cascaded generation, synthetic test split ({dialogues} dialogues in all; "
              f"{counts} rows), max_new_tokens {max_new_tokens}, batch {batch}:")

        predict_s, predicted = timed(three_predict_calls, runs, tmp / "meditod", tmp / "predict",
                                     max_new_tokens)

        def one_process():
            decode = DecodeOptions(batch, max_new_tokens=max_new_tokens)
            assistant = Assistant.load({t: ModelSpec(str(runs / t), decode=decode) for t in TASKS})
            run = cascade(assistant, rows, gold_inputs=False)
            return assistant, {t: [r.raw for r in run[t].cascaded]
                               for t in TASKS}

        cascade_s, (assistant, cascaded) = timed(one_process)
        sync_s, synchronous = timed(turn_synchronous, assistant, rows)
        assert cascaded == predicted == synchronous, "the three schedules must agree"
        print(f"   three predict calls one after another: {predict_s:.1f} s")
        print(f"   models.cascade.cascade, one process:   {cascade_s:.1f} s "
              f"({predict_s / cascade_s:.2f}x the predict calls' speed)")
        print(f"   turn-synchronous batches (models loaded): {sync_s:.1f} s "
              f"({predict_s / sync_s:.2f}x)")
        pipeline = pipeline_arguments(stages())(*(str(runs / t) for t in TASKS),
                                                max_new_tokens=max_new_tokens, batch_size=batch)
        args = EvalCascadeArguments(data=str(tmp / "meditod"), split="test", out=str(tmp / "out"))
        full_s, results = timed(evaluate_cascade, pipeline, args)
        print(f"   full eval-cascade (+ gold-input columns, scoring, reports): {full_s:.1f} s; "
              f"stage seconds {json.dumps({k: round(v, 1) for k, v in results['seconds'].items()})}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=Path, default=PROJECT / "runs" / "tiny-llama",
                        help="folder with nlu/, pol/, nlg/ runs (make tiny-runs)")
    parser.add_argument("--dialogues", type=int, default=PAPER_DIALOGUES)
    parser.add_argument("--replays", type=int, default=3)
    parser.add_argument("--max_new_tokens", type=int, default=32)
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--quick", action="store_true",
                        help="a small run that checks the bench works (CI); its figures mean nothing")
    args = parser.parse_args(argv)
    if args.quick:
        args.dialogues, args.replays, args.max_new_tokens = 4, 1, 8
    missing = [t for t in TASKS if not (args.runs / t / "run_info.json").is_file()]
    if missing:
        sys.exit(f"no trained runs under {args.runs} ({', '.join(missing)}): run `make tiny-runs`")
    disable_progress_bars()
    with tempfile.TemporaryDirectory(prefix="bench-sample-") as tmp:
        sample = Path(tmp) / "meditod"
        build(BuildArguments(source=PROJECT / "data" / "sample", out=sample))
        turn_latency(args.runs, sample, args.replays)
    cascaded_evaluation(args.runs, args.dialogues, args.max_new_tokens, args.batch_size)


if __name__ == "__main__":
    main()
