"""The `meditod` command: one subcommand per pipeline step, in the order data flows.

    meditod annotate --source my-release                  # label in the browser -> release
    meditod build --source data/sample --out meditod      # release -> Hub-ready folder
    meditod train recipes/tiny-llama/nlu.yaml             # recipe -> run folder
    meditod predict --model_path runs/tiny-llama/nlu --task nlu --split test --out preds.jsonl
    meditod evaluate --task nlu --split test --predictions preds.jsonl --out results.json
    meditod fewshot --model gpt-4-turbo-2024-04-09 --endpoint https://api.openai.com/v1 --task nlu
    meditod <command> -h                                  # every flag of one command

Each subcommand is a module with `main(argv) -> int` that parses its own dataclass arguments
(`HfArgumentParser`, or `TrlParser` for train: snake_case flags, `--flag-name` accepted too).
Modules are imported only when their command runs, so `meditod -h` and light commands stay
fast. Failures and exit codes are `errors.run_main`'s: one line, 0/1/2/130.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys

from .errors import EXIT_OK, EXIT_USAGE, run_main

# name -> (module with main(argv), one-line help); the order is the order data flows.
COMMANDS: dict[str, tuple[str, str]] = {
    "annotate": ("meditod_hub.annotate.serve", "label dialogues in the browser into a release folder"),
    "agreement": ("meditod_hub.agreement", "score two annotators' releases of the same dialogues"),
    "build": ("meditod_hub.build", "validate a release and write the Hub-ready dataset folder"),
    "push": ("meditod_hub.hub", "upload a built dataset folder to the Hub (private, gated)"),
    "train": ("meditod_hub.train", "train a model from a recipe into a run folder"),
    "predict": ("meditod_hub.predict", "greedy predictions of a run (or Hub model) on a split"),
    "fewshot": ("meditod_hub.fewshot.run", "the paper's in-context baseline of a served model"),
    "evaluate": ("meditod_hub.evaluate", "score a predictions file: results .json/.md/.png"),
    "publish": ("meditod_hub.publish", "push an evaluated run with its model card to the Hub"),
    "results": ("meditod_hub.results", "the paper's tables beside your runs and the Hub's models "
                                       "(.md/.csv/.json/.png)"),
    "eval-cascade": ("meditod_hub.eval_cascade", "NLU -> state -> POL -> NLG on a split, scored "
                                                 "beside gold inputs"),
    "chat": ("meditod_hub.chat", "talk to the three models as the patient (terminal)"),
    "space": ("meditod_hub.space", "upload the chat app (app.py) as a Hub Space, private"),
    "leaderboard": ("meditod_hub.leaderboard", "upload the results leaderboard as a Hub Space, "
                                               "private"),
}


def parse_args(types, argv: list[str], prog: str, description: str) -> tuple:
    """`argv` -> one instance per dataclass in `types`; an unknown flag is a usage error (exit 2)."""
    from transformers import HfArgumentParser

    parser = HfArgumentParser(types, prog=prog, description=description)
    namespace, unknown = parser.parse_known_args(argv)
    if unknown:
        parser.error(f"unrecognised arguments: {' '.join(unknown)}")
    return tuple(cls(**{k: v for k, v in vars(namespace).items() if k in cls.__dataclass_fields__})
                 for cls in types)


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = ["usage: meditod <command> [flags]   (meditod <command> -h for its flags)", "",
             "MediTOD Hub kit: build the dataset, train, predict, evaluate, publish.", "",
             "commands:"]
    lines += [f"  {name:<{width}}  {help_}" for name, (_, help_) in COMMANDS.items()]
    lines += ["", "--debug (or MEDITOD_DEBUG=1) shows the traceback of a failure."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return EXIT_OK if argv else EXIT_USAGE
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"error: unknown command {name!r}\n\n{usage()}", file=sys.stderr)
        return EXIT_USAGE
    module = importlib.import_module(COMMANDS[name][0])
    return run_main(module.main, rest)


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
