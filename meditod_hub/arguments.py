"""The kit's flag parsing: every command's dataclass arguments -> argparse, with one-line usage
errors; a config file's keys (a training recipe) -> the trainer's dataclasses by TRL's
`TrlParser`, with the same one-line errors. On layers.py's ground floor; only
`meditod_hub.commands` calls it: the library takes the parsed dataclasses, never argv."""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import math
import re
import shutil
import typing
from collections.abc import Callable
from pathlib import Path

from meditod_hub.errors import UsageError


def parse_args(types, argv: list[str], prog: str, description: str) -> tuple:
    """`argv` -> one instance per dataclass in `types`. Every flag is a dataclass field; a bad
    value or an unknown flag is a one-line usage error (exit 2), raised before any work.

    argparse directly (not transformers' HfArgumentParser): that parser passes every metadata key
    to argparse (no room for bounds), prints booleans as `--flag [FLAG]` and defaults twice, and
    its import alone costs seconds before `-h` can answer. Numeric fields are checked here, from
    their metadata: `min` / `max` (inclusive), `above` (exclusive); every float must be finite.
    """
    namespace = _parser(types, prog, description).parse_args(argv)
    return _instances(types, namespace)


def parse_known_args(types, argv: list[str], prog: str,
                     description: str) -> tuple[tuple, list[str]]:
    """As `parse_args`, but the arguments that are no flag of `types` come back, in order (train's
    MODEL [TASK] and recipe keys, which `parse_config` parses)."""
    namespace, rest = _parser(types, prog, description).parse_known_args(argv)
    return _instances(types, namespace), rest


def _parser(types, prog: str, description: str) -> KitParser:
    parser = KitParser(prog=prog, description=description, formatter_class=_Help,
                       allow_abbrev=False)
    for cls in types:
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            _add_field(parser, f, hints[f.name])
    return parser


def _instances(types, namespace: argparse.Namespace) -> tuple:
    return tuple(cls(**{f.name: getattr(namespace, f.name) for f in dataclasses.fields(cls)})
                 for cls in types)


def parse_config(types, path: Path, config: dict, overrides: list[str], prog: str,
                 check: Callable[[dict[str, type]], None] = lambda types: None) -> tuple:
    """A config file's keys (`config`, read from `path`), then `--key=value` overrides -> one
    instance per dataclass, by TRL's `TrlParser` (a recipe's keys are the trainer's own
    dataclass fields, hundreds of them, as in `trl sft --config`). A key no dataclass has is one
    usage error naming the file and the nearest key; `check` sees each key's type before any
    value is converted."""
    from trl import TrlParser  # deferred: TRL imports torch and transformers (seconds)

    parser = TrlParser(types, prog=prog)
    parser.error = lambda message: KitParser.error(parser, message)
    known = {a.dest for a in parser._actions} - {"help", "config"}
    unknown = sorted((set(config) | set(flag_names(overrides))) - known)
    if unknown:
        hints = [f"{k} (did you mean {m[0]}?)" if (m := difflib.get_close_matches(k, known, 1))
                 else k for k in unknown]
        raise UsageError(f"{path}: unknown setting(s) {', '.join(hints)}: its keys are fields of "
                         f"{', '.join(cls.__name__ for cls in types)}")
    check({a.dest: a.type for a in parser._actions})
    try:
        return tuple(parser.parse_args_and_config(["--config", str(path), *overrides]))
    except (ValueError, TypeError, OverflowError) as exc:
        raise UsageError(f"{path}: {str(exc).splitlines()[0]}") from None


def config_help(types, prog: str) -> str:
    """Every key of `types`, as TRL's own parser lists them (imports TRL)."""
    from trl import TrlParser  # deferred: TRL imports torch and transformers (seconds)

    return TrlParser(types, prog=prog).format_help()


def flag_names(argv: list[str]) -> list[str]:
    """The keys of the `--key=value` / `--key value` flags in `argv`, snake_case."""
    return [a[2:].split("=", 1)[0].replace("-", "_") for a in argv if a.startswith("--")]


class KitParser(argparse.ArgumentParser):
    """argparse whose usage errors are the kit's one-line `UsageError` (exit 2, one line), so
    `meditod tiny` and `meditod app` fail like every other command."""

    def error(self, message: str):
        message = re.sub(r"(--\w+)/--[\w-]+", r"\1", message)  # `--max_length`, not its alias too
        raise UsageError(f"{message} (see {self.prog} -h)")


