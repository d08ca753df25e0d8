"""Batched greedy inference of a trained run into the predictions file that evaluation reads.

    meditod predict --model_path runs/llama3-8b/nlu --task nlu --data meditod --split test \\
        --out runs/llama3-8b/nlu/eval/test/predictions.jsonl
    # a Hub adapter or model without run_info.json: name the family
    meditod predict --model_path my-org/meditod-llama3-nlu --family llama --task nlu ...

One JSON line per example (`records.Prediction`), the prediction parsed with the family's
parser; an output that does not parse is counted and reported, never a crash. A LoRA adapter
(local folder or Hub id) is loaded on the base model its adapter config names; a run trained on
a 4-bit base is served on the same 4-bit base. Inputs are built exactly as in training (the
family's prompt, the run's `recipe.yaml` budgets). Only what the run needs is imported: PEFT
only for an adapter, bitsandbytes only for a 4-bit base.
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .cli import parse_args
from .errors import UsageError, run_main
from .families import FAMILY_NAMES, Budget, Family, get_family
from .files import output_path
from .formats.fit import BudgetError
from .records import Prediction, read_predictions, write_predictions
from .runs import CHECKPOINTS, run_settings, run_tasks
from .tasks import TASK_NAMES, get_task


@dataclass
class PredictArguments:
    model_path: str = field(metadata={"help": "run folder, model folder or Hub id"})
    task: str = field(metadata={"help": "nlu, pol or nlg", "choices": list(TASK_NAMES)})
    out: Path = field(metadata={"help": "predictions .jsonl to write"})
    data: str = field(default="meditod", metadata={"help": "built dataset folder or Hub id"})
    split: str = field(default="test", metadata={"help": "train, validation, test or test_ood"})
    family: str | None = field(default=None, metadata={
        "help": "default: the run's run_info.json", "choices": list(FAMILY_NAMES)})
    batch_size: int = 16
    max_length: int | None = field(default=None, metadata={"help": "default: the run's recipe"})
    max_new_tokens: int | None = field(default=None, metadata={"help": "default: the run's recipe"})
    load_in_4bit: bool | None = field(default=None, metadata={
        "help": "default: 4-bit iff the run was trained on a 4-bit base"})
    limit: int | None = field(default=None, metadata={"help": "only the first N rows (smoke runs)"})
    upstream: Path | None = field(default=None, metadata={
        "help": "cascade: predictions of the task before (NLU for pol: the state is folded from "
                "them; POL for nlg: their actions replace the gold ones) instead of gold inputs"})
    endpoint: str | None = field(default=None, metadata={
        "help": "OpenAI-compatible base URL serving the model (vLLM, TGI, transformers serve): "
                "the same prompts, sent there (meditod_hub.served)"})
    served_model: str | None = field(default=None, metadata={
        "help": "the model's name at --endpoint (default: --model_path)"})


def torch_threads(threads: int | None = None) -> int:
    """Torch's CPU thread count in this thread; with `threads`, set it first. A server answers
    in worker threads, whose OpenMP count is the machine's, not the one the model was loaded
    under: a different reduction order can flip a near-tied greedy step."""
    import torch

    if threads is not None:
        torch.set_num_threads(threads)
    return torch.get_num_threads()


def generate_texts(model, tokenizer, prompts: list[list[int]], max_new_tokens: int,
                   stops: list[int], batch_size: int = 16, progress: bool = False,
                   streamer=None) -> list[str]:
    """Greedy completions of token-id prompts, in input order.

    Prompts are batched longest first (less padding, and an out-of-memory shows at once);
    decoders are left-padded so every answer starts right after its prompt. A transformers
    `streamer` sees the text as it is generated (one prompt only: streamers take one sequence).
    """
    if streamer is not None and len(prompts) > 1:
        raise ValueError("a streamer follows one prompt at a time")
    import torch
    from tqdm.auto import tqdm

    decoder = not model.config.is_encoder_decoder
    order = sorted(range(len(prompts)), key=lambda i: -len(prompts[i]))
    texts: list[str] = [""] * len(prompts)
    was_training = model.training
    model.eval()
    with torch.no_grad():
        for start in tqdm(range(0, len(order), batch_size), desc="generating",
                          disable=not progress):
            chunk = order[start:start + batch_size]
            batch = tokenizer.pad({"input_ids": [prompts[i] for i in chunk]}, return_tensors="pt",
                                  padding_side="left" if decoder else "right").to(model.device)
            out = model.generate(**batch, max_new_tokens=max_new_tokens, do_sample=False,
                                 num_beams=1, eos_token_id=stops,
                                 pad_token_id=tokenizer.pad_token_id, streamer=streamer)
            new = out[:, batch["input_ids"].shape[1]:] if decoder else out
            for i, text in zip(chunk, tokenizer.batch_decode(new, skip_special_tokens=True)):
                texts[i] = text.strip()
    model.train(was_training)
    return texts


def predict_rows(model, tokenizer, family: Family, task: str, rows: list[dict], budget: Budget,
                 batch_size: int = 16, progress: bool = False,
                 streamer=None) -> list[Prediction]:
    """Prediction records (the evaluation contract) for dataset rows.

    A row whose fixed input parts alone overflow the budget is not generated: it is recorded
    as a failed prediction with the reason, like any output that does not parse.
    """
    prompts, unfit = {}, {}
    for i, row in enumerate(rows):
        try:
            prompts[i] = family.prompt(task, row, tokenizer, budget).input_ids
        except BudgetError as exc:
            unfit[i] = f"input does not fit: {exc}"
    raws = dict(zip(prompts, generate_texts(model, tokenizer, list(prompts.values()),
                                            budget.max_new_tokens, family.stop_token_ids(tokenizer),
                                            batch_size, progress, streamer)))
    empty = get_task(task).empty_label
    records = []
    for i, row in enumerate(rows):
        if i in raws:
            parsed = family.parse(task, raws[i])
            records.append(Prediction(row["id"], parsed.value, parsed.ok, raws[i], parsed.reason))
        else:
            records.append(Prediction(row["id"], empty, False, "", unfit[i]))
    return records


def is_adapter(model_path: str) -> bool:
    if Path(model_path).is_dir():
        return (Path(model_path) / "adapter_config.json").is_file()
    from peft import PeftConfig  # a Hub id: ask the Hub (PEFT reads only adapter_config.json)

    try:
        PeftConfig.from_pretrained(model_path)
    except (ValueError, OSError):
        return False
    return True


def load_model(model_path: str, family: Family, load_in_4bit: bool = False):
    """Model and tokenizer; an adapter brings its base model (named in its adapter config)."""
    from transformers import AutoTokenizer

    model = family.auto_model(is_adapter(model_path)).from_pretrained(
        model_path, **load_kwargs(load_in_4bit))
    return model, AutoTokenizer.from_pretrained(model_path)


def load_kwargs(load_in_4bit: bool = False) -> dict:
    """`from_pretrained` settings of every inference load (also a shared base's,
    `adapters.SharedModels`): bf16 on a GPU, NF4 4-bit for a run trained on a 4-bit base."""
    import torch

    cuda = torch.cuda.is_available()
    kwargs = {"device_map": "auto"} if cuda else {}
    if load_in_4bit:
        from transformers import BitsAndBytesConfig

        kwargs["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4",
            bnb_4bit_compute_dtype=torch.bfloat16 if cuda else torch.float32)
    elif cuda:
        kwargs["dtype"] = torch.bfloat16
    return kwargs


def check_model_path(model_path: str) -> None:
    """A local path must be a model folder; anything not shaped like ORG/NAME is local."""
    path = Path(model_path)
    if path.name == CHECKPOINTS and path.is_dir():
        raise UsageError(f"{path} holds trainer checkpoints: give the run folder {path.parent} "
                         "(or one checkpoint-N folder inside it)")
    if path.is_dir():
        if not any((path / f).is_file() for f in ("config.json", "adapter_config.json")):
            raise UsageError(f"{path} is not a model folder (no config.json or "
                             "adapter_config.json): give a run folder or a Hub model id")
    elif path.exists():
        raise UsageError(f"{path} is a file: give a run folder, model folder or Hub model id")
    elif not _hub_shaped(model_path):
        raise UsageError(f"no such folder: {path}")


def _hub_shaped(name: str) -> bool:
    parts = name.split("/")
    return len(parts) == 2 and all(parts) and not name.startswith((".", "~"))


def parse_failure_summary(records: list[Prediction]) -> str:
    """Counts only: parser reasons name positions and markers, never dialogue text."""
    failed = [r for r in records if not r.parse_ok]
    lines = [f"{len(records)} predictions, {len(failed)} did not parse"]
    lines += [f"  {n} x {reason}" for reason, n in Counter(r.reason for r in failed).most_common(5)]
    return "\n".join(lines)


def cascade_rows(task: str, rows: list[dict], upstream: str | Path) -> list[dict]:
    """Rows whose inputs come from the previous task's predictions (the paper's pipeline)."""
    from .views import cascade_nlg_rows, cascade_pol_rows

    if task == "nlu":
        raise UsageError("--upstream needs --task pol (NLU predictions) or nlg (POL predictions)")
    labels = {i: p.label for i, p in read_predictions(upstream).items()}
    return cascade_pol_rows(rows, labels) if task == "pol" else cascade_nlg_rows(rows, labels)


def resolve(args: PredictArguments) -> tuple[Family, Budget, bool]:
    """The family, budgets and quantisation: explicit flags, then the run's files."""
    info, recipe = run_settings(args.model_path)
    if "family" not in info and args.family is None:
        raise UsageError(f"{args.model_path} has no run_info.json: pass --family "
                         f"({', '.join(FAMILY_NAMES)})")
    if "task" in info and args.task not in run_tasks(info):  # multi-task runs answer all three
        raise UsageError(f"{args.model_path} was trained for {info['task']}, not {args.task}")
    family = get_family(args.family or info["family"])
    budget = family.budget(recipe, args.max_length, args.max_new_tokens)
    quantized = info.get("quantization") is not None if args.load_in_4bit is None \
        else args.load_in_4bit
    return family, budget, quantized


