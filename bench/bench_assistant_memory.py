"""The assistant's memory on one base: three models vs one base with three adapters vs one
multi-task adapter, with turn latency for each.

    .venv/bin/python bench/bench_assistant_memory.py            # ~120M-parameter base, CPU
    .venv/bin/python bench/bench_assistant_memory.py --quick    # a small base (CI smoke run)

A Llama-shaped base of at least 100M parameters with random weights is built offline from a
config (the tiny tokenizer trained on the embedded sample, so prompts are short and real), with
three LoRA adapters (r=32 on all seven projections, the llama3-8b recipes' setting; random B so
they differ) and one multi-task adapter, each saved as a run folder. Each arm loads an assistant
in a FRESH subprocess (peak RSS is per process) and replays patient lines of the embedded sample:

* single    - one stage's adapter on its base: the baseline (the most one model needs);
* separate  - three adapters each loaded with its own base (what the assistant did before);
* shared    - the three adapters on one base (`meditod_hub.models.adapters`, `Assistant.load`);
* multitask - one adapter serving the three stages.

Printed: peak RSS (and CUDA peak when a GPU is used), each arm's ratio to `single`, and turn
latency (median, p95). One base with three adapters must stay within 1.15x a single model; the
script exits 1 otherwise. Random weights generate to `--max_new_tokens` on every call, so every
turn does the same work: latencies compare arms, not models.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

TASKS = ("nlu", "pol", "nlg")
ARMS = ("single", "separate", "shared", "multitask")
BOUND = 1.15
SIZES = {"full": dict(hidden_size=768, intermediate_size=2560, num_hidden_layers=14,
                      num_attention_heads=12, num_key_value_heads=4),
         "quick": dict(hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=2)}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


# --- setup (parent process) ------------------------------------------------------------------
def make_runs(work: Path, size: str, max_new_tokens: int) -> int:
    """Sample build, base, three adapters and a multi-task adapter under `work`; the base's
    parameter count."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM

    from meditod_hub.data.build import BuildArguments, build
    from meditod_hub.models.runs import write_run_files
    from meditod_hub.models.tiny import corpus, llama_tokenizer

    build(BuildArguments(source=PROJECT / "data" / "sample", out=work / "meditod"))
    tokenizer = llama_tokenizer(list(corpus(work / "meditod")))
    torch.manual_seed(0)
    base = LlamaForCausalLM(LlamaConfig(
        vocab_size=len(tokenizer), max_position_embeddings=4096, rope_theta=500000.0,
        tie_word_embeddings=False, bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, **SIZES[size]))
    parameters = sum(p.numel() for p in base.parameters())
    base.save_pretrained(work / "base")
    tokenizer.save_pretrained(work / "base")
    for name in (*TASKS, "multitask"):
        model = LlamaForCausalLM.from_pretrained(work / "base")
        lora = LoraConfig(r=32, lora_alpha=32, task_type="CAUSAL_LM", init_lora_weights=False,
                          target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj",
                                          "up_proj", "down_proj"])
        torch.manual_seed(hash(name) % 1000)
        get_peft_model(model, lora).save_pretrained(work / name)
        tokenizer.save_pretrained(work / name)
        write_run_files(work / name, {"model": "bench", "task": name, "family": "chat",
                                      "base_model": str(work / "base"), "adapter": True,
                                      "quantization": None},
                        {"max_length": 1024, "max_new_tokens": max_new_tokens})
    return parameters


