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
with the family's parser by `predictor.Predictor`, so the records equal a local model's. Answers
are cached per endpoint and per checkpoint (`checkpoint_scope`): serving another run under the
same name at the same URL (the README's `SERVED_MODEL=meditod`) asks the server again.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from meditod_hub.data.tasks import Task
from meditod_hub.endpoint import Decoding, Endpoint, Request
from meditod_hub.models.families import Budget, Family
from meditod_hub.models.formats.fit import BudgetError


def checkpoint_scope(model_path: str) -> str:
    """What tells checkpoints served under one name at one URL apart in the answer cache: a
    folder's path and its top-level files (name, size, mtime: a run trained again differs; the
    predictions under eval/ do not count), or a Hub id as given."""
    folder = Path(model_path)
    if not folder.is_dir():
        return model_path
    files = sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in folder.iterdir()
                   if p.is_file())
    return str(folder.resolve()) + ":" + hashlib.sha256(json.dumps(files).encode()).hexdigest()


def requests_for(family: Family, task: Task, rows: list[dict], tokenizer, budget: Budget):
    """(requests, unfit reasons by row index, rows whose prompt re-tokenises differently)."""
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


def complete_rows(endpoint: Endpoint, family: Family, task: Task, rows: list[dict], budget: Budget,
                  tokenizer=None, constraint=None) -> tuple[dict[int, str], dict[int, str]]:
    """The stripped answer of each row sent (by index) and why each other row was not sent:
    what `predictor.Predictor.generate` returns, so records are built as for a local model.
    With `constraint` (`constrained.request.ServedConstraint`) the server decodes under the grammar
    (its request fields join the cache key) and the answer comes back in the format's syntax."""
    requests, unfit, retokenised = requests_for(family, task, rows, tokenizer, budget)
    if retokenised:
        print(f"note: {len(retokenised)} prompt(s) re-tokenise differently on the server side "
              f"(first: {retokenised[0]}); their predictions may differ from local ones",
              file=sys.stderr)
    decoding = Decoding(max_tokens=budget.max_new_tokens,
                        extra_body=constraint.extra_body() if constraint else None)
    answers = endpoint.complete(requests, decoding, desc=f"{task.name} via {endpoint.host}")
    answer = constraint.answer if constraint else (lambda text: text)
    return ({i: answer(answers[row["id"]].text.strip()) for i, row in enumerate(rows)
             if row["id"] in answers}, unfit)
