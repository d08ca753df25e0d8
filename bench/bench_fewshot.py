"""Few-shot throughput and retrieval: requests/s at 1 vs 8 in flight, and exemplar search at paper
scale.

    .venv/bin/python bench/bench_fewshot.py                 # 0.25 s server latency, seed 0
    .venv/bin/python bench/bench_fewshot.py --delay 0.1 --requests 128

1. The endpoint client against a local OpenAI-compatible server (tests/chat_server.py) that
   answers every request after a fixed delay, as a remote model would (the server runs in its
   own process, so it does not compete with the client for the GIL): the same batch with 1
   and with 8 requests in flight. Target: 8 in flight >= 6x the requests/s of 1 (the server
   answers in parallel, so the client's concurrency is what is measured).
2. Retrieval over the paper-scale synthetic corpus (`meditod_hub.data.synthetic`: 175 train
   dialogues, ~8.4k patient turns in the NLU pool) with the tiny offline retriever
   (`meditod_hub.models.tiny.build_retriever`): embedding the pool once, reloading it from the cache,
   and the per-query search of every test row (query embedding included). Baselines in the same
   run: cache reload vs embedding, search vs embedding the query alone.
3. Prompt lengths of the authors' sample (`../shared/meditod-sample`, NLU test rows, 5
   exemplars from its train split, retrieved by the bundled all-MiniLM-L6-v2 since bge is not on
   this machine) counted with the packaged Llama-3 tokenizer (`meditod_hub.models.llama3`) against the
   4-characters-per-token estimate the kit used before: how many prompts + 200 answer tokens
   pass 4,096 tokens (the rows an estimate would have trimmed), and the time per count with
   the estimate's as the baseline.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from chat_server import ChatServer  # noqa: E402

from meditod_hub.endpoint import Decoding, Endpoint, Request  # noqa: E402

RATIO_TARGET = 6.0


def requests_per_second(url: str, in_flight: int, count: int) -> float:
    endpoint = Endpoint(url, "stub-model", concurrency=in_flight, cache=None)
    batch = [Request(f"{in_flight}-{i}", messages=[{"role": "user", "content": f"q{i}"}])
             for i in range(count)]
    start = time.perf_counter()
    endpoint.complete(batch, Decoding(max_tokens=8))
    return count / (time.perf_counter() - start)


def _serve(delay: float, urls, stop) -> None:
    with ChatServer(delay=delay) as server:
        urls.put(server.url)
        stop.wait()


@contextmanager
def delayed_server(delay: float):
    """The server in its own process, so it never competes with the client for the GIL."""
    urls, stop = multiprocessing.Queue(), multiprocessing.Event()
    process = multiprocessing.Process(target=_serve, args=(delay, urls, stop), daemon=True)
    process.start()
    try:
        yield urls.get(timeout=60)
    finally:
        stop.set()
        process.join(timeout=10)


def bench_concurrency(delay: float, count: int) -> None:
    with delayed_server(delay) as url:
        requests_per_second(url, 8, 8)  # warm-up: imports, connections
        one = requests_per_second(url, 1, count // 4)
        eight = requests_per_second(url, 8, count)
    ratio = eight / one
    verdict = "met" if ratio >= RATIO_TARGET else "MISSED"
    print(f"endpoint, {delay:g} s per answer: 1 in flight {one:.2f} req/s, 8 in flight "
          f"{eight:.2f} req/s: {ratio:.1f}x (target >= {RATIO_TARGET:g}x: {verdict}; ideal 8x)")


def bench_retrieval(seed: int, dialogues: int) -> None:
    from datasets import Dataset

    from meditod_hub.data.synthetic import generate_dialogues, split_ids
    from meditod_hub.data.tasks import features, view_rows
    from meditod_hub.evaluation.fewshot.prompts import last_turn
    from meditod_hub.evaluation.fewshot.retrieval import ExemplarPool, Retriever
    from meditod_hub.models.tiny import build_retriever

    generated = generate_dialogues(seed, dialogues)
    rows = {split: [r for d in ids for r in view_rows("nlu", d, generated[d])]
            for split, ids in split_ids(dialogues).items() if split in ("train", "test")}
    pool_rows = Dataset.from_list(rows["train"], features=features("nlu"))
    with tempfile.TemporaryDirectory() as tmp:
        texts = [last_turn(r) for r in rows["train"]]
        retriever = Retriever(str(build_retriever(texts, Path(tmp))), device="cpu")
        start = time.perf_counter()
        pool = ExemplarPool(retriever, "nlu", rows["train"], pool_rows._fingerprint, tmp)
        embed = time.perf_counter() - start
        start = time.perf_counter()
        cached = ExemplarPool(retriever, "nlu", rows["train"], pool_rows._fingerprint, tmp)
        reload = time.perf_counter() - start
        assert cached.cache_hit
        queries = rows["test"]
        start = time.perf_counter()
        found = pool.search(queries, 5)
        search = (time.perf_counter() - start) / len(queries)
        start = time.perf_counter()
        retriever.encode([last_turn(r) for r in queries])
        encode_only = (time.perf_counter() - start) / len(queries)
    assert all(len(f) == 5 for f in found)
    print(f"retrieval, synthetic seed {seed}: pool of {len(rows['train'])} NLU train turns embedded "
          f"once in {embed:.2f} s, reloaded from the cache in {reload * 1000:.1f} ms "
          f"({embed / reload:.0f}x faster); {len(queries)} test queries at "
          f"{search * 1000:.2f} ms each, top 5 (query embedding alone: {encode_only * 1000:.2f} "
          f"ms, {search / encode_only:.2f}x)")


def bench_llama3_lengths(sample: Path) -> None:
    from meditod_hub.data.build import BuildArguments, build
    from meditod_hub.data.dataset import fingerprint, load_split
    from meditod_hub.data.metrics.judges import bundled_minilm_path
    from meditod_hub.evaluation.fewshot import prompts
    from meditod_hub.evaluation.fewshot.retrieval import ExemplarPool, Retriever
    from meditod_hub.evaluation.fewshot.run import PAPER_MAX_TOKENS, TokenCounter, estimated_tokens
    from meditod_hub.models.llama3 import llama3_tokenizer

    if not (sample / "dialogs.json").is_file():
        print(f"llama-3 prompt lengths: skipped ({sample} is not the authors' sample)")
        return
    window = 4096
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "built"
        build(BuildArguments(source=sample, out=data))
        train, test = load_split(data, "nlu", "train"), load_split(data, "nlu", "test")
        pool = ExemplarPool(Retriever(bundled_minilm_path(), device="cpu"), "nlu", train,
                            fingerprint(data), None)
        messages = [prompts.messages("nlu", row, [pool.rows[i] for i in found])
                    for row, found in zip(test, pool.search(test, 5))]
    count = TokenCounter(llama3_tokenizer(), "llama3")
    count(messages[0])  # warm-up: the template's compilation
    start = time.perf_counter()
    real = [count(m) for m in messages]
    real_s = (time.perf_counter() - start) / len(messages)
    start = time.perf_counter()
    guess = [estimated_tokens(m) for m in messages]
    guess_s = (time.perf_counter() - start) / len(messages)
    over = sum(t + PAPER_MAX_TOKENS > window for t in real)
    over_guess = sum(t + PAPER_MAX_TOKENS > window for t in guess)
    print(f"llama-3 prompt lengths, authors' sample: {len(messages)} NLU test prompts with 5 "
          f"exemplars: {over} pass {window} tokens with 200 answer tokens by Llama 3's tokenizer "
          f"(max {max(real)}, mean {sum(real) / len(real):.0f}), {over_guess} by the 4-character "
          f"estimate (max {max(guess)}); counting takes {real_s * 1000:.2f} ms per prompt "
          f"({real_s / guess_s:.0f}x the estimate's {guess_s * 1e6:.1f} us)")


def main(argv: list[str] | None = None) -> None:
    from meditod_hub.data.synthetic import PAPER_DIALOGUES

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--delay", type=float, default=0.25, help="server seconds per answer "
                        "(a fast remote model; the client's own cost per request is ~10 ms)")
    parser.add_argument("--requests", type=int, default=64, help="batch size at 8 in flight")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sample", type=Path, default=ROOT.parent / "shared" / "meditod-sample",
                        help="the authors' 3-dialogue sample (a release folder)")
    parser.add_argument("--quick", action="store_true",
                        help="a small run that checks the bench works (CI); its figures mean nothing")
    args = parser.parse_args(argv)
    if args.quick:
        args.delay, args.requests = 0.01, 8
    bench_concurrency(args.delay, args.requests)
    bench_retrieval(args.seed, 12 if args.quick else PAPER_DIALOGUES)
    bench_llama3_lengths(args.sample)


if __name__ == "__main__":
    main()
