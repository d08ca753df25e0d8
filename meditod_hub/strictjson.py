"""JSON as every other reader takes it back: Python's `json` reads NaN, Infinity and numbers past
a double's range (`1e400` becomes inf, a 5000-digit integer raises a bare ValueError), which no
JSON reader, Parquet column or browser takes back. Every JSON the kit takes from a user (release
files, the portal's requests) is read through `loads`, which refuses them with `NotJsonNumber`.
"""

from __future__ import annotations

import json
import math

INT64 = 2 ** 63  # Arrow's and Parquet's integers: a number past it has no column to go into


class NotJsonNumber(ValueError):
    """A number (or NaN/Infinity) that has no JSON or Parquet value; its text says which."""


def _constant(text: str):
    raise NotJsonNumber(f"{text}, which JSON has no number for")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise NotJsonNumber(f"the number {text[:40]}, past what a double holds")
    return value


def _int(text: str) -> int:
    if len(text.lstrip("-")) > 19 or not -INT64 <= int(text) < INT64:
        raise NotJsonNumber(f"the number {text[:40]}, past a 64-bit integer")
    return int(text)


def loads(text: str | bytes, **kwargs):
    """`json.loads`, refusing NaN, Infinity and out-of-range numbers (`NotJsonNumber`)."""
    return json.loads(text, parse_constant=_constant, parse_float=_float, parse_int=_int, **kwargs)
