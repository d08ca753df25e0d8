"""strictjson.loads: JSON as every other reader takes it back. Generated numbers: what a double or
a 64-bit integer holds reads as `json.loads` reads it; anything past them, NaN and Infinity are
refused naming the number (issue 46: `1e400` read as inf gave the portal a 500)."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meditod_hub import strictjson

INT64 = strictjson.INT64


@settings(max_examples=200)
@given(st.recursive(st.none() | st.booleans() | st.text() | st.integers(-INT64, INT64 - 1)
                    | st.floats(allow_nan=False, allow_infinity=False),
                    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
                    max_leaves=20))
def test_what_json_holds_reads_as_json_reads_it(value):
    text = json.dumps(value)
    assert strictjson.loads(text) == json.loads(text)


@settings(max_examples=100)
@given(st.integers(min_value=309, max_value=100_000), st.sampled_from(["", "-"]),
       st.sampled_from(["1", "9.5", "2.2250738585072014"]))
def test_a_float_past_a_double_is_refused(exponent, sign, mantissa):
    text = f"{sign}{mantissa}e{exponent}"
    assert math.isinf(json.loads(text))  # what Python's json makes of it
    with pytest.raises(strictjson.NotJsonNumber, match="past what a double holds"):
        strictjson.loads(f'{{"x": [{text}]}}')


@settings(max_examples=100)
@given(st.one_of(st.integers(min_value=INT64), st.integers(max_value=-INT64 - 1)))
def test_an_integer_past_64_bits_is_refused(number):
    with pytest.raises(strictjson.NotJsonNumber, match="past a 64-bit integer"):
        strictjson.loads(f"[{number}]")


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity", "9" * 5000])
def test_nan_infinity_and_numbers_python_cannot_even_read_are_refused(text):
    with pytest.raises(strictjson.NotJsonNumber):
        strictjson.loads(f'{{"a": {text}}}')
