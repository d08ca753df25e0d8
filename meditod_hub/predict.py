"""Batched greedy inference of a trained run into the predictions file that evaluation reads.

    python -m meditod_hub.predict --model_path runs/llama3-8b/nlu --task nlu --data meditod \\
        --split test --out runs/llama3-8b/nlu/eval/test/predictions.jsonl
    # a Hub adapter or model (no run_info.json beside it): name the family
    python -m meditod_hub.predict --model_path my-org/meditod-llama3-nlu --family llama ...

One JSON line per example: `{"id", "prediction", "raw", "parse_ok"}`, `prediction` parsed with
the family's parser. An output that does not parse is counted and reported, never a crash. A
LoRA adapter (local folder or Hub id) is loaded on the base model its adapter config names; a
run trained on a 4-bit base is served on the same 4-bit base. Inputs are built exactly as in
training (same formats, same token budgets), from the run's `recipe.yaml` when there is one.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import torch
import yaml
from tqdm.auto import tqdm

from .formats import TASKS, ParseResult, chat, seq2seq
from .formats.fit import BudgetError, fit_to_budget

DECODER_FAMILIES = ("llama", "biogpt")
SEQ2SEQ_FAMILIES = ("flan-t5", "pptod")
FAMILIES = DECODER_FAMILIES + SEQ2SEQ_FAMILIES


@dataclass(frozen=True)
class Budget:
    """Token budgets shared by training and inference.

    `max_length`: decoders, prompt + answer (the answer reserve is `max_new_tokens`); seq2seq,
    the encoder input. None: no fitting (the chat format's 4-line window already bounds it).
    """

    max_length: int | None
    max_new_tokens: int


# Upstream's inference settings (reference 3.2, 3.3), for a model that comes without a recipe.
DEFAULT_BUDGETS = {"llama": Budget(None, 500), "biogpt": Budget(512, 128),
                   "flan-t5": Budget(512, 512), "pptod": Budget(1024, 512)}


def chat_prompt(tokenizer, task: str, row: dict) -> list[int]:
    """[system, user] with the generation prompt: the prompt half of a training example."""
    return tokenizer.apply_chat_template(chat.messages(task, row)[:2], add_generation_prompt=True,
                                         tokenize=True, return_dict=True)["input_ids"]


def prompt_ids(family: str, task: str, row: dict, tokenizer, budget: Budget) -> list[int]:
    if family == "llama":
        return chat_prompt(tokenizer, task, row)
    parts = seq2seq.source_parts(family, task, row)
    reserve = budget.max_new_tokens if family == "biogpt" else 0
    return fit_to_budget(tokenizer, parts, budget.max_length, row["id"], reserve).input_ids


def parse_output(family: str, task: str, text: str) -> ParseResult:
    if family == "llama":
        return chat.parse_answer(task, text)
    return seq2seq.parse_target(task, text, family)


def stop_token_ids(tokenizer) -> list[int]:
    """EOS plus the chat template's end-of-turn token (the token that closes an assistant turn)."""
    ids = [tokenizer.eos_token_id]
    if tokenizer.chat_template:
        turn = [{"role": "user", "content": "u"}, {"role": "assistant", "content": "a"}]
        prompt = tokenizer.apply_chat_template(turn[:1], add_generation_prompt=True, tokenize=True,
                                               return_dict=True)["input_ids"]
        full = tokenizer.apply_chat_template(turn, tokenize=True, return_dict=True)["input_ids"]
        special = set(tokenizer.all_special_ids) | set(tokenizer.added_tokens_decoder)
        ids += [t for t in full[len(prompt):] if t in special][:1]
    return list(dict.fromkeys(i for i in ids if i is not None))


@torch.no_grad()
def generate_texts(model, tokenizer, prompts: list[list[int]], max_new_tokens: int,
                   batch_size: int = 16, progress: bool = False) -> list[str]:
    """Greedy completions of token-id prompts, in input order.

    Prompts are batched longest first (less padding, and an out-of-memory shows at once);
    decoders are left-padded so every answer starts right after its prompt.
    """
    decoder = not model.config.is_encoder_decoder
    order = sorted(range(len(prompts)), key=lambda i: -len(prompts[i]))
    texts: list[str] = [""] * len(prompts)
    stops = stop_token_ids(tokenizer)
    was_training = model.training
    model.eval()
    for start in tqdm(range(0, len(order), batch_size), desc="generating", disable=not progress):
        chunk = order[start:start + batch_size]
        batch = tokenizer.pad({"input_ids": [prompts[i] for i in chunk]}, return_tensors="pt",
                              padding_side="left" if decoder else "right").to(model.device)
        out = model.generate(**batch, max_new_tokens=max_new_tokens, do_sample=False, num_beams=1,
                             eos_token_id=stops, pad_token_id=tokenizer.pad_token_id)
        new = out[:, batch["input_ids"].shape[1]:] if decoder else out
        for i, text in zip(chunk, tokenizer.batch_decode(new, skip_special_tokens=True)):
            texts[i] = text.strip()
    model.train(was_training)
    return texts


def predict_rows(model, tokenizer, family: str, task: str, rows: list[dict], budget: Budget,
                 batch_size: int = 16, progress: bool = False) -> list[dict]:
    """Prediction records (the evaluation contract) for dataset rows.

    A row whose fixed input parts alone overflow the budget is not generated: it is recorded
    as a failed prediction with the reason, like any output that does not parse.
    """
    prompts, unfit = {}, {}
    for i, row in enumerate(rows):
        try:
            prompts[i] = prompt_ids(family, task, row, tokenizer, budget)
        except BudgetError as exc:
            unfit[i] = f"input does not fit: {exc}"
    raws = dict(zip(prompts, generate_texts(model, tokenizer, list(prompts.values()),
                                            budget.max_new_tokens, batch_size, progress)))
    empty = ParseResult("" if task == "nlg" else [], False, None)
    records = []
    for i, row in enumerate(rows):
        parsed = parse_output(family, task, raws[i]) if i in raws else empty
        records.append({"id": row["id"], "prediction": parsed.value, "raw": raws.get(i, ""),
                        "parse_ok": parsed.ok, "reason": unfit.get(i, parsed.reason)})
    return records


def run_settings(model_path: str) -> tuple[dict, dict]:
    """run_info.json and recipe.yaml of a local run directory ({} when absent, e.g. a Hub id)."""
    path = Path(model_path)
    info = path / "run_info.json"
    recipe = path / "recipe.yaml"
    return (json.loads(info.read_text()) if info.is_file() else {},
            yaml.safe_load(recipe.read_text()) if recipe.is_file() else {})


def resolve_budget(family: str, recipe: dict, max_length: int | None = None,
                   max_new_tokens: int | None = None) -> Budget:
    """Explicit values, else the run's recipe, else upstream's defaults for the family."""
    default = DEFAULT_BUDGETS[family]
    length_key = "max_source_length" if family in SEQ2SEQ_FAMILIES else "max_length"
    return Budget(max_length or recipe.get(length_key) or default.max_length,
                  max_new_tokens or recipe.get("max_new_tokens") or default.max_new_tokens)


def load_model(model_path: str, family: str, load_in_4bit: bool = False):
    """Model and tokenizer; an adapter brings its base model (named in its adapter config)."""
    from peft import AutoPeftModelForCausalLM, AutoPeftModelForSeq2SeqLM, PeftConfig
    from transformers import (AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer,
                              BitsAndBytesConfig)

    try:
        PeftConfig.from_pretrained(model_path)
        adapter = True
    except (ValueError, OSError):
        adapter = False
    decoder = family in DECODER_FAMILIES
    auto = {(True, True): AutoPeftModelForCausalLM, (True, False): AutoModelForCausalLM,
            (False, True): AutoPeftModelForSeq2SeqLM, (False, False): AutoModelForSeq2SeqLM}
    cuda = torch.cuda.is_available()
    kwargs = {"device_map": "auto"} if cuda else {}
    if load_in_4bit:
        kwargs["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4",
            bnb_4bit_compute_dtype=torch.bfloat16 if cuda else torch.float32)
    elif cuda:
        kwargs["dtype"] = torch.bfloat16
    model = auto[decoder, adapter].from_pretrained(model_path, **kwargs)
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    return model, tokenizer


def write_predictions(records: list[dict], out: str | Path) -> None:
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps({k: r[k] for k in ("id", "prediction", "raw", "parse_ok")}) + "\n")