def load_rows(data: str, task: str, split: str) -> list[dict]:
    """One config and split of a built dataset (folder or Hub id), as a list of rows."""
    from .dataset import load_split

    return load_split(data, task, split)


def main(argv: list[str]) -> int:
    (args,) = parse_args((PredictArguments,), argv, "meditod predict", __doc__.split("\n\n")[0])
    if not args.endpoint:
        check_model_path(args.model_path)
    out = output_path(args.out, inputs=[args.upstream] if args.upstream else [],
                      what="--out")
    family, budget, quantized = resolve(args)
    rows = load_rows(args.data, args.task, args.split)[:args.limit]
    if args.upstream:
        rows = cascade_rows(args.task, rows, args.upstream)
    if args.endpoint:
        from transformers import AutoTokenizer

        from .endpoint import Endpoint
        from .served import predict_rows_via_endpoint

        tokenizer = AutoTokenizer.from_pretrained(args.model_path) \
            if family.served_as == "completion" else None
        endpoint = Endpoint(args.endpoint, args.served_model or args.model_path, progress=True)
        records = predict_rows_via_endpoint(endpoint, family, args.task, rows, budget, tokenizer)
    else:
        model, tokenizer = load_model(args.model_path, family, quantized)
        records = predict_rows(model, tokenizer, family, args.task, rows, budget,
                               args.batch_size, progress=True)
    write_predictions(records, out)
    print(parse_failure_summary(records), file=sys.stderr)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
