"""`meditod fewshot`: the paper's in-context baseline of any model behind an OpenAI-compatible
endpoint, scored by the kit's evaluation and set beside the paper's in-context row.

    meditod fewshot --model gpt-4-turbo-2024-04-09 --endpoint https://api.openai.com/v1 --task nlu
    meditod fewshot --model meta-llama/Meta-Llama-3-8B-Instruct --task pol   # vLLM on :8000
    meditod fewshot ... --dry_run      # OUT/requests.jsonl, token total and estimated cost only

Per row of the split: the `shots` train rows whose last turn is most similar (`retrieval`), the
authors' messages (`prompts`), greedy decoding with 200 new tokens. Exemplars that would push
the prompt and the answer past `context_window` (the paper's 4096) are dropped least similar
first, and counted; a window that cannot hold the system prompt, one exemplar, the question and
the answer is an error before anything is sent. Prompt tokens are counted with `tokenizer`
(default: the served model's own Hugging Face tokenizer, chat template included; for a model
without one, e.g. an OpenAI model, an estimate of 4 characters per token).

OUT receives `predictions.jsonl` (the evaluation contract: id, prediction, raw, parse_ok),
`results.json`/`.md`/`.png` (the kit's evaluation; the .md adds the paper's in-context row for
the same model and the share of answers that break the CMAS structure, as the paper reports
it) and `run_info.json` (endpoint host, model, shots, retriever, prompt hashes, tokens, cost,
wall-clock, requests made, cache hits; never a key). Answers are cached as they arrive
(`endpoint`), so an interrupted run resumes and a rerun sends nothing.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..cli import parse_args
from ..dataset import fingerprint, load_split
from ..endpoint import DEFAULT_CACHE, PAPER_PRICES, Decoding, Endpoint, Prices, Request
from ..errors import UsageError, name_ids, run_main
from ..files import atomic_write
from ..records import Prediction, Results, write_predictions
from ..tasks import TASK_NAMES as TASKS
from ..tasks import get_task
from . import prompts
from .retrieval import DEFAULT_CACHE_DIR, DEFAULT_RETRIEVER, ExemplarPool, Retriever

PAPER_CONTEXT_WINDOW = 4096
PAPER_MAX_TOKENS = 200
# Served model names of the paper's in-context baselines -> their rows in `paper_results`
# (`in-context-<name>`).
PAPER_MODELS = {
    "gpt-3.5-turbo-0125": "chatgpt", "gpt-4-1106-preview": "gpt-4",
    "gpt-4-turbo-2024-04-09": "gpt-4-turbo",
    "meta-llama/Meta-Llama-3-8B-Instruct": "llama3-8b",
    "meta-llama/Meta-Llama-3-70B-Instruct": "llama3-70b",
    "aaditya/Llama3-OpenBioLLM-8B": "openbiollm-8b",
    "aaditya/Llama3-OpenBioLLM-70B": "openbiollm-70b",
}


@dataclass
class FewshotArguments:
    model: str = field(metadata={"help": "model name as the endpoint serves it"})
    task: str = field(metadata={"help": "nlu, pol or nlg", "choices": list(TASKS)})
    endpoint: str = field(default="http://127.0.0.1:8000/v1",
                          metadata={"help": "OpenAI-compatible base URL (vLLM, TGI, transformers "
                                            "serve, https://api.openai.com/v1, "
                                            "https://router.huggingface.co/v1, Azure)"})
    data: str = field(default="meditod", metadata={"help": "built dataset folder or Hub id"})
    split: str = field(default="test")
    shots: int = field(default=5, metadata={"help": "retrieved exemplars per prompt (paper: 5)"})
    out: str | None = field(default=None, metadata={"help": "default runs/fewshot/MODEL/TASK"})
    retriever: str = field(default=DEFAULT_RETRIEVER,
                           metadata={"help": "sentence-transformers model id or folder"})
    dry_run: bool = field(default=False, metadata={
        "help": "write OUT/requests.jsonl and print tokens and cost; send nothing"})
    context_window: int = field(default=PAPER_CONTEXT_WINDOW,
                                metadata={"help": "prompt + answer token budget (paper: 4096)"})
    max_tokens: int = field(default=PAPER_MAX_TOKENS, metadata={"help": "new tokens per answer"})
    tokenizer: str | None = field(default=None, metadata={
        "help": "Hugging Face tokenizer that counts prompt tokens (default: MODEL's)"})
    concurrency: int = field(default=8, metadata={"help": "requests in flight"})
    request_timeout: float = field(default=120.0, metadata={"help": "seconds per HTTP request"})
    max_retries: int = field(default=4, metadata={"help": "retries per request (429/5xx/timeout)"})
    deadline: float | None = field(default=None, metadata={
        "help": "seconds for all requests, retries included (answers so far stay cached)"})
    cache: str = field(default=DEFAULT_CACHE, metadata={"help": "answer cache (SQLite)"})
    retrieval_cache: str = field(default=DEFAULT_CACHE_DIR,
                                 metadata={"help": "folder of cached pool embeddings"})
    api_key_env: str | None = field(default=None, metadata={
        "help": "environment variable with the key (default by host: OPENAI_API_KEY, "
                "AZURE_OPENAI_API_KEY, HF_TOKEN)"})
    input_price: float | None = field(default=None, metadata={
        "help": "USD per 1M prompt tokens (default: the paper's OpenAI prices, else 0)"})
    output_price: float | None = field(default=None, metadata={"help": "USD per 1M answer tokens"})
    paper_model: str | None = field(default=None, metadata={
        "help": "the paper's in-context row to compare with (chatgpt, gpt-4, gpt-4-turbo, "
                "llama3-8b, llama3-70b, openbiollm-8b, openbiollm-70b); default from MODEL"})
    judge: str = field(default="exact", metadata={"help": "non-medical value judge: exact, "
                                                          "embedding or llm"})
    judge_url: str | None = field(default=None, metadata={"help": "llm judge endpoint"})
    judge_model: str | None = field(default=None, metadata={"help": "llm judge model"})
    limit: int | None = field(default=None, metadata={"help": "only the first N rows"})
    constrained: bool = field(default=False, metadata={
        "help": "the server decodes NLU/POL under the CMAS grammar (meditod_hub.constrained); "
                "a separate setting from the paper's free decoding, with its own OUT"})
    server_kind: str | None = field(default=None, metadata={
        "help": "--constrained: vllm, sglang, llama.cpp (grammar), tgi or openai (JSON schema); "
                "default: openai for OpenAI's hosts, else it must be named"})
    vocabulary: str = field(default="train", metadata={
        "help": "--constrained: medical values from `train` (the training split of --data), a "
                "file (one value per line) or `none` (free)"})

    def out_dir(self) -> Path:
        setting = f"{self.task}-constrained" if self.constrained else self.task
        return Path(self.out or Path("runs") / "fewshot" / self.model / setting)

    def prices(self) -> Prices:
        paper = PAPER_PRICES.get(self.model, Prices())
        return Prices(paper.input if self.input_price is None else self.input_price,
                      paper.output if self.output_price is None else self.output_price)


# --- prompts within the budget ---------------------------------------------------------------

class TokenCounter:
    """Prompt tokens as the model sees them: its chat template when it has one, else the
    contents plus OpenAI's per-message overhead (4 per message, 3 to prime the answer).

    Without a loadable tokenizer for the model (an OpenAI model name), and none named, tokens
    are estimated at 4 characters each, and the run says so; a tokenizer named with
    `--tokenizer` must load.
    """

    CHARS_PER_TOKEN = 4

    def __init__(self, name: str, named: bool = True):
        from transformers import AutoTokenizer

        try:
            self.tokenizer = AutoTokenizer.from_pretrained(name)
            self.name = name
        except (OSError, ValueError) as exc:
            if named:
                raise UsageError(f"cannot load a tokenizer for {name!r} to count prompt tokens "
                                 f"({type(exc).__name__}): pass --tokenizer with a Hugging Face "
                                 "tokenizer id or folder that matches the model") from None
            self.tokenizer = None
            self.name = f"estimate ({self.CHARS_PER_TOKEN} characters per token)"
            print(f"note: no tokenizer for {name}; prompt tokens are estimated at "
                  f"{self.CHARS_PER_TOKEN} characters each (pass --tokenizer to count them)",
                  file=sys.stderr)

    def __call__(self, messages: list[dict]) -> int:
        if self.tokenizer is None:
            return sum(-(-len(m["content"]) // self.CHARS_PER_TOKEN) for m in messages) \
                + 4 * len(messages) + 3
        if self.tokenizer.chat_template:
            return len(self.tokenizer.apply_chat_template(messages, add_generation_prompt=True,
                                                          tokenize=True, return_dict=True)["input_ids"])
        contents = self.tokenizer([m["content"] for m in messages], add_special_tokens=False)
        return sum(map(len, contents["input_ids"])) + 4 * len(messages) + 3


@dataclass
class Prompt:
    id: str
    messages: list[dict]
    tokens: int
    exemplar_ids: list[str]
    dropped: int  # exemplars left out to fit the window


def build_prompts(task: str, rows: list[dict], pool: ExemplarPool, shots: int,
                  count: TokenCounter, context_window: int, max_tokens: int) -> list[Prompt]:
    """One prompt per row with its most similar exemplars that fit; raises if one cannot fit."""
    out, unfit = [], []
    for row, found in zip(rows, pool.search(rows, shots)):
        exemplars = [pool.rows[i] for i in found]
        while True:
            messages = prompts.messages(task, row, exemplars)
            tokens = count(messages)
            if tokens + max_tokens <= context_window or len(exemplars) <= 1:
                break
            exemplars = exemplars[:-1]  # the least similar goes first
        if tokens + max_tokens > context_window:
            unfit.append((row["id"], tokens))
            continue
        out.append(Prompt(row["id"], messages, tokens, [e["id"] for e in exemplars],
                          len(found) - len(exemplars)))
    if unfit:
        need = max(tokens for _, tokens in unfit) + max_tokens
        raise UsageError(
            f"a context window of {context_window} tokens is smaller than one exemplar: the "
            f"system prompt, one exemplar, the question and {max_tokens} answer tokens need up to "
            f"{need} for {len(unfit)} row(s) ({name_ids([i for i, _ in unfit], 3)}): raise "
            "--context_window or serve a model with a longer context")
    return out


def prompt_hashes(task: str, built: list[Prompt]) -> dict:
    every = hashlib.sha256()
    for prompt in built:
        every.update(json.dumps(prompt.messages).encode())
    return {"system_prompt_sha256": hashlib.sha256(prompts.system_prompt(task).encode()).hexdigest(),
            "requests_sha256": every.hexdigest()}


# --- output files ------------------------------------------------------------------------------

def claim_out(args: FewshotArguments, out: Path) -> None:
    """OUT may hold this run's earlier files, never another run's."""
    info = out / "run_info.json"
    if info.is_file():
        old = json.loads(info.read_text())
        mine = {"model": args.model, "task": args.task, "split": args.split,
                "constrained": args.constrained}
        theirs = {k: old.get(k, False if k == "constrained" else None) for k in mine}
        if theirs != mine:
            raise UsageError(f"{out} holds another few-shot run ({theirs}); choose another --out")
    elif out.is_dir() and any(out.iterdir()):
        raise UsageError(f"{out} is not empty and holds no few-shot run; choose another --out")
    out.mkdir(parents=True, exist_ok=True)


def structure_violations(task: str, records: list[Prediction]) -> int:
    """Answers that do not parse or break the CMAS structure (the paper's POL count)."""
    from ..release import label_errors

    if not get_task(task).structured:
        return sum(not r.parse_ok for r in records)
    kind = "nlu" if task == "nlu" else "actions"
    return sum(not r.parse_ok or bool(label_errors(kind, r.prediction)) for r in records)


# --- the kit's evaluation: the one place this module calls into it --------------------------

def score(args: FewshotArguments, rows: list[dict], records: list[Prediction], out: Path
          ) -> Results:
    """predictions.jsonl, then results.json/.md/.png through the task's `score`."""
    from ..metrics import make_judge

    write_predictions(records, out / "predictions.jsonl")
    judge = make_judge(args.judge, model=args.judge_model, base_url=args.judge_url)
    scores = get_task(args.task).score(rows, [r.label for r in records], judge=judge)
    scores["constrained"] = args.constrained
    violations = structure_violations(args.task, records)
    scores["structure_violations"] = {"count": violations,
                                      "share": violations / len(records) if records else 0.0}
    results = Results(args.task, args.split, scores)
    results.write(out / "results.json")
    with (out / "results.md").open("a", encoding="utf-8") as md:
        md.write("\n" + beside_the_paper(args, results) + "\n")
    return results


def paper_key(args: FewshotArguments) -> str | None:
    name = args.paper_model or PAPER_MODELS.get(args.model)
    return f"in-context-{name}" if name else None


def beside_the_paper(args: FewshotArguments, results: Results) -> str:
    from ..paper_results import paper_row

    key = paper_key(args)
    paper = paper_row(key, args.task, args.split) if key else {}
    share = results.scores["structure_violations"]["share"]
    setting = "constrained to the CMAS grammar" if args.constrained else "free decoding"
    lines = [f"## In-context: {args.model}, {args.shots} retrieved exemplars, {setting}", "",
             f"{share:.2%} of the answers break the CMAS structure (did not parse, or broke the "
             "label schema)."]
    if not paper:
        return "\n".join(lines + ["", f"The paper has no in-context {args.task.upper()} "
                                      f"{args.split} row for this model."])
    lines += ["", f"| metric | this run | paper ({key}) |", "|---|---|---|"]
    for metric in get_task(args.task).metrics:
        if metric.key in paper:
            ours = results.value(metric.key)
            cell = "–" if ours is None else format(ours, metric.fmt)
            lines.append(f"| {metric.name} | {cell} | {format(paper[metric.key], metric.fmt)} |")
    return "\n".join(lines)


# --- the command -----------------------------------------------------------------------------

def run(args: FewshotArguments) -> dict:
    """The whole few-shot run; returns run_info."""
    if args.shots < 1:
        raise UsageError(f"--shots must be at least 1, got {args.shots}")
    started = time.perf_counter()
    served = None
    if args.constrained:
        from ..constrained import ServedConstraint, resolve_vocabulary, server_kind_for

        served = ServedConstraint(server_kind_for(args.endpoint, args.server_kind), "fewshot",
                                  args.task, resolve_vocabulary(args.vocabulary, args.data))
    out = args.out_dir()
    claim_out(args, out)
    train = load_split(args.data, args.task, "train")
    rows = load_split(args.data, args.task, args.split)[:args.limit]
    pool = ExemplarPool(Retriever(args.retriever), args.task, train, fingerprint(args.data),
                        args.retrieval_cache)
    counter = TokenCounter(args.tokenizer or args.model, named=args.tokenizer is not None)
    built = build_prompts(args.task, rows, pool, args.shots, counter, args.context_window,
                          args.max_tokens)
    decoding = Decoding(max_tokens=args.max_tokens,
                        extra_body=served.extra_body() if served else None)
    prices = args.prices()
    prompt_tokens = sum(p.tokens for p in built)
    info = {"model": args.model, "task": args.task, "split": args.split, "data": str(args.data),
            "rows": len(rows), "shots": args.shots, "retriever": pool.describe(),
            "context_window": args.context_window, "token_counter": counter.name,
            "decoding": {k: v for k, v in asdict(decoding).items() if k != "extra_body"},
            "constrained": args.constrained,
            **({"constraint": served.describe()} if served else {}),
            "budget": {"rows_with_fewer_exemplars": sum(p.dropped > 0 for p in built),
                       "exemplars_dropped": sum(p.dropped for p in built)},
            **prompt_hashes(args.task, built), "paper_row": paper_key(args)}
    estimate = prices.cost(prompt_tokens, len(built) * args.max_tokens)
    if args.dry_run:
        atomic_write(out / "requests.jsonl", "".join(
            json.dumps({"id": p.id, "messages": p.messages, "prompt_tokens": p.tokens}) + "\n"
            for p in built))
        info.update(dry_run=True, estimated_prompt_tokens=prompt_tokens,
                    estimated_cost_usd=estimate)
        print(f"{len(built)} requests, {prompt_tokens} prompt tokens (+ at most "
              f"{len(built) * args.max_tokens} answer tokens); estimated cost <= ${estimate:.2f} "
              f"at ${prices.input:g}/${prices.output:g} per 1M tokens -> {out / 'requests.jsonl'}")
        atomic_write(out / "run_info.json", json.dumps(info, indent=2) + "\n")
        return info

    endpoint = Endpoint(args.endpoint, args.model, api_key_env=args.api_key_env,
                        concurrency=args.concurrency, request_timeout=args.request_timeout,
                        max_retries=args.max_retries, deadline=args.deadline, cache=args.cache,
                        prices=prices, progress=True)
    answers = endpoint.complete([Request(p.id, messages=p.messages) for p in built], decoding,
                                desc=f"{args.task} {args.model}")
    records = []
    for row in rows:
        raw = answers[row["id"]].text
        parsed = prompts.parse_answer(args.task, served.answer(raw) if served else raw)
        records.append(Prediction(row["id"], parsed.value, parsed.ok, raw, parsed.reason,
                                  args.constrained))
    results = score(args, rows, records, out)
    info.update(**endpoint.describe(), parse_failures=sum(not r.parse_ok for r in records),
                structure_violations=results.scores["structure_violations"],
                estimated_cost_usd=estimate, run_wall_clock_s=time.perf_counter() - started)
    atomic_write(out / "run_info.json", json.dumps(info, indent=2) + "\n")
    headline = get_task(args.task).headline_metric
    stats = endpoint.stats
    print(f"{headline.name} {format(results.value(headline.key), headline.fmt)}"
          + f"; {stats.requests} requests, {stats.cache_hits} cached, "
            f"{stats.prompt_tokens + stats.completion_tokens} tokens, ${stats.cost_usd:.4f} -> {out}")
    return info


def main(argv: list[str] | None = None) -> int:
    (args,) = parse_args((FewshotArguments,), list(sys.argv[1:] if argv is None else argv),
                         prog="meditod fewshot", description=__doc__.split("\n\n")[0])
    run(args)
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
