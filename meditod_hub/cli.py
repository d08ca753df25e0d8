"""The `meditod` command: one subcommand per pipeline step, in the order data flows.

    meditod annotate --source my-release                  # label in the browser -> release
    meditod build --source data/sample --out meditod      # release -> Hub-ready folder
    meditod train tiny-llama nlu                          # recipes/tiny-llama/nlu.yaml -> run folder
    meditod predict --model_path runs/tiny-llama/nlu --task nlu --split test --out preds.jsonl
    meditod evaluate --task nlu --split test --predictions preds.jsonl --out results.json
    meditod fewshot --model gpt-4-turbo-2024-04-09 --endpoint https://api.openai.com/v1 --task nlu
    meditod <command> -h                                  # every flag of one command
    meditod --version

Each subcommand is a module with `main(argv) -> int` that parses its own dataclass arguments
(`parse_args` here, or `TrlParser` for train: snake_case flags, `--flag-name` accepted too).
Modules are imported only when their command runs, so `meditod -h` and light commands stay
fast. Failures and exit codes are `errors.run_main`'s: one line, 0/1/2/130.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import logging
import math
import os
import re
import shutil
import sys
import typing
from collections.abc import Callable

from meditod_hub import quiet
from meditod_hub.errors import EXIT_OK, EXIT_USAGE, UsageError, open_standard_streams, run_main

# name -> (module with main(argv), one-line help); the order is the order data flows.
COMMANDS: dict[str, tuple[str, str]] = {
    "annotate": ("meditod_hub.apps.annotate.serve", "label dialogues in the browser into a release folder"),
    "agreement": ("meditod_hub.evaluation.agreement", "score two annotators' releases of the same dialogues"),
    "build": ("meditod_hub.data.build", "validate a release and write the Hub-ready dataset folder"),
    "push": ("meditod_hub.publishing.hub", "upload a built dataset folder to the Hub (private, gated)"),
    "tiny": ("meditod_hub.models.tiny", "build the tiny offline models the tiny-* recipes train on CPU"),
    "pretrained": ("meditod_hub.models.pretrained", "fetch and convert the real pretrained model "
                                                    "(SmolLM2-135M-Instruct) offline"),
    "train": ("meditod_hub.models.train", "train MODEL [TASK] (a recipes/ folder) into run folders"),
    "predict": ("meditod_hub.models.predict", "greedy predictions of a run (or Hub model) on a split"),
    "fewshot": ("meditod_hub.evaluation.fewshot.run", "the paper's in-context baseline of a served model"),
    "evaluate": ("meditod_hub.evaluation.evaluate", "score a predictions file: results .json/.md/.png"),
    "publish": ("meditod_hub.publishing.publish", "push an evaluated run with its model card to the Hub"),
    "results": ("meditod_hub.evaluation.results", "the paper's tables beside your runs and the Hub's models "
                                       "(.md/.csv/.json/.png)"),
    "eval-cascade": ("meditod_hub.evaluation.eval_cascade", "NLU -> state -> POL -> NLG on a split, scored "
                                                 "beside gold inputs"),
    "chat": ("meditod_hub.apps.chat", "talk to the three models as the patient (terminal)"),
    "app": ("meditod_hub.apps.webapp", "the chat app in the browser (Gradio, http://127.0.0.1:7860)"),
    "space": ("meditod_hub.publishing.space", "upload the chat app (app.py) as a Hub Space, private"),
    "leaderboard": ("meditod_hub.publishing.leaderboard", "upload the results leaderboard as a Hub Space, "
                                               "private"),
}


def parse_args(types, argv: list[str], prog: str, description: str) -> tuple:
    """`argv` -> one instance per dataclass in `types`. Every flag is a dataclass field; a bad
    value or an unknown flag is a one-line usage error (exit 2), raised before any work.

    argparse directly (not transformers' HfArgumentParser): that parser passes every metadata key
    to argparse (no room for bounds), prints booleans as `--flag [FLAG]` and defaults twice, and
    its import alone costs seconds before `-h` can answer. Numeric fields are checked here, from
    their metadata: `min` / `max` (inclusive), `above` (exclusive); every float must be finite.
    """
    parser = KitParser(prog=prog, description=description, formatter_class=_Help,
                     allow_abbrev=False)
    for cls in types:
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            _add_field(parser, f, hints[f.name])
    namespace = parser.parse_args(argv)
    return tuple(cls(**{f.name: getattr(namespace, f.name) for f in dataclasses.fields(cls)})
                 for cls in types)


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


def _bounded(name: str, kind: type, metadata) -> Callable[[str], int | float]:
    """The argparse `type` of a numeric flag: the number, finite and within its bounds."""
    low, high, above = metadata.get("min"), metadata.get("max"), metadata.get("above")

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
            raise argparse.ArgumentTypeError(f"must be at most {high}, got {text}")
        return value
    convert.__name__ = name
    return convert


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
        kwargs["nargs"] = "+"  # given, it names at least one; not given, the default
    else:
        kwargs["type"] = kind
    if "choices" in f.metadata:
        kwargs["choices"] = f.metadata["choices"]
        kwargs.pop("metavar", None)
    if required:
        kwargs["required"] = True
    elif default is not None and "default" not in help_:
        help_ = f"{help_} (default: {default})".strip()
    parser.add_argument(*names, help=help_, **kwargs)


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = ["usage: meditod <command> [flags]   (meditod <command> -h for its flags)", "",
             "MediTOD Hub kit: build the dataset, train, predict, evaluate, publish.", "",
             "commands:"]
    lines += [f"  {name:<{width}}  {help_}" for name, (_, help_) in COMMANDS.items()]
    lines += ["", "--debug (or MEDITOD_DEBUG=1) shows the traceback of a failure; --version the "
              "kit's version."]
    return "\n".join(lines)


def version() -> str:
    """The installed distribution's version (pyproject.toml's, for an editable install)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("meditod-hub")
    except PackageNotFoundError:
        return "unknown (not installed: pip install -e .)"


def main(argv: list[str] | None = None) -> int:
    open_standard_streams()
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return EXIT_OK if argv else EXIT_USAGE
    if argv[0] == "--version":
        print(f"meditod {version()}")
        return EXIT_OK
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"error: unknown command {name!r}\n\n{usage()}", file=sys.stderr)
        return EXIT_USAGE
    if name == "train" and (not rest or train_help_requested(rest)):
        return print_train_help(rest)
    module = importlib.import_module(COMMANDS[name][0])
    if "transformers" in sys.modules:  # a command that loads models: one line per stage
        quiet.progress_bars_off()
    return run_main(module.main, rest)


def train_help_requested(rest: list[str]) -> bool:
    from meditod_hub.models.train_settings import wants_help

    return wants_help(rest)


def print_train_help(rest: list[str]) -> int:
    """`meditod train [<recipe.yaml>] -h`: answered without importing torch (train_settings);
    `meditod train` alone prints the same on stderr as a usage error."""
    from meditod_hub.models.train_settings import train_help

    print(train_help(rest), file=sys.stdout if rest else sys.stderr)
    return EXIT_OK if rest else EXIT_USAGE


def entry() -> None:
    """The console script: `main`, then an immediate exit once the output is flushed. Tearing
    down an interpreter that has imported torch and transformers takes about a second (their
    exit hooks and module finalisers), longer than many commands' own work; every file a
    command writes is closed (and atomically renamed) before `main` returns."""
    code = main()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    entry()
