"""Few-shot on a local model: seconds per row with the shared prompt prefix's KV cache computed
once (`meditod_hub.models.local_chat.LocalChat`, what `meditod fewshot --local_model` runs)
against a plain `generate` on each full prompt, on the same rows in the same process, and
whether the answers are equal.

    .venv/bin/python bench/bench_fewshot_cache.py                        # 8 NLU rows, 200 tokens
    .venv/bin/python bench/bench_fewshot_cache.py --model PATH --rows 20 --task pol
    .venv/bin/python bench/bench_fewshot_cache.py --quick                # that the bench runs

Rows: the test rows of the authors' sample (`../shared/meditod-sample`) when it is beside the
project, else of the embedded synthetic sample; each prompt is the authors' messages with 5
exemplars retrieved by the bundled all-MiniLM-L6-v2 (bge is not on this machine), built as
`meditod fewshot` builds them. Model: `--model` (a chat model folder), by default a random Llama
built here with the Llama-3 tokenizer and chat template (`meditod_hub.models.llama3`), so the
prompts have Llama 3's real lengths (the system message alone ~2.5k tokens); hidden size 512,
4 layers (~140M parameters, most of them the 128k-token embeddings; `--quick`: 64, 2).
Decoding: greedy, `--max_tokens` new tokens (default the paper's 200; a random model never
stops early, so every row decodes all of them). Times are wall-clock over all rows, the cached
path's one prefix pass included; one row through each path first warms both up (not timed).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

AUTHORS_SAMPLE = ROOT.parent / "shared" / "meditod-sample"
EMBEDDED_SAMPLE = ROOT / "data" / "sample"


def random_llama3(folder: Path, hidden: int, layers: int) -> Path:
    """A random Llama with the Llama-3 tokenizer and chat template, saved to `folder`."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from meditod_hub.models.llama3 import llama3_tokenizer

    tokenizer = llama3_tokenizer()
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=hidden,
                         intermediate_size=hidden * 4, num_hidden_layers=layers,
                         num_attention_heads=max(1, hidden // 64), num_key_value_heads=1,
                         max_position_embeddings=8192, rope_theta=500000.0,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def requests_of(release: Path, task: str, rows: int, shots: int, workdir: Path) -> list:
    """The authors' messages for the first `rows` test rows, exemplars retrieved as in a run."""
    from meditod_hub.data.build import BuildArguments, build
    from meditod_hub.data.dataset import fingerprint, load_split
    from meditod_hub.data.metrics.judges import bundled_minilm_path
    from meditod_hub.data.tasks import get_task
    from meditod_hub.endpoint import Request
    from meditod_hub.evaluation.fewshot.retrieval import ExemplarPool, Retriever
    from meditod_hub.evaluation.fewshot.run import build_prompts

    data = workdir / "built"
    build(BuildArguments(source=release, out=data))
    pool = ExemplarPool(Retriever(bundled_minilm_path(), device="cpu"), task,
                        load_split(data, task, "train"), fingerprint(data), None)
    test = load_split(data, task, "test")[:rows]
    built = build_prompts(get_task(task), test, pool, shots, None, None, 0)
    return [Request(p.id, messages=p.messages) for p in built]


def per_row(chat, requests, decoding) -> tuple[float, dict]:
    start = time.perf_counter()
    answers = chat.complete(requests, decoding)
    return (time.perf_counter() - start) / len(requests), answers


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=None,
                        help="a chat model folder (default: a random Llama-3-shaped model built here)")
    parser.add_argument("--rows", type=int, default=8, help="test rows timed through each path")
    parser.add_argument("--task", default="nlu", choices=["nlu", "pol", "nlg"])
    parser.add_argument("--shots", type=int, default=5)
    parser.add_argument("--max_tokens", type=int, default=200)
    parser.add_argument("--quick", action="store_true",
                        help="a small run that checks the bench works (CI); its figures mean nothing")
    args = parser.parse_args(argv)
    if args.quick:
        args.rows, args.max_tokens = 2, 8
    import torch

    from meditod_hub.endpoint import Decoding
    from meditod_hub.models.local_chat import LocalChat

    torch.set_num_threads(min(torch.get_num_threads(), 2))  # a shared machine: no oversubscription
    release = AUTHORS_SAMPLE if (AUTHORS_SAMPLE / "dialogs.json").is_file() else EMBEDDED_SAMPLE
    with tempfile.TemporaryDirectory() as tmp:
        requests = requests_of(release, args.task, args.rows + 1, args.shots, Path(tmp))
        warm, requests = requests[:1], requests[1:]
        model = args.model or random_llama3(Path(tmp) / "model", *((64, 2) if args.quick
                                                                   else (512, 4)))
        cached = LocalChat.load(model, cache=None)
        plain = LocalChat(cached.model, cached.tokenizer, str(model), cache=None,
                          reuse_prefix=False)
        decoding = Decoding(max_tokens=args.max_tokens)
        for chat in (cached, plain):
            chat.complete(warm, decoding)
        plain_s, plain_answers = per_row(plain, requests, decoding)
        cached_s, cached_answers = per_row(cached, requests, decoding)
    lengths = [a.prompt_tokens for a in cached_answers.values()]
    new = sum(a.completion_tokens for a in cached_answers.values()) / len(requests)
    equal = {i: a.text for i, a in cached_answers.items()} == \
        {i: a.text for i, a in plain_answers.items()}
    print(f"fewshot --local_model, {args.model or 'random Llama-3-shaped model'} "
          f"({cached.model.num_parameters() / 1e6:.0f}M parameters, {cached.model.device}, "
          f"{str(cached.model.dtype).removeprefix('torch.')}), {release.name} {args.task.upper()} "
          f"test rows: {len(requests)} prompts of {min(lengths)}-{max(lengths)} tokens "
          f"({args.shots} exemplars), {cached.prefix_tokens} shared and cached once, "
          f"{new:.0f} new tokens per row")
    print(f"seconds per row: plain generate {plain_s:.3f}, prefix cached {cached_s:.3f}: "
          f"{plain_s / cached_s:.2f}x; answers equal: {equal}")


if __name__ == "__main__":
    main()
