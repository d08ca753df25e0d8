"""The failure sweep's flag table: every impossible flag value of every command is a one-line
usage error (exit 2) before any work. The cases are generated from the commands' own argument
dataclasses (their types, choices and declared bounds), so a new flag joins the sweep by itself.
Cheap: every case fails while parsing. Train's recipe keys are checked in test_failure_train.py.
"""

from __future__ import annotations

import dataclasses
import importlib
import typing

import pytest
from helpers import command_argument_types, expect, run_case, utf8

from meditod_hub import arguments, cli

COMMANDS = [name for name in cli.COMMANDS if name != "train"]


def argument_types(command: str) -> list[type]:
    module = importlib.import_module(cli.COMMANDS[command][0])
    return sorted(command_argument_types(module), key=lambda cls: cls.__name__)


def required_argv(types: list[type]) -> list[str]:
    """Placeholder values for the required flags (never used: parsing fails first)."""
    argv = []
    for cls in types:
        for f in dataclasses.fields(cls):
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                argv += [f"--{f.name}", str(f.metadata.get("choices", ["x"])[0])]
    return argv


def bad_values(kind: type, metadata) -> list[tuple[str, str]]:
    """(value, phrase of the error) for a numeric flag: out of its bounds, not a number."""
    cases = [("ten", "must be a whole number" if kind is int else "must be a number")]
    if kind is int:
        cases.append(("1.5", "must be a whole number"))
    else:
        cases += [("nan", "must be a finite number"), ("inf", "must be a finite number")]
    if "above" in metadata:
        cases.append((str(metadata["above"]), "must be a"))
        cases.append((str(metadata["above"] - 1), "must be a"))
    if "min" in metadata:
        cases.append((str(metadata["min"] - 1), f"must be at least {metadata['min']}"))
    if "max" in metadata:
        cases.append((str(metadata["max"] + 1), f"must be at most {metadata['max']}"))
    return cases


def flag_cases() -> list[tuple[str, list[str], str]]:
    """(command, extra argv, phrase) for every command."""
    cases = []
    for command in COMMANDS:
        types = argument_types(command)
        cases.append((command, ["--no_such_flag=1"], "unrecognized arguments: --no_such_flag"))
        cases.append((command, ["stray-positional"], "unrecognized arguments: stray-positional"))
        if required_argv(types):
            cases.append((command, ["REQUIRED-DROPPED"], "the following arguments are required"))
        for cls in types:
            hints = typing.get_type_hints(cls)
            for f in dataclasses.fields(cls):
                kind, optional = arguments._plain_type(hints[f.name])
                if kind in (int, float):
                    cases += [(command, [f"--{f.name}={value}"], f"argument --{f.name}: {phrase}")
                              for value, phrase in bad_values(kind, f.metadata)]
                    if f.name.endswith("timeout"):  # past what a thread's join or a socket takes
                        cases.append((command, [f"--{f.name}=1e12"], f"argument --{f.name}: "
                                      f"must be at most {arguments.TIMEOUT_MAX_S} (a week)"))
                elif kind in (str, list[str]) and "choices" not in f.metadata:
                    cases.append((command, [f"--{f.name}", "a\udcffb"], f"argument --{f.name}: "
                                  "holds bytes that are not UTF-8 text"))
                elif "choices" in f.metadata:
                    cases.append((command, [f"--{f.name}=no-such-choice"],
                                  f"argument --{f.name}: invalid choice: 'no-such-choice'"))
                elif kind is bool and optional:
                    cases.append((command, [f"--{f.name}=maybe"], "must be true or false"))
                elif kind is bool:
                    cases.append((command, [f"--{f.name}=yes"], f"argument --{f.name}: ignored "
                                                                "explicit argument"))
                if kind is not bool:  # a list flag names at least one value
                    expected = "at least one argument" if typing.get_origin(kind) is list \
                        else "one argument"
                    cases.append((command, [f"--{f.name}"], f"argument --{f.name}: expected "
                                                            f"{expected}"))
    return cases


CASES = flag_cases()


@pytest.mark.parametrize("command,extra,phrase", CASES,
                         ids=[utf8(f"{c}:{' '.join(e)}") for c, e, _ in CASES])
def test_an_impossible_flag_value_is_a_usage_error(command, extra, phrase, capsys):
    module = importlib.import_module(cli.COMMANDS[command][0])
    argv = required_argv(argument_types(command))
    if extra == ["REQUIRED-DROPPED"]:
        argv, extra = [], []
    outcome = run_case(f"{command}: {' '.join(extra) or 'required flags missing'}", module.main,
                       [*argv, *extra], capsys)
    expect(outcome, phrase, code=2)


def test_the_flag_table_covers_every_command_with_many_cases():
    assert {c for c, _, _ in CASES} == set(COMMANDS)
    assert len(CASES) >= 200, len(CASES)
