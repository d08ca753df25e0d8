"""`meditod fewshot`: the paper's in-context baseline of any model behind an OpenAI-compatible
endpoint, or of a local chat model run in this process, scored by the kit's evaluation and set
beside the paper's in-context row.

    meditod fewshot --model gpt-4-turbo-2024-04-09 --endpoint https://api.openai.com/v1 --task nlu
    meditod fewshot --model meta-llama/Meta-Llama-3-8B-Instruct --task pol   # vLLM on :8000
    meditod fewshot --local_model path/to/Meta-Llama-3-8B-Instruct --task nlu   # no server
    meditod fewshot ... --dry_run      # OUT/requests.jsonl, token total and estimated cost only

`--local_model PATH` (instead of `--endpoint`) loads a Hugging Face causal LM folder with a chat
template into this process (`local_chat.LocalChat`: the same answer contract, cache and counts as
an endpoint; greedy, to EOS or the end-of-turn token). Every prompt opens with the same system
message, so its KV cache is computed once and each row continues a copy of it with its own
tokens: answers identical to a plain `generate` per row, without repeating ~2.5k tokens of
prefill per row. `--model` then only names the run (default: the folder).

Per row of the split: the `shots` train rows whose last turn is most similar (`retrieval`), the
authors' messages (`prompts`), greedy decoding with 200 new tokens. The authors' prompts go
unchanged (their code never drops an exemplar; the paper's 4096 tokens are why they chose five).
Only against a window that is known (`--context_window`, else the one the server reports, else
the tokenizer's) are exemplars that would push the prompt and the answer past it dropped, least
similar first, counted and reported; a window that cannot hold the system prompt, one exemplar,
the question and the answer is an error before anything is sent. Prompt tokens are counted with
`tokenizer` (default: the served model's own tokenizer when it is on this machine, chat template
included; for Llama 3 and OpenBioLLM, the packaged Llama-3 tokenizer, `meditod_hub.models.llama3`);
without one, the dry run's cost is estimated at 4 characters per token, and nothing is trimmed.

OUT receives `predictions.jsonl` (the evaluation contract: id, prediction, raw, parse_ok),
`results.json`/`.md`/`.png` (the kit's evaluation; the .md adds the paper's in-context row for
the same model and the share of answers that break the CMAS structure, as the paper reports
it) and `fewshot_info.json` (endpoint host, model, shots, retriever, prompt hashes, tokens, cost,
wall-clock, requests made, cache hits; never a key; a local model: its folder, device, dtype and
shared prefix length). Answers are cached as they arrive, per endpoint (`endpoint`) or local
model folder, so an interrupted run resumes and a rerun sends nothing. OUT is made only
once the answers are in: a run that fails before leaves no folder behind.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from meditod_hub import quiet
from meditod_hub.data import proof
from meditod_hub.data.base_models import BASE_MODELS
from meditod_hub.data.dataset import fingerprint, load_split
from meditod_hub.data.metrics import make_judge
from meditod_hub.data.metrics.judges import JUDGE_TIMEOUT_S
from meditod_hub.data.paper_results import IN_CONTEXT, RESULTS, paper_row
from meditod_hub.data.tasks import TASK_NAMES, Task, get_task
from meditod_hub.endpoint import (
    DEFAULT_CACHE,
    DEFAULT_TIMEOUT_S,
    PAPER_PRICES,
    REQUEST_TIMEOUT_S,
    Decoding,
    Endpoint,
    Prices,
    Request,
    endpoint_host,
)
from meditod_hub.errors import UsageError, name_ids
from meditod_hub.evaluation.fewshot import prompts
from meditod_hub.evaluation.fewshot.retrieval import (
    DEFAULT_CACHE_DIR,
    DEFAULT_RETRIEVER,
    ExemplarPool,
    Retriever,
)
from meditod_hub.evaluation.report import write_results
from meditod_hub.files import atomic_write, output_folder, read_json
from meditod_hub.models import llama3
from meditod_hub.models.constrained.processor import constraint
from meditod_hub.models.constrained.request import ServedConstraint, server_kind_for
from meditod_hub.models.constrained.vocabulary import resolve_vocabulary
from meditod_hub.models.local_chat import LocalChat, describe_constraint
from meditod_hub.models.records import Prediction, Results, write_predictions
from meditod_hub.models.runs import FEWSHOT_INFO

PAPER_MAX_TOKENS = 200
DEFAULT_ENDPOINT = "http://127.0.0.1:8000/v1"
# Served model names of the paper's in-context baselines (the registry's `served`) -> their
# rows in `paper_results` (`in-context-<key>`).
PAPER_MODELS = {m.served: m.key for m in BASE_MODELS.values()
                if m.served and any(row == IN_CONTEXT + m.key for row, _, _ in RESULTS)}


@dataclass
class FewshotArguments:
    task: str = field(metadata={"help": "nlu, pol or nlg", "choices": list(TASK_NAMES)})
    model: str | None = field(default=None, metadata={
        "help": "model name as the endpoint serves it (required with an endpoint); with "
                "--local_model, the name the run is recorded under (default: the folder)"})
    endpoint: str | None = field(default=None, metadata={
        "help": "OpenAI-compatible base URL (vLLM, TGI, transformers serve, "
                "https://api.openai.com/v1, https://router.huggingface.co/v1, Azure; default "
                f"{DEFAULT_ENDPOINT}); not with --local_model"})
    local_model: str | None = field(default=None, metadata={
        "help": "a Hugging Face causal LM folder (weights, tokenizer with a chat template) run in "
                "this process instead of a server: greedy, the shared system prompt's KV cache "
                "computed once for all rows; not with --endpoint"})
    data: str = field(default="meditod", metadata={"help": "built dataset folder or Hub id"})
    split: str = field(default="test")
    shots: int = field(default=5, metadata={"min": 1, "help": "retrieved exemplars per prompt (paper: 5)"})
    out: str | None = field(default=None, metadata={
        "help": "default runs/fewshot/MODEL/TASK (a MODEL that is a folder: its last two names "
                "joined by '-')"})
    retriever: str = field(default=DEFAULT_RETRIEVER,
                           metadata={"help": "sentence-transformers model id or folder"})
    dry_run: bool = field(default=False, metadata={
        "help": "write OUT/requests.jsonl and print tokens and cost; send nothing"})
    context_window: int | None = field(default=None, metadata={
        "min": 1, "help": "prompt + answer tokens to trim exemplars against (default: the window "
                          "the server reports, else the tokenizer's; none known: prompts go "
                          "unchanged)"})
    max_tokens: int = field(default=PAPER_MAX_TOKENS, metadata={"min": 1, "help": "new tokens per answer"})
    tokenizer: str | None = field(default=None, metadata={
        "help": "Hugging Face tokenizer that counts prompt tokens (default: --local_model's, "
                "else MODEL's when on this machine; Llama 3 and OpenBioLLM: the packaged Llama-3 "
                "tokenizer)"})
    concurrency: int = field(default=8, metadata={"min": 1, "help": "requests in flight"})
    timeout: float = field(default=DEFAULT_TIMEOUT_S, metadata={"above": 0,
        "help": "seconds for all requests, retries included (answers so far stay cached)"})
    request_timeout: float = field(default=REQUEST_TIMEOUT_S, metadata={
        "above": 0, "help": "seconds per HTTP attempt (at most --timeout)"})
    max_retries: int = field(default=4, metadata={
        "min": 0, "help": "retries per request (429/5xx/timeout)"})
    cache: str = field(default=DEFAULT_CACHE, metadata={
        "help": "answer cache (SQLite; '' asks the server again, or generates again)"})
    retrieval_cache: str = field(default=DEFAULT_CACHE_DIR,
                                 metadata={"help": "folder of cached pool embeddings"})
    api_key_env: str | None = field(default=None, metadata={
        "help": "environment variable with the endpoint's key (default: api.openai.com gets "
                "OPENAI_API_KEY, Azure AZURE_OPENAI_API_KEY, the Hub's router HF_TOKEN; any "
                "other endpoint no key)"})
    input_price: float | None = field(default=None, metadata={"min": 0,
        "help": "USD per 1M prompt tokens (default: the paper's OpenAI prices, else 0)"})
    output_price: float | None = field(default=None, metadata={"min": 0, "help": "USD per 1M answer tokens"})
    paper_model: str | None = field(default=None, metadata={
        "help": "the paper's in-context row to compare with (chatgpt, gpt-4, gpt-4-turbo, "
                "llama3-8b, llama3-70b, openbiollm-8b, openbiollm-70b); default from MODEL"})
    judge: str = field(default="exact", metadata={"help": "non-medical value judge: exact, "
                                                          "embedding or llm"})
    judge_url: str | None = field(default=None, metadata={"help": "llm judge endpoint"})
    judge_model: str | None = field(default=None, metadata={"help": "llm judge model"})
    judge_api_key_env: str | None = field(default=None, metadata={
        "help": "llm judge: environment variable with its endpoint's key (default as "
                "--api_key_env)"})
    judge_timeout: float = field(default=JUDGE_TIMEOUT_S, metadata={
        "above": 0, "help": "llm judge: seconds for the whole judging, retries included"})
    limit: int | None = field(default=None, metadata={"min": 1, "help": "only the first N rows"})
    constrained: bool = field(default=False, metadata={
        "help": "NLU/POL decode under the CMAS grammar (meditod_hub.models.constrained): by the "
                "server, or by xgrammar for --local_model; a separate setting from the paper's "
                "free decoding, with its own OUT"})
    server_kind: str | None = field(default=None, metadata={
        "help": "--constrained at an endpoint: vllm, sglang, llama.cpp (grammar), tgi or openai "
                "(JSON schema); default: openai for OpenAI's hosts, else it must be named"})
    vocabulary: str = field(default="train", metadata={
        "help": "--constrained: medical values from `train` (the training split of --data), a "
                "file (one value per line) or `none` (free)"})

    def __post_init__(self):
        """One backend: a server (its model name required, the endpoint defaulting to a local
        vLLM's) or a local model folder (which also names the run unless --model does)."""
        if self.local_model is not None:
            if self.endpoint is not None:
                raise UsageError("--endpoint and --local_model exclude each other: give the "
                                 "server's URL or the model folder to run here, not both")
            if self.server_kind is not None:
                raise UsageError("--server_kind names a server's grammar field; --local_model "
                                 "--constrained decodes under the grammar here: drop --server_kind")
            self.model = self.model or self.local_model
        elif not self.model:
            raise UsageError("give --model (the name the endpoint serves it under), or "
                             "--local_model PATH to run a model folder here")
        elif self.endpoint is None:
            self.endpoint = DEFAULT_ENDPOINT

    def out_dir(self) -> Path:
        setting = f"{self.task}-constrained" if self.constrained else self.task
        return Path(self.out) if self.out else Path("runs") / "fewshot" / model_folder(self.model) \
            / setting

    def prices(self) -> Prices:
        paper = PAPER_PRICES.get(self.model, Prices())
        return Prices(paper.input if self.input_price is None else self.input_price,
                      paper.output if self.output_price is None else self.output_price)


def model_folder(model: str) -> str:
    """The model's part of the default OUT: a Hub-style name as it is (ORG/NAME), a served folder
    (`transformers serve` names a model by its path) by its last two names, e.g.
    runs/tiny-llama/nlu -> tiny-llama-nlu, never the whole path again under runs/fewshot."""
    path = Path(model)
    if path.is_absolute() or model.startswith(".") or path.exists() or len(path.parts) > 2:
        return "-".join(path.resolve().parts[-2:])
    return model


# --- prompts, and a window to fit them in ----------------------------------------------------

class TokenCounter:
    """Prompt tokens as the model sees them: its chat template when it has one, else the
    contents plus OpenAI's per-message overhead (4 per message, 3 to prime the answer)."""

    def __init__(self, tokenizer, name: str):
        self.tokenizer = tokenizer
        self.name = name

    @classmethod
    def for_model(cls, model: str, named: str | None = None) -> TokenCounter | None:
        """`named` (`--tokenizer`, which must load), else MODEL's own tokenizer if it is on this
        machine (nothing is downloaded), else the packaged Llama-3 tokenizer for a Llama 3 or
        OpenBioLLM model; None when nothing counts this model's tokens."""
        # deferred: transformers is slow to import
        from transformers import AutoTokenizer


        if named:
            try:
                return cls(AutoTokenizer.from_pretrained(named), named)
            except (OSError, ValueError) as exc:
                raise UsageError(f"cannot load a tokenizer for {named!r} to count prompt tokens "
                                 f"({type(exc).__name__}): pass --tokenizer with a Hugging Face "
                                 "tokenizer id or folder that matches the model") from None
        try:
            return cls(AutoTokenizer.from_pretrained(model, local_files_only=True), model)
        except (OSError, ValueError):
            pass
        if llama3.is_llama3(model):
            return cls(llama3.llama3_tokenizer(), llama3.NAME)
        return None

    def window(self) -> int | None:
        """The tokenizer's own maximum length, when it states one."""
        n = getattr(self.tokenizer, "model_max_length", None)
        return n if isinstance(n, int) and 0 < n < 10_000_000 else None

    def __call__(self, messages: list[dict]) -> int:
        if self.tokenizer.chat_template:
            return len(self.tokenizer.apply_chat_template(messages, add_generation_prompt=True,
                                                          tokenize=True, return_dict=True)["input_ids"])
        contents = self.tokenizer([m["content"] for m in messages], add_special_tokens=False)
        return sum(map(len, contents["input_ids"])) + 4 * len(messages) + 3


CHARS_PER_TOKEN = 4


def estimated_tokens(messages: list[dict]) -> int:
    """4 characters per token plus OpenAI's message overhead: prices a dry run, trims nothing."""
    return sum(-(-len(m["content"]) // CHARS_PER_TOKEN) for m in messages) + 4 * len(messages) + 3


@dataclass
class Window:
    """The context window prompts are trimmed against, and where it is known from."""

    tokens: int
    source: str  # --context_window, the server, the tokenizer


def known_window(args: FewshotArguments, counter: TokenCounter | None,
                 endpoint: Endpoint | LocalChat | None) -> Window | None:
    """`--context_window`, else the server's reported length (a local model: its config's; not
    asked in a dry run), else the tokenizer's; None when none is known (the prompts then go
    unchanged)."""
    if args.context_window is not None:
        if counter is None:
            raise UsageError(f"--context_window {args.context_window} needs a tokenizer to count "
                             f"prompt tokens and none is known for {args.model}: pass --tokenizer")
        return Window(args.context_window, "--context_window")
    served = endpoint.context_length() if endpoint else None
    if served and counter is None:
        print(f"note: {endpoint.host} serves {args.model} with a {served}-token window, but no "
              "tokenizer counts its tokens, so no prompt is trimmed (pass --tokenizer to trim)",
              file=sys.stderr)
        return None
    if served:
        return Window(served, f"reported by {endpoint.host}")
    own = counter.window() if counter else None
    return Window(own, f"tokenizer {counter.name}") if own else None


@dataclass
class Prompt:
    id: str
    messages: list[dict]
    tokens: int | None  # None: no tokenizer counts this model's tokens
    exemplar_ids: list[str]
    dropped: int  # exemplars left out to fit the window


def build_prompts(task: Task, rows: list[dict], pool: ExemplarPool, shots: int,
                  count: TokenCounter | None, window: Window | None, max_tokens: int
                  ) -> list[Prompt]:
    """One prompt per row with its `shots` most similar exemplars, as the authors sent them;
    against a known window, the least similar exemplars that do not fit are left out (counted),
    and a row that cannot fit with one is an error."""
    out, unfit = [], []
    for row, found in zip(rows, pool.search(rows, shots)):
        exemplars = [pool.rows[i] for i in found]
        messages = prompts.messages(task, row, exemplars)
        tokens = count(messages) if count else None
        if window is not None:
            while tokens + max_tokens > window.tokens and len(exemplars) > 1:
                exemplars = exemplars[:-1]  # the least similar goes first
                messages = prompts.messages(task, row, exemplars)
                tokens = count(messages)
            if tokens + max_tokens > window.tokens:
                unfit.append((row["id"], tokens))
                continue
        out.append(Prompt(row["id"], messages, tokens, [e["id"] for e in exemplars],
                          len(found) - len(exemplars)))
    if unfit:
        need = max(tokens for _, tokens in unfit) + max_tokens
        raise UsageError(
            f"a context window of {window.tokens} tokens ({window.source}) is smaller than one "
            f"exemplar: the system prompt, one exemplar, the question and {max_tokens} answer "
            f"tokens need up to {need} for {len(unfit)} row(s) ({name_ids([i for i, _ in unfit], 3)}"
            "): raise --context_window or serve a model with a longer context")
    return out


def prompt_hashes(task: Task, built: list[Prompt]) -> dict:
    every = hashlib.sha256()
    for prompt in built:
        every.update(json.dumps(prompt.messages).encode())
    return {"system_prompt_sha256": hashlib.sha256(prompts.system_prompt(task).encode()).hexdigest(),
            "requests_sha256": every.hexdigest()}


# --- output files ------------------------------------------------------------------------------

OUT_FILES = (FEWSHOT_INFO, "requests.jsonl", "predictions.jsonl", "results.json",
             "results.md", "results.png")


def claim_out(args: FewshotArguments, out: Path) -> None:
    """OUT may hold this run's earlier files, never another run's (nor any file the kit's
    few-shot did not write: `files.output_folder`); a dry run never lands on a real run's
    results. Nothing is created here: OUT is made when there is something to write."""
    output_folder(out, OUT_FILES, purpose="fewshot", input_folders=[args.data])
    info = out / FEWSHOT_INFO
    if info.exists():
        old = read_json(info, fix="it is not a few-shot run of this kit: choose another --out")
        mine = {"model": args.model, "task": args.task, "split": args.split,
                "constrained": args.constrained}
        theirs = {k: old.get(k, False if k == "constrained" else None) for k in mine}
        if theirs != mine:
            raise UsageError(f"{out} holds another few-shot run ({theirs}); choose another --out")
        if args.dry_run and (out / "predictions.jsonl").exists():
            raise UsageError(f"{out} holds this run's results: dry-run into another --out, so "
                             "its requests never sit beside real answers")
    elif out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"{out} is not empty and holds no few-shot run; choose another --out")


def structure_violations(task: Task, records: list[Prediction]) -> int:
    """Answers that do not parse or break the CMAS structure (the paper's POL count)."""
    if not task.structured:
        return sum(not r.parse_ok for r in records)
    return sum(not r.parse_ok or bool(task.label_errors(r.prediction))
               for r in records)


# --- the kit's evaluation: the one place this module calls into it --------------------------

def score(args: FewshotArguments, task: Task, rows: list[dict], records: list[Prediction],
          out: Path) -> Results:
    """predictions.jsonl, then results.json/.md/.png through the task's `score`."""
    write_predictions(records, out / "predictions.jsonl", purpose="fewshot")
    judge = make_judge(args.judge, model=args.judge_model, base_url=args.judge_url,
                       api_key_env=args.judge_api_key_env, timeout=args.judge_timeout)
    scores = task.score(rows, [r.label for r in records], judge=judge)
    scores["constrained"] = args.constrained
    violations = structure_violations(task, records)
    scores["structure_violations"] = {"count": violations,
                                      "share": violations / len(records) if records else 0.0}
    results = Results(args.task, args.split, scores, **proof.record(args.data))
    write_results(results, out / "results.json", purpose="fewshot",
                  system=f"{args.model or Path(str(args.local_model)).name} (in-context)")
    with (out / "results.md").open("a", encoding="utf-8") as md:
        md.write("\n" + beside_the_paper(args, task, results) + "\n")
    return results


def paper_key(args: FewshotArguments) -> str | None:
    name = args.paper_model or PAPER_MODELS.get(args.model)
    return f"in-context-{name}" if name else None


def beside_the_paper(args: FewshotArguments, task: Task, results: Results) -> str:
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
    for metric in task.metrics:
        if metric.key in paper:
            ours = results.value(metric.key)
            cell = "–" if ours is None else format(ours, metric.fmt)
            lines.append(f"| {metric.name} | {cell} | {format(paper[metric.key], metric.fmt)} |")
    return "\n".join(lines)


# --- the command -----------------------------------------------------------------------------

def run(args: FewshotArguments) -> dict:
    """The whole few-shot run; returns what FEWSHOT_INFO records."""
    if args.shots < 1:
        raise UsageError(f"--shots must be at least 1, got {args.shots}")
    started = time.perf_counter()
    task = get_task(args.task)
    served = local = None  # the constraint a server enforces, or one enforced here
    if args.constrained:
        if args.local_model:
            local = constraint("fewshot", task, resolve_vocabulary(args.vocabulary, args.data))
        else:
            served = ServedConstraint(server_kind_for(args.endpoint, args.server_kind),
                                      "fewshot", task, resolve_vocabulary(args.vocabulary, args.data))
    train = load_split(args.data, args.task, "train")
    if args.shots > len(train):  # fewer would be sent than fewshot_info.json records
        raise UsageError(f"--shots {args.shots}: the train split of {args.data} has "
                         f"{len(train)} {args.task} rows to retrieve exemplars from: give at most "
                         f"--shots {len(train)}")
    out = args.out_dir()
    claim_out(args, out)
    prices = args.prices()
    answerer = None if args.dry_run else backend(args, prices, local)
    rows = load_split(args.data, args.task, args.split)[:args.limit]
    pool = ExemplarPool(Retriever(args.retriever), args.task, train, fingerprint(args.data),
                        args.retrieval_cache)
    counter = TokenCounter.for_model(args.local_model or args.model, args.tokenizer)
    window = known_window(args, counter, answerer)
    built = build_prompts(task, rows, pool, args.shots, counter, window, args.max_tokens)
    decoding = Decoding(max_tokens=args.max_tokens,
                        extra_body=served.extra_body() if served else None)
    prompt_tokens = sum(p.tokens if p.tokens is not None else estimated_tokens(p.messages)
                        for p in built)
    trimmed = [p for p in built if p.dropped]
    if trimmed:
        print(f"note: {len(trimmed)} of {len(built)} prompts left out "
              f"{sum(p.dropped for p in trimmed)} exemplar(s) to fit the {window.tokens}-token "
              f"window ({window.source}); fewshot_info.json lists them", file=sys.stderr)
    info = {"model": args.model, "task": args.task, "split": args.split, "data": str(args.data),
            "rows": len(rows), "shots": args.shots, "retriever": pool.describe(),
            "token_counter": counter.name if counter else
            f"none (the cost is estimated at {CHARS_PER_TOKEN} characters per token)",
            "decoding": {k: v for k, v in asdict(decoding).items() if k != "extra_body"},
            "constrained": args.constrained,
            **({"constraint": served.describe()} if served else {}),
            **({"constraint": describe_constraint(local)} if local else {}),
            "budget": {"context_window": window.tokens if window else None,
                       "window_from": window.source if window else None,
                       "rows_with_fewer_exemplars": len(trimmed),
                       "exemplars_dropped": sum(p.dropped for p in built),
                       "trimmed": {p.id: p.dropped for p in trimmed}},
            **prompt_hashes(task, built), "paper_row": paper_key(args)}
    estimate = prices.cost(prompt_tokens, len(built) * args.max_tokens)
    if args.dry_run:
        out.mkdir(parents=True, exist_ok=True)
        atomic_write(out / "requests.jsonl", "".join(
            json.dumps({"id": p.id, "messages": p.messages, "prompt_tokens": p.tokens}) + "\n"
            for p in built), purpose="fewshot")
        info.update(dry_run=True, estimated_prompt_tokens=prompt_tokens,
                    estimated_cost_usd=estimate,
                    **({"local_model": str(Path(args.local_model).resolve())} if args.local_model
                       else {"endpoint": endpoint_host(args.endpoint)}))
        counted = "" if counter else " (estimated)"
        print(f"{len(built)} requests, {prompt_tokens} prompt tokens{counted} (+ at most "
              f"{len(built) * args.max_tokens} answer tokens); estimated cost <= ${estimate:.2f} "
              f"at ${prices.input:g}/${prices.output:g} per 1M tokens -> {out / 'requests.jsonl'}")
        atomic_write(out / FEWSHOT_INFO, json.dumps(info, indent=2) + "\n", purpose="fewshot")
        return info

    answers = answerer.complete([Request(p.id, messages=p.messages) for p in built], decoding,
                                desc=f"{args.task} {args.model}")
    out.mkdir(parents=True, exist_ok=True)
    (out / "requests.jsonl").unlink(missing_ok=True)  # a dry run's, now answered
    info.update(**answerer.describe(), estimated_cost_usd=estimate)
    atomic_write(out / FEWSHOT_INFO, json.dumps(info, indent=2) + "\n",
                 purpose="fewshot")  # claims OUT
    records = []
    for row in rows:
        raw = answers[row["id"]].text
        parsed = prompts.parse_answer(task, served.answer(raw) if served else raw)
        records.append(Prediction(row["id"], parsed.value, parsed.ok, raw, parsed.reason,
                                  args.constrained))
    results = score(args, task, rows, records, out)
    info.update(parse_failures=sum(not r.parse_ok for r in records),
                structure_violations=results.scores["structure_violations"],
                run_wall_clock_s=time.perf_counter() - started)
    atomic_write(out / FEWSHOT_INFO, json.dumps(info, indent=2) + "\n", purpose="fewshot")
    headline = task.headline_metric
    stats = answerer.stats
    print(f"{headline.name} {format(results.value(headline.key), headline.fmt)}"
          + f"; {stats.requests} {'generated' if args.local_model else 'requests'}, "
            f"{stats.cache_hits} cached, "
            f"{stats.prompt_tokens + stats.completion_tokens} tokens, ${stats.cost_usd:.4f} -> {out}")
    return info


def backend(args: FewshotArguments, prices: Prices, constraint) -> Endpoint | LocalChat:
    """What answers the prompts: the local model folder loaded here (decoding under
    `constraint`, a `constrained.processor.Constraint`, when given), else the endpoint."""
    if args.local_model:
        quiet.progress_bars_off()  # transformers is imported only now: one line per stage
        return LocalChat.load(args.local_model, name=args.model, cache=args.cache,
                              constraint=constraint, progress=True)
    return Endpoint(args.endpoint, args.model, api_key_env=args.api_key_env,
                    concurrency=args.concurrency, timeout=args.timeout,
                    request_timeout=args.request_timeout, max_retries=args.max_retries,
                    cache=args.cache, prices=prices, progress=True)