def parse_failure_summary(records: list[dict]) -> str:
    """Counts only: parser reasons name positions and markers, never dialogue text."""
    failed = [r for r in records if not r["parse_ok"]]
    lines = [f"{len(records)} predictions, {len(failed)} did not parse"]
    lines += [f"  {n} x {reason}" for reason, n in Counter(r["reason"] for r in failed).most_common(5)]
    return "\n".join(lines)


def cascade_rows(task: str, rows: list[dict], upstream: str | Path) -> list[dict]:
    """Rows whose inputs come from the previous task's predictions (the paper's pipeline)."""
    from .metrics.predictions import read_predictions
    from .views import cascade_nlg_rows, cascade_pol_rows

    labels = {i: p.label for i, p in read_predictions(upstream).items()}
    return cascade_pol_rows(rows, labels) if task == "pol" else cascade_nlg_rows(rows, labels)


def main(argv: list[str] | None = None) -> int:
    from datasets import disable_progress_bars, load_dataset

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model_path", required=True, help="run directory, model folder or Hub id")
    p.add_argument("--task", required=True, choices=TASKS)
    p.add_argument("--data", default="meditod", help="built dataset folder or Hub dataset id")
    p.add_argument("--split", default="test")
    p.add_argument("--out", required=True, help="predictions .jsonl to write")
    p.add_argument("--family", choices=FAMILIES, help="default: the run's run_info.json")
    p.add_argument("--batch_size", type=int, default=16)
    p.add_argument("--max_length", type=int, help="token budget (default: the run's recipe)")
    p.add_argument("--max_new_tokens", type=int, help="default: the run's recipe")
    p.add_argument("--load_in_4bit", action=argparse.BooleanOptionalAction,
                   help="default: 4-bit iff the run was trained on a 4-bit base")
    p.add_argument("--limit", type=int, help="only the first N rows (smoke runs)")
    p.add_argument("--upstream", help="cascade: a predictions file of the task before (NLU for "
                                      "pol: the state is folded from it; POL for nlg: its actions "
                                      "replace the gold ones) instead of gold inputs")
    args = p.parse_args(argv)
    if args.upstream and args.task == "nlu":
        p.error("--upstream needs --task pol (NLU predictions) or nlg (POL predictions)")

    info, recipe = run_settings(args.model_path)
    family = args.family or info.get("family")
    if family is None:
        p.error(f"{args.model_path} has no run_info.json: pass --family")
    if info.get("task", args.task) != args.task:
        p.error(f"{args.model_path} was trained for {info['task']}, not {args.task}")
    budget = resolve_budget(family, recipe, args.max_length, args.max_new_tokens)
    quantized = info.get("quantization") is not None
    model, tokenizer = load_model(args.model_path, family,
                                  quantized if args.load_in_4bit is None else args.load_in_4bit)

    disable_progress_bars()
    rows = list(load_dataset(str(args.data), args.task, split=args.split))[:args.limit]
    if args.upstream:
        rows = cascade_rows(args.task, rows, args.upstream)
    records = predict_rows(model, tokenizer, family, args.task, rows, budget, args.batch_size,
                           progress=True)
    write_predictions(records, args.out)
    print(parse_failure_summary(records), file=sys.stderr)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
