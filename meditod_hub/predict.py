"""Batched greedy inference of a trained run into the predictions file that evaluation reads.

    meditod predict --model_path runs/llama3-8b/nlu --task nlu --data meditod --split test \\
        --out runs/llama3-8b/nlu/eval/test/predictions.jsonl
    # a Hub model at a revision; one without run_info.json needs its family named
    meditod predict --model_path my-org/meditod-llama3-nlu --revision v1 --task nlu ...

One JSON line per example (`records.Prediction`), the prediction parsed with the family's
parser; an output that does not parse is counted and reported, never a crash. The model is
reached through `predictor` (the one way every command reaches one): inputs are built exactly as
in training, with the token budget training recorded in run_info.json unless a flag overrides it.
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .cli import parse_args
from .endpoint import DEFAULT_CACHE, DEFAULT_TIMEOUT_S
from .errors import UsageError, run_main
from .families import FAMILY_NAMES
from .files import output_path
from .predictor import DecodeOptions, ModelSpec, load_predictor
from .records import Prediction, read_predictions, write_predictions
from .tasks import TASK_NAMES, get_task


@dataclass
class PredictArguments:
    model_path: str = field(metadata={"help": "run folder, model folder or Hub id"})
    task: str = field(metadata={"help": "nlu, pol or nlg", "choices": list(TASK_NAMES)})
    out: Path = field(metadata={"help": "predictions .jsonl to write"})
    data: str = field(default="meditod", metadata={"help": "built dataset folder or Hub id"})
    split: str = field(default="test", metadata={"help": "train, validation, test or test_ood"})
    revision: str | None = field(default=None, metadata={
        "help": "Hub ids only: a branch, tag or commit"})
    family: str | None = field(default=None, metadata={
        "help": "default: the run's run_info.json", "choices": list(FAMILY_NAMES)})
    batch_size: int = field(default=16, metadata={"min": 1, "help": "rows per generate call"})
    max_length: int | None = field(default=None, metadata={
        "min": 1, "help": "default: the budget the run trained with (run_info.json)"})
    max_new_tokens: int | None = field(default=None, metadata={
        "min": 1, "help": "default: the budget the run trained with (run_info.json)"})
    load_in_4bit: bool | None = field(default=None, metadata={
        "help": "default: 4-bit iff the run was trained on a 4-bit base"})
    limit: int | None = field(default=None, metadata={"min": 1, "help": "only the first N rows (smoke runs)"})
    upstream: Path | None = field(default=None, metadata={
        "help": "cascade: predictions of the task before (NLU for pol: the state is folded from "
                "them; POL for nlg: their actions replace the gold ones) instead of gold inputs"})
    endpoint: str | None = field(default=None, metadata={
        "help": "OpenAI-compatible base URL serving the model (vLLM, TGI, transformers serve): "
                "the same prompts, sent there (meditod_hub.served)"})
    served_model: str | None = field(default=None, metadata={
        "help": "the model's name at --endpoint (default: --model_path)"})
    api_key_env: str | None = field(default=None, metadata={
        "help": "--endpoint: environment variable with its key (default: none for a server of "
                "your own; api.openai.com, Azure and the Hub's router get their own)"})
    timeout: float = field(default=DEFAULT_TIMEOUT_S, metadata={"above": 0,
        "help": "--endpoint: seconds for all requests, retries included (answers so far stay "
                "cached)"})
    cache: str = field(default=DEFAULT_CACHE, metadata={
        "help": "--endpoint: answer cache (SQLite; '' asks the server again)"})


def parse_failure_summary(records: list[Prediction]) -> str:
    """Counts only: parser reasons name positions and markers, never dialogue text."""
    failed = [r for r in records if not r.parse_ok]
    lines = [f"{len(records)} predictions, {len(failed)} did not parse"]
    lines += [f"  {n} x {reason}" for reason, n in Counter(r.reason for r in failed).most_common(5)]
    return "\n".join(lines)


def cascade_rows(task: str, rows: list[dict], upstream: str | Path) -> list[dict]:
    """Rows whose inputs come from the previous task's predictions (the paper's pipeline)."""
    spec = get_task(task)
    if spec.upstream is None:
        raise UsageError("--upstream needs --task pol (NLU predictions) or nlg (POL "
                         f"predictions); {task} reads no other task's predictions")
    labels = {i: p.label for i, p in read_predictions(upstream).items()}
    return spec.cascade_rows(rows, labels)


def model_spec(args: PredictArguments) -> ModelSpec:
    return ModelSpec(args.model_path, args.family, args.revision, args.endpoint,
                     args.served_model, args.load_in_4bit,
                     DecodeOptions(args.batch_size, args.max_length, args.max_new_tokens),
                     endpoint_options={"api_key_env": args.api_key_env,
                                       "timeout": args.timeout, "cache": args.cache})


def load_rows(data: str, task: str, split: str) -> list[dict]:
    """One config and split of a built dataset (folder or Hub id), as a list of rows."""
    from .dataset import load_split

    return load_split(data, task, split)


def main(argv: list[str]) -> int:
    (args,) = parse_args((PredictArguments,), argv, "meditod predict", __doc__.split("\n\n")[0])
    out = output_path(args.out, purpose="predict", inputs=[args.upstream],
                      input_folders=[args.data])
    rows = load_rows(args.data, args.task, args.split)[:args.limit]
    if args.upstream:
        rows = cascade_rows(args.task, rows, args.upstream)
    records = load_predictor(model_spec(args), args.task).predict(rows, progress=True)
    write_predictions(records, out, purpose="predict")
    print(parse_failure_summary(records), file=sys.stderr)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
