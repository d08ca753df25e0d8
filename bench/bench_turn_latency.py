"""A turn of the assistant on CPU, as `make chat` runs it: the kit's scripted conversations
(`meditod_hub/evaluation/conversations.json`: cough, fever, breathlessness, chest pain, knee
pain; 6-8 patient lines each) fed one line at a time to the demo's three SmolLM2 runs under the
CMAS grammar, one conversation after another.

    make demo                                             # out/demo/runs/smollm2-135m/{nlu,pol,nlg}
    .venv/bin/python bench/bench_turn_latency.py          # every script, float32 and int8 arms
    .venv/bin/python bench/bench_turn_latency.py --runs runs/tiny-llama --quick   # that it runs

Prints each arm's median and p90 seconds a turn, each stage's share of it (NLU, POL, NLG: three
generate calls on one shared base) and the tokens each stage generated a turn. The `int8` arm is
the lever measured, not a setting of the kit: the same runs with the base's linear layers
quantised to int8 after loading (`torch.ao.quantization.quantize_dynamic`): decoding a 135M model
on a CPU reads every weight per token, so it is bound by memory bandwidth, and int8 weights are a
quarter of float32's. It also counts the turns whose NLU or POL output differs from the float32
arm's: what the speed costs in answers. Seconds depend on the machine and its load; the ratio of
the two arms, measured in this process, is the figure to compare.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from bench_assistant import PROJECT, TASKS, percentile  # the tiny runs' turn latency, its sibling

from meditod_hub import quiet
from meditod_hub.apps.assistant import Assistant
from meditod_hub.evaluation.conversations import conversation_scripts
from meditod_hub.models.cascade import pipeline_arguments, stages


def quantise_int8(assistant: Assistant) -> int:
    """Every distinct model's frozen linear layers (a LoRA layer's base, the head) as int8
    dynamic-quantised ones; the adapters stay float32. How many layers it replaced."""
    import torch

    done, count = set(), 0
    for predictor in assistant.predictors.values():
        model = predictor.model
        if id(model) in done:
            continue
        done.add(id(model))
        names = {name: torch.ao.quantization.default_dynamic_qconfig
                 for name, module in model.named_modules()
                 if isinstance(module, torch.nn.Linear) and "lora_" not in name}
        torch.ao.quantization.quantize_dynamic(model, qconfig_spec=names, dtype=torch.qint8,
                                               inplace=True)
        count += len(names)
    return count


def run_arm(runs: Path, scripts: list[dict], int8: bool) -> dict:
    pipeline = pipeline_arguments(stages())(**{task: str(runs / task) for task in TASKS})
    assistant = Assistant.load(pipeline.specs(constrained=True))
    layers = quantise_int8(assistant) if int8 else 0
    assistant.respond(assistant.new_conversation(), "hello")  # warm-up: grammars, first calls
    turns, stage_seconds, tokens, outputs = [], {t: 0.0 for t in TASKS}, {t: 0 for t in TASKS}, []
    for script in scripts:
        conversation = assistant.new_conversation(f"script-{script['id']}", script["opening"])
        for line in script["turns"]:
            start = time.perf_counter()
            turn = assistant.respond(conversation, line["patient"])
            turns.append(time.perf_counter() - start)
            for task in TASKS:
                stage = getattr(turn, task)
                stage_seconds[task] += stage.seconds
                tokenizer = assistant.predictors[task].tokenizer
                tokens[task] += len(tokenizer(stage.raw or "")["input_ids"])
            outputs.append((turn.nlu.raw, turn.pol.raw))
    return {"turns": turns, "stages": stage_seconds, "tokens": tokens, "outputs": outputs,
            "layers": layers}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=Path, default=PROJECT / "out/demo/runs/smollm2-135m",
                        help="a folder holding the nlu, pol and nlg runs (make demo's)")
    parser.add_argument("--scripts", type=int, default=None,
                        help="only the first N scripts (default: all five)")
    parser.add_argument("--quick", action="store_true",
                        help="the first script's first 2 lines: that it runs (figures mean nothing)")
    args = parser.parse_args()
    if not (args.runs / "nlg").is_dir():
        sys.exit(f"{args.runs} holds no nlu, pol and nlg runs: run `make demo` first (or give "
                 "--runs)")
    quiet.progress_bars_off()
    scripts = conversation_scripts()[:args.scripts]
    if args.quick:
        scripts = [{**scripts[0], "turns": scripts[0]["turns"][:2]}]
    import torch

    arms = {name: run_arm(args.runs, scripts, name == "int8") for name in ("float32", "int8")}
    count = len(arms["float32"]["turns"])
    print(f"the assistant on {args.runs} (constrained decoding), {count} patient lines of "
          f"{len(scripts)} scripted conversation(s) one at a time, {torch.get_num_threads()} "
          "torch threads:")
    print("| arm | median s/turn | p90 s/turn | NLU share | POL share | NLG share "
          "| tokens/turn NLU, POL, NLG |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for name, arm in arms.items():
        total = sum(arm["turns"])
        shares = " | ".join(f"{arm['stages'][t] / total:.0%}" for t in TASKS)
        made = ", ".join(f"{arm['tokens'][t] / count:.0f}" for t in TASKS)
        layers = f" ({arm['layers']} layers)" if arm["layers"] else ""
        print(f"| {name}{layers} "
              f"| {statistics.median(arm['turns']):.2f} | {percentile(arm['turns'], 0.9):.2f} "
              f"| {shares} | {made} |")
    ratio = statistics.median(arms["int8"]["turns"]) / statistics.median(arms["float32"]["turns"])
    differ = [sum(a[i] != b[i] for a, b in zip(arms["float32"]["outputs"], arms["int8"]["outputs"]))
              for i in (0, 1)]
    print(f"int8 / float32 median turn: {ratio:.2f}; outputs that differ from float32's: NLU "
          f"{differ[0]} of {count}, POL {differ[1]} of {count}")


if __name__ == "__main__":
    main()