# --- one arm (child process) ------------------------------------------------------------------
def run_arm(arm: str, work: Path, turns: int) -> dict:
    import torch
    from datasets import disable_progress_bars

    from meditod_hub.apps.assistant import Assistant
    from meditod_hub.data.dataset import load_split
    from meditod_hub.data.tasks import get_task
    from meditod_hub.models.adapters import SharedModels
    from meditod_hub.models.predictor import LocalPredictor, ModelSpec, load_predictor

    disable_progress_bars()
    imported = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    if arm == "single":
        nlu = load_predictor(ModelSpec(str(work / "nlu")), "nlu")
        # NLU's adapter answers all stages: one model object, a predictor of each task on it
        assistant = Assistant({"nlu": nlu, **{t: LocalPredictor(nlu.model, nlu.tokenizer, nlu.family,
                                                                get_task(t), nlu.budget)
                                              for t in TASKS[1:]}})
    elif arm == "separate":
        assistant = Assistant({t: load_predictor(ModelSpec(str(work / t)), t, SharedModels())
                               for t in TASKS})
    elif arm == "shared":
        assistant = Assistant.load({t: ModelSpec(str(work / t)) for t in TASKS})
    else:
        assistant = Assistant.load({t: ModelSpec(str(work / "multitask")) for t in TASKS})
    load_s = time.perf_counter() - start
    loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    lines = [r["patient_text"] for r in load_split(work / "meditod", "nlu", "train")]
    conversation = assistant.new_conversation()
    assistant.respond(conversation, "warm-up")
    seconds = []
    for n in range(turns):
        if n % 5 == 0:
            conversation = assistant.new_conversation()
        start = time.perf_counter()
        assistant.respond(conversation, lines[n % len(lines)])
        seconds.append(time.perf_counter() - start)
    models = {id(p.model) for p in assistant.predictors.values()}
    return {"arm": arm, "model_objects": len(models), "load_s": load_s,
            "rss_imported_mb": imported / 1024, "rss_loaded_mb": loaded / 1024,
            "rss_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "cuda_peak_mb": (torch.cuda.max_memory_allocated() / 2**20
                             if torch.cuda.is_available() else None),
            "turn_median_s": statistics.median(seconds), "turn_p95_s": percentile(seconds, 0.95),
            "turns": turns, "loading": list(assistant.loading)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a small base and few turns (CI)")
    parser.add_argument("--turns", type=int, default=None, help="timed turns per arm")
    parser.add_argument("--max_new_tokens", type=int, default=16)
    parser.add_argument("--threads", type=int, default=1, help="torch threads in each arm")
    parser.add_argument("--arm", choices=ARMS, help=argparse.SUPPRESS)  # the child's part
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    turns = args.turns or (3 if args.quick else 20)
    if args.arm:
        import torch

        torch.set_num_threads(args.threads)
        print(json.dumps(run_arm(args.arm, args.work, turns)))
        return 0

    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        work = Path(tmp)
        parameters = make_runs(work, "quick" if args.quick else "full", args.max_new_tokens)
        print(f"base: Llama-shaped, {parameters / 1e6:.1f}M parameters (fp32, random), 3 task "
              f"adapters + 1 multi-task adapter (LoRA r=32, 7 projections); {turns} turns per "
              f"arm, max_new_tokens {args.max_new_tokens}, {args.threads} torch thread(s), each "
              "arm in a fresh process")
        results = {}
        env = {**os.environ, "PYTHONPATH": str(PROJECT), "TOKENIZERS_PARALLELISM": "false"}
        for arm in ARMS:
            child = subprocess.run([sys.executable, __file__, "--arm", arm, "--work", str(work),
                                    "--turns", str(turns), "--threads", str(args.threads)],
                                   capture_output=True, text=True, env=env)
            if child.returncode:
                sys.exit(f"arm {arm} failed:\n{child.stderr[-3000:]}")
            results[arm] = json.loads(child.stdout.strip().splitlines()[-1])
    single = results["single"]["rss_peak_mb"]
    print("| arm | model objects | peak RSS MB | x single | after load MB | load s | turn "
          "median ms | turn p95 ms |" + (" CUDA peak MB |" if results["single"]["cuda_peak_mb"]
                                         else ""))
    print("|---|---|---|---|---|---|---|---|" + ("---|" if results["single"]["cuda_peak_mb"]
                                                 else ""))
    for arm, r in results.items():
        cuda = f" {r['cuda_peak_mb']:.0f} |" if r["cuda_peak_mb"] else ""
        print(f"| {arm} | {r['model_objects']} | {r['rss_peak_mb']:.0f} | "
              f"{r['rss_peak_mb'] / single:.2f}x | {r['rss_loaded_mb']:.0f} | {r['load_s']:.1f} | "
              f"{r['turn_median_s'] * 1000:.0f} | {r['turn_p95_s'] * 1000:.0f} |{cuda}")
    print(f"python + torch + transformers before loading: {results['single']['rss_imported_mb']:.0f}"
          " MB RSS")
    print("shared loading: " + "; ".join(results["shared"]["loading"]))
    ratio = results["shared"]["rss_peak_mb"] / single
    print(f"one base with three adapters: {ratio:.3f}x a single model "
          f"({'within' if ratio <= BOUND else 'OVER'} the {BOUND}x bound); three separate "
          f"models: {results['separate']['rss_peak_mb'] / single:.2f}x")
    return 0 if ratio <= BOUND else 1


if __name__ == "__main__":
    sys.exit(main())
