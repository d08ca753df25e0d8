"""Predictions of a fine-tuned checkpoint served behind an OpenAI-compatible endpoint (vLLM, TGI,
`transformers serve`), with exactly the prompts `predict` builds locally.

    python -m meditod_hub.predict --model_path runs/llama3-8b/nlu --task nlu --split test \\
        --endpoint http://127.0.0.1:8000/v1 --served_model meditod-nlu --out preds.jsonl

* Llama family: the [system, user] messages of `formats.chat` go to `/v1/chat/completions`; the
  server applies the model's chat template with the generation prompt, as the local path does.
* BioGPT: the local prompt ids (`predict.prompt_ids`, budget cut included) are decoded to text
  for `/v1/completions`, where the server tokenises it again with the model's tokenizer (its
  special tokens included). Equal ids need that round trip to hold; every row where the local
  tokenizer says it does not is counted and reported.
* Flan-T5 and PPTOD are encoder-decoders: OpenAI-compatible servers serve decoder-only models
  (`transformers serve` answers them, but cuts the prompt's length off the generated ids as if
  the model were a decoder, which drops the answer), so they are refused; predict them locally.
Greedy decoding, `max_tokens` = the run's `max_new_tokens`; the answer is stripped and parsed
with the family's parser, so the records equal `predict.predict_rows`'s.
"""

from __future__ import annotations

import sys

from .endpoint import Decoding, Endpoint, Request
from .errors import UsageError
from .formats import ParseResult, chat
from .formats.fit import BudgetError
from .predict import Budget, parse_output, prompt_ids

SERVABLE = {"llama": "chat", "biogpt": "completion"}


def requests_for(family: str, task: str, rows: list[dict], tokenizer, budget: Budget):
    """(requests, unfit reasons by row index, rows whose prompt re-tokenises differently)."""
    if family not in SERVABLE:
        raise UsageError(f"a {family} model is an encoder-decoder, which OpenAI-compatible servers "
                         "do not serve: predict it locally (drop --endpoint)")
    requests, unfit, retokenised = [], {}, []
    for i, row in enumerate(rows):
        if family == "llama":
            requests.append(Request(row["id"], messages=chat.messages(task, row)[:2]))
            continue
        try:
            ids = prompt_ids(family, task, row, tokenizer, budget)
        except BudgetError as exc:
            unfit[i] = f"input does not fit: {exc}"
            continue
        text = tokenizer.decode(ids, skip_special_tokens=True)
        if tokenizer(text)["input_ids"] != ids:
            retokenised.append(row["id"])
        requests.append(Request(row["id"], prompt=text))
    return requests, unfit, retokenised


def predict_rows_via_endpoint(endpoint: Endpoint, family: str, task: str, rows: list[dict],
                              budget: Budget, tokenizer=None) -> list[dict]:
    """Prediction records (the evaluation contract), like `predict.predict_rows`."""
    requests, unfit, retokenised = requests_for(family, task, rows, tokenizer, budget)
    if retokenised:
        print(f"note: {len(retokenised)} prompt(s) re-tokenise differently on the server side "
              f"(first: {retokenised[0]}); their predictions may differ from local ones",
              file=sys.stderr)
    answers = endpoint.complete(requests, Decoding(max_tokens=budget.max_new_tokens),
                                desc=f"{task} via {endpoint.host}")
    empty = ParseResult("" if task == "nlg" else [], False, None)
    records = []
    for i, row in enumerate(rows):
        raw = answers[row["id"]].text.strip() if row["id"] in answers else ""
        parsed = parse_output(family, task, raw) if row["id"] in answers else empty
        records.append({"id": row["id"], "prediction": parsed.value, "raw": raw,
                        "parse_ok": parsed.ok, "reason": unfit.get(i, parsed.reason)})
    return records
