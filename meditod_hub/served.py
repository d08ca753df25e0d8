"""Predictions of a fine-tuned checkpoint served behind an OpenAI-compatible endpoint (vLLM, TGI,
`transformers serve`), with exactly the prompts `predict` builds locally.

    meditod predict --model_path runs/llama3-8b/nlu --task nlu --split test \\
        --endpoint http://127.0.0.1:8000/v1 --served_model meditod-nlu --out preds.jsonl

* Llama family: the [system, user] messages of `formats.chat` go to `/v1/chat/completions`; the
  server applies the model's chat template with the generation prompt, as the local path does.
* BioGPT: the local prompt ids (`Family.prompt`, budget cut included) are decoded to text
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
from .families import Budget, Family
from .formats.fit import BudgetError
from .records import Prediction
from .tasks import get_task


def requests_for(family: Family, task: str, rows: list[dict], tokenizer, budget: Budget):
    """(requests, unfit reasons by row index, rows whose prompt re-tokenises differently)."""
    if family.served_as is None:
        raise UsageError(f"a {family.name} model is an encoder-decoder, which OpenAI-compatible "
                         "servers do not serve: predict it locally (drop --endpoint)")
    requests, unfit, retokenised = [], {}, []
    for i, row in enumerate(rows):
        if family.served_as == "chat":
            requests.append(Request(row["id"], messages=family.prompt_messages(task, row)))
            continue
        try:
            ids = family.prompt(task, row, tokenizer, budget).input_ids
        except BudgetError as exc:
            unfit[i] = f"input does not fit: {exc}"
            continue
        text = tokenizer.decode(ids, skip_special_tokens=True)
        if tokenizer(text)["input_ids"] != ids:
            retokenised.append(row["id"])
        requests.append(Request(row["id"], prompt=text))
    return requests, unfit, retokenised


def predict_rows_via_endpoint(endpoint: Endpoint, family: Family, task: str, rows: list[dict],
                              budget: Budget, tokenizer=None) -> list[Prediction]:
    """Prediction records (the evaluation contract), like `predict.predict_rows`."""
    requests, unfit, retokenised = requests_for(family, task, rows, tokenizer, budget)
    if retokenised:
        print(f"note: {len(retokenised)} prompt(s) re-tokenise differently on the server side "
              f"(first: {retokenised[0]}); their predictions may differ from local ones",
              file=sys.stderr)
    answers = endpoint.complete(requests, Decoding(max_tokens=budget.max_new_tokens),
                                desc=f"{task} via {endpoint.host}")
    records = []
    for i, row in enumerate(rows):
        if row["id"] not in answers:
            records.append(Prediction(row["id"], get_task(task).empty_label, False, "",
                                      unfit.get(i)))
            continue
        raw = answers[row["id"]].text.strip()
        parsed = family.parse(task, raw)
        records.append(Prediction(row["id"], parsed.value, parsed.ok, raw, parsed.reason))
    return records


class ServedBackend:
    """One assistant stage answered by a model name at an endpoint (the assistant's `Backend`).

    The vLLM multi-LoRA layout serves three adapters of one base as three model names at one
    endpoint (`vllm serve BASE --enable-lora --lora-modules nlu=... pol=... nlg=...`); each stage
    sends its prompts to its own name. `folder` is the run (local or downloaded; `info` its
    run_info.json): its family, budgets and, for plain-prompt families, its tokenizer. Answers
    are never cached to disk: they hold what a patient typed.
    """

    def __init__(self, endpoint: str, served_model: str, folder: str, info: dict,
                 family: Family, budget: Budget):
        self.family, self.budget, self.folder, self.info = family, budget, folder, info
        self.tokenizer = None
        if family.served_as == "completion":
            from transformers import AutoTokenizer

            self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.endpoint = Endpoint(endpoint, served_model, cache=None)

    def predict(self, task: str, rows: list[dict]) -> list[Prediction]:
        if not rows:
            return []
        return predict_rows_via_endpoint(self.endpoint, self.family, task, rows, self.budget,
                                         self.tokenizer)