class _Help(argparse.HelpFormatter):
    """One name per flag (`--max_length N`; `--max-length` works but is not listed)."""

    def __init__(self, prog: str):
        super().__init__(prog, max_help_position=32,
                         width=min(shutil.get_terminal_size().columns, 100))

    def _format_action_invocation(self, action: argparse.Action) -> str:
        if not action.option_strings:
            return super()._format_action_invocation(action)
        name = action.option_strings[0]
        if action.nargs == 0:
            return name
        return f"{name} {self._format_args(action, self._get_default_metavar_for_optional(action))}"


def _plain_type(hint) -> tuple[type, bool]:
    """`X | None` -> (X, True); `X` -> (X, False)."""
    args = typing.get_args(hint)
    if type(None) in args:
        return next(a for a in args if a is not type(None)), True
    return hint, False


# The longest wait a `--...timeout` flag may ask for: a week. Python's clocks refuse much more
# (`--timeout 1e12` overflowed a thread's join and a socket's timeout).
TIMEOUT_MAX_S = 7 * 24 * 3600


def _bounded(name: str, kind: type, metadata) -> Callable[[str], int | float]:
    """The argparse `type` of a numeric flag: the number, finite and within its bounds (a
    timeout's bound, unless it declares one, is TIMEOUT_MAX_S)."""
    low, high, above = metadata.get("min"), metadata.get("max"), metadata.get("above")
    if high is None and name.endswith("timeout"):
        high = TIMEOUT_MAX_S

    def convert(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"must be {'a whole number' if kind is int else 'a number'}, got {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
        if above is not None and not value > above:
            raise argparse.ArgumentTypeError(
                f"must be {'a positive number' if above == 0 else f'above {above}'}, got {text}")
        if low is not None and value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {text}")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"must be at most {high}"
                                             f"{' (a week)' if high == TIMEOUT_MAX_S else ''}, "
                                             f"got {text}")
        return value
    convert.__name__ = name
    return convert


def _text(text: str) -> str:
    """The argparse `type` of a text flag that is not a path: Unicode text. Bytes that are not
    UTF-8 reach Python as lone surrogates (`\\udcff`), which no file, URL or JSON can hold; a
    path keeps them (they are the file name's bytes)."""
    if any("\ud800" <= c <= "\udfff" for c in text):
        raise argparse.ArgumentTypeError(f"holds bytes that are not UTF-8 text ({text!a}): "
                                         "retype it")
    return text


def _bool_value(text: str) -> bool:
    value = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}.get(
        text.lower())
    if value is None:
        raise argparse.ArgumentTypeError(f"must be true or false, got {text!r}")
    return value


def _add_field(parser: argparse.ArgumentParser, f: dataclasses.Field, hint) -> None:
    """One flag: `--name` (and `--name-with-hyphens`); help shows the default once."""
    names = [f"--{f.name}"] + ([f"--{f.name.replace('_', '-')}"] if "_" in f.name else [])
    kind, optional = _plain_type(hint)
    required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    default = None if required else (f.default_factory() if f.default is dataclasses.MISSING
                                     else f.default)
    help_ = f.metadata.get("help", "")
    kwargs: dict = {"dest": f.name, "default": default}
    if kind is bool and not optional:
        if default:  # on unless --no_name
            parser.add_argument(*names, action="store_true", help=f"{help_} (on by default)".strip(),
                                **kwargs)
            parser.add_argument(f"--no_{f.name}", f"--no-{f.name.replace('_', '-')}",
                                action="store_false", dest=f.name, help="turn it off")
        else:
            parser.add_argument(*names, action="store_true", help=help_, **kwargs)
        return
    if kind is bool:  # tri-state: unset means "decide from the run"
        kwargs.update(type=_bool_value, metavar="{true,false}")
    elif kind in (int, float):
        kwargs["type"] = _bounded(f.name, kind, f.metadata)
        kwargs["metavar"] = "N" if kind is int else "X"
    elif typing.get_origin(kind) is list:  # `--runs a b c`
        (kwargs["type"],) = typing.get_args(kind) or (str,)
        kwargs["type"] = _text if kwargs["type"] is str else kwargs["type"]
        kwargs["nargs"] = "+"  # given, it names at least one; not given, the default
    else:
        kwargs["type"] = _text if kind is str else kind
    if "choices" in f.metadata:
        kwargs["choices"] = f.metadata["choices"]
        kwargs.pop("metavar", None)
    if required:
        kwargs["required"] = True
    elif default is not None and "default" not in help_:
        help_ = f"{help_} (default: {default})".strip()
    parser.add_argument(*names, help=help_, **kwargs)
