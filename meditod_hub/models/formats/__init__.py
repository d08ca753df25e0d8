"""Model formats: how dataset rows become model inputs/targets, and how model outputs parse back.

`span_models` (Flan-T5 / BioGPT / PPTOD inputs and targets, in the authors' span grammar, which
each task names for its columns: `meditod_hub.data.tasks.spans`), `chat` (Llama-3 / OpenBioLLM
messages), `fit` (token budgets). Which family uses which is the family registry's business
(`meditod_hub.models.families`). This module holds what they share: the one rule for which
utterances a model sees as context (docs/format.md, "Model formats"); what a parser returns is a
`meditod_hub.data.tasks.ParseResult`.
"""

from __future__ import annotations


def context_utterances(row: dict) -> list[tuple[str, str]]:
    """(speaker, text) of everything a model may see, oldest first, ending with the patient's line.

    Starts at the first patient utterance: the opening doctor line ("what brings you in") is in
    no supervised example's context. Works on `nlu` rows (adds the current patient line) and on
    `pol`/`nlg` rows (whose context already ends with it).
    """
    utterances = [(u["speaker"], u["text"]) for u in row_field(row, "context")]
    if "patient_text" in row:
        utterances.append(("patient", row["patient_text"]))
    first_patient = next((i for i, (speaker, _) in enumerate(utterances) if speaker == "patient"),
                         len(utterances))
    return utterances[first_patient:]


def context_lines(row: dict) -> list[str]:
    """`patient: <text>` / `doctor: <text>` lines of `context_utterances`."""
    return [f"{speaker}: {text}" for speaker, text in context_utterances(row)]


def row_field(row: dict, key: str):
    """row[key], or an error that says which row lacks which column (e.g. `response` on a pol row)."""
    try:
        return row[key]
    except KeyError:
        raise KeyError(f"row {row.get('id', '?')!r} has no {key!r} column; nlu rows carry `nlu`, "
                       "pol rows `actions`, nlg rows `actions` and `response`") from None
