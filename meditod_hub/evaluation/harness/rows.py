"""The rows a harness reads for one task and split: one JSON object per dataset row.

    id, dialogue_id   the row's ids
    row               the dataset row itself (JSON text): what `Task.score` scores against
    icl_question      the authors' user message for the row (`fewshot.prompts.user_message`)
    icl_answer        the row's gold answer in the in-context format (`exemplar_answer`)
    exemplars         the `shots` retrieved train rows, most similar first, each as
                      {icl_question, icl_answer}: exactly the exemplars `meditod fewshot` puts in
                      the row's prompt (same retriever, same pool, same search)
    ft_user           the chat family's user message (`formats.chat.user_message`), whose system
                      message is the task's (`Task.system_message`)
    ft_source         a span family's model input (Flan-T5, BioGPT, PPTOD; only in a folder written
                      for one): the text of the ids `meditod predict` feeds the model, fitted to
                      the run's budget by its tokenizer (`span_sources`)
    ft_unfit          why a row's input does not fit that budget (predict answers it with nothing:
                      the harness's answer to it is dropped, and the row scored as empty)

The system prompts are constant per task and live in the task files, not in every row.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from meditod_hub.errors import UsageError
from meditod_hub.evaluation.fewshot import prompts
from meditod_hub.models.families import Budget, SpanFamily
from meditod_hub.models.formats import chat
from meditod_hub.models.formats.fit import BudgetError, special_ids


@dataclass(frozen=True)
class SpanSource:
    """A span family's source text for one row; `unfit` says why the row has none (its input
    does not fit the budget)."""

    text: str
    unfit: str | None = None


def span_sources(family: SpanFamily, task, rows: Sequence[dict], tokenizer, budget: Budget
                 ) -> list[SpanSource]:
    """Each row's input for a span family as the text a harness hands the tokenizer: the ids of
    `family.prompt` (what `meditod predict` generates from, fitted to `budget`) without the
    special tokens the tokenizer adds itself (T5's closing `</s>`, BioGPT's opening one),
    decoded. Tokenised again with those special tokens, as lm-eval's `hf` model does, the text
    must give back exactly those ids; a tokenizer where it does not is refused."""
    lead, trail = special_ids(tokenizer)
    out = []
    for row in rows:
        try:
            ids = family.prompt(task, row, tokenizer, budget).input_ids
        except BudgetError as exc:
            out.append(SpanSource("", unfit=f"input does not fit: {exc}"))
            continue
        text = tokenizer.decode(ids[len(lead):len(ids) - len(trail)], skip_special_tokens=False,
                                clean_up_tokenization_spaces=False)
        if tokenizer(text)["input_ids"] != ids:
            raise UsageError(f"row {row['id']}: the {family.name} input does not tokenise back "
                             "to the ids `meditod predict` gives the model, so a harness would "
                             "not run the same prompt (use `meditod predict`)")
        out.append(SpanSource(text))
    return out


def harness_rows(task: str, rows: Sequence[dict], exemplars: Sequence[Sequence[dict]] | None,
                 sources: Sequence[SpanSource] | None = None) -> list[dict]:
    """One harness row per dataset row; `exemplars[i]` are row i's retrieved train rows (None:
    no in-context columns); `sources[i]` row i's span-family input (`span_sources`)."""
    out = []
    for i, row in enumerate(rows):
        doc = {"id": row["id"], "dialogue_id": row.get("dialogue_id", ""),
               "row": json.dumps(row, ensure_ascii=False),
               "icl_question": prompts.user_message(task, row),
               "icl_answer": prompts.exemplar_answer(task, row),
               "ft_user": chat.user_message(task, row)}
        if sources is not None:
            doc["ft_source"] = sources[i].text
            if sources[i].unfit:
                doc["ft_unfit"] = sources[i].unfit
        if exemplars is not None:
            doc["exemplars"] = [{"icl_question": prompts.user_message(task, e),
                                 "icl_answer": prompts.exemplar_answer(task, e)}
                                for e in exemplars[i]]
        out.append(doc)
    return out

