"""Batched greedy inference of a trained run into the predictions file that evaluation reads.

    meditod predict --model_path runs/llama3-8b/nlu --task nlu --split test
    # -> runs/llama3-8b/nlu/eval/test/predictions.jsonl, on the dataset the run was trained on
    # a Hub model at a revision; one without run_info.json needs its family named
    meditod predict --model_path my-org/meditod-llama3-nlu --revision v1 --task nlu ...

`--out` is a folder, as Make's OUT (a path ending in .jsonl names the file); `--data` defaults
to the run's own dataset, and another one is said on stderr. One JSON line per example
(`records.Prediction`), the prediction parsed with the family's parser; an output that does not
parse is counted and reported, never a crash. The model is reached through `predictor` (the one
way every command reaches one): inputs are built exactly as in training, with the token budget
training recorded in run_info.json unless a flag overrides it.

The command, in one module: `PredictArguments` are its flags; `main` settles where the
predictions go and which data they are made on, then runs the Predictor
(`predictor.load_predictor`) over the split.
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from meditod_hub.arguments import parse_args
from meditod_hub.data.dataset import load_split
from meditod_hub.data.tasks import MULTITASK, TASK_NAMES, Task, get_task
from meditod_hub.endpoint import DEFAULT_CACHE, DEFAULT_TIMEOUT_S
from meditod_hub.errors import UsageError, run_main
from meditod_hub.files import output_path
from meditod_hub.models.constrained.vocabulary import resolve_vocabulary
from meditod_hub.models.families import FAMILY_NAMES
from meditod_hub.models.predictor import DecodeOptions, ModelSpec, load_predictor
from meditod_hub.models.records import (
    Prediction,
    file_in,
    predictions_name,
    read_predictions,
    write_predictions,
)
from meditod_hub.models.runs import choose_data, run_of, run_settings, trained_data


@dataclass
class PredictArguments:
    model_path: str = field(metadata={"help": "run folder, model folder or Hub id"})
    task: str = field(metadata={"help": "nlu, pol or nlg", "choices": list(TASK_NAMES)})
    out: Path | None = field(default=None, metadata={
        "help": "folder for predictions.jsonl (predictions-constrained.jsonl with --constrained),"
                " as Make's OUT; a path ending in .jsonl names the file (default: a run's "
                "eval/<split>)"})
    data: str | None = field(default=None, metadata={
        "help": "built dataset folder or Hub id (default: the one the run was trained on, else "
                "./meditod)"})
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
        "help": "default: 4-bit iff the run was trained on a 4-bit base and a CUDA GPU is "
                "here (true is refused without one)"})
    limit: int | None = field(default=None, metadata={"min": 1, "help": "only the first N rows (smoke runs)"})
    upstream: Path | None = field(default=None, metadata={
        "help": "cascade: predictions of the task before (NLU for pol: the state is folded from "
                "them; POL for nlg: their actions replace the gold ones) instead of gold inputs"})
    endpoint: str | None = field(default=None, metadata={
        "help": "OpenAI-compatible base URL serving the model (vLLM, TGI, transformers serve): "
                "the same prompts, sent there (meditod_hub.models.served)"})
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
    constrained: bool = field(default=False, metadata={
        "help": "decode NLU/POL under the CMAS grammar, so every output parses "
                "(meditod_hub.models.constrained; off by default, as in the paper)"})
    vocabulary: str = field(default="train", metadata={
        "help": "--constrained: medical values from `train` (the training split of --data), a "
                "file (one value per line) or `none` (free)"})
    server_kind: str | None = field(default=None, metadata={
        "help": "--endpoint --constrained: the server (vllm, sglang, tgi, llama.cpp, openai), "
                "which says how the grammar is sent (default: openai for OpenAI's hosts)"})


def parse_failure_summary(records: list[Prediction]) -> str:
    """Counts only: parser reasons name positions and markers, never dialogue text."""
    failed = [r for r in records if not r.parse_ok]
    lines = [f"{len(records)} predictions, {len(failed)} did not parse"]
    lines += [f"  {n} x {reason}" for reason, n in Counter(r.reason for r in failed).most_common(5)]
    return "\n".join(lines)


def cascade_rows(task: Task, rows: list[dict], upstream: str | Path) -> list[dict]:
    """Rows whose inputs come from the previous task's predictions (the paper's pipeline)."""
    if task.upstream is None:
        raise UsageError("--upstream needs --task pol (NLU predictions) or nlg (POL "
                         f"predictions); {task.name} reads no other task's predictions")
    labels = {i: p.label for i, p in read_predictions(upstream, get_task(task.upstream)).items()}
    return task.cascade_rows(rows, labels)


def decode_options(args: PredictArguments) -> DecodeOptions:
    """The decoding flags; with `--constrained`, the vocabulary read once here."""
    vocabulary = None
    if args.constrained:
        vocabulary = resolve_vocabulary(args.vocabulary, args.data)
    return DecodeOptions(args.batch_size, args.max_length, args.max_new_tokens,
                         args.constrained, vocabulary, args.server_kind)


def model_spec(args: PredictArguments) -> ModelSpec:
    return ModelSpec(args.model_path, args.family, args.revision, args.endpoint,
                     args.served_model, args.load_in_4bit, decode_options(args),
                     endpoint_options={"api_key_env": args.api_key_env,
                                       "timeout": args.timeout, "cache": args.cache})


def describe_constraint(predictor) -> str:
    """Which grammar and vocabulary a constrained run decodes under (one stderr line)."""
    vocabulary = predictor.decode.vocabulary
    values = "free" if vocabulary is None else f"{len(vocabulary)} canonical"
    return (f"constrained: the {predictor.constraint.fmt} grammar of {predictor.task.name}, {values} "
            "medical values")


def main(argv: list[str]) -> int:
    (args,) = parse_args((PredictArguments,), argv, "meditod predict",
                         __doc__.split("\n\n")[0])
    run = run_of(args.model_path) if Path(args.model_path).is_dir() else None
    if args.out is None and run is None:
        raise UsageError("--out: give the folder for the predictions (the model is not a run "
                         "folder, whose eval/<split> is the default)")
    if args.out is None:  # the run's own evaluation folder (`runs.Run.eval_folder`)
        args.out = run / "eval" / args.split
        if run_settings(run)[0].get("task") == MULTITASK:
            args.out = args.out / args.task
    args.out = file_in(args.out, predictions_name(args.constrained), ".jsonl")
    args.data, notes = choose_data(args.data, {"the model": trained_data(args.model_path)})
    for note in notes:
        print(note, file=sys.stderr)
    out = output_path(args.out, purpose="predict", inputs=[args.upstream],
                      input_folders=[args.data])
    task = get_task(args.task)
    rows = load_split(args.data, task.name, args.split)[:args.limit]
    if args.upstream:
        rows = cascade_rows(task, rows, args.upstream)
    predictor = load_predictor(model_spec(args), task)
    if predictor.constraint is not None:
        print(describe_constraint(predictor), file=sys.stderr)
    records = predictor.predict(rows, progress=True)
    write_predictions(records, out, purpose="predict")
    print(parse_failure_summary(records), file=sys.stderr)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main, sys.argv[1:]))
