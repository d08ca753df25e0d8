"""The medical values a grammar allows: `--vocabulary` read into a `Vocabulary`.

The head `value` of a medical slot (the UMLS-canonical concept) is one of a `Vocabulary` when one
is given (`training_vocabulary`: every such value of a training split; `read_vocabulary`: a user
file, one value per line or a JSON list), otherwise free text. Apart from the grammars because it
reads files and built datasets, which writing a grammar never does.
"""

from __future__ import annotations

import json
from pathlib import Path

from meditod_hub.data.dataset import load_split
from meditod_hub.data.tasks import LABELLED_TASKS
from meditod_hub.errors import UsageError
from meditod_hub.models.constrained.language import medical_values

VOCABULARY_DEFAULT = "train"  # `--vocabulary`: the training split's values
VOCABULARY_FREE = "none"      # `--vocabulary none`: medical values are free text too

Vocabulary = frozenset  # canonical medical values (lowercase); None where values are free


def training_vocabulary(data: str) -> Vocabulary:
    """Every canonical medical value of the built dataset's training split (NLU and POL labels)."""
    values = set()
    for task in LABELLED_TASKS:
        values.update(medical_values(task, (row[task.target_column]
                                            for row in load_split(data, task.name, "train"))))
    return frozenset(v.lower() for v in values if v.strip())


# A vocabulary file: what it may hold, and what it is refused with.
VOCABULARY_EXPECTED = ('expected one canonical medical value per line (`#` comments), a JSON '
                       'list of strings, or {"values": [...]} as `meditod annotate` saves '
                       'vocabulary.json')
VALUE_MAX_CHARS = 100         # a canonical name is a short phrase: a longer line is prose
MARKUP = frozenset('`|<>[]{}=*"\t')  # Markdown, HTML, code, tables: in no medical name


def read_vocabulary(path: str | Path) -> Vocabulary:
    """A vocabulary file, checked line by line (or item by item, JSON), so that a README or a
    broken JSON file is refused with its first bad line rather than read as medical values."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read the vocabulary ({type(exc).__name__}): "
                         f"{VOCABULARY_EXPECTED}") from None
    if text.lstrip()[:1] in ("[", "{"):
        entries = [(f"item {n}", v) for n, v in enumerate(_json_vocabulary(path, text), 1)]
    else:
        entries = [(f"line {n}", line) for n, line in enumerate(text.splitlines(), 1)
                   if line.strip() and not line.lstrip().startswith("#")]
    for where, value in entries:
        if len(value.strip()) > VALUE_MAX_CHARS or MARKUP & set(value):
            raise UsageError(f"{path}, {where}: not a canonical medical value (a long line, or "
                             f"markup); {VOCABULARY_EXPECTED}")
    values = frozenset(v.strip().lower() for _, v in entries if v.strip())
    if not values:
        raise UsageError(f"{path}: the vocabulary is empty: {VOCABULARY_EXPECTED}")
    return values


def _json_vocabulary(path: Path, text: str) -> list[str]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}: invalid JSON at line {exc.lineno} ({exc.msg}); "
                         f"{VOCABULARY_EXPECTED}") from None
    except RecursionError:
        raise UsageError(f"{path}: JSON nested too deeply; {VOCABULARY_EXPECTED}") from None
    values = data.get("values") if isinstance(data, dict) else data
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise UsageError(f"{path}: JSON, but not a list of strings; {VOCABULARY_EXPECTED}")
    return values


def resolve_vocabulary(choice: str | None, data: str | None) -> Vocabulary | None:
    """`--vocabulary`: `train` (the training split of `data`), `none` (free) or a file."""
    if choice in (None, VOCABULARY_FREE):
        return None
    if choice == VOCABULARY_DEFAULT:
        if data is None:
            raise UsageError("--vocabulary train needs --data (a built dataset with a train split)")
        return training_vocabulary(data)
    return read_vocabulary(choice)
