"""The `meditod` command: one subcommand per pipeline step, in the order data flows.

    meditod annotate --source my-release                  # label in the browser -> release
    meditod build --source data/sample --out meditod      # release -> Hub-ready folder
    meditod train tiny-llama nlu                          # recipes/tiny-llama/nlu.yaml -> run folder
    meditod predict --model_path runs/tiny-llama/nlu --task nlu --split test --out preds.jsonl
    meditod evaluate --task nlu --split test --predictions preds.jsonl --out results.json
    meditod fewshot --model gpt-4-turbo-2024-04-09 --endpoint https://api.openai.com/v1 --task nlu
    meditod <command> -h                                  # every flag of one command
    meditod --version

Each subcommand is a module of `meditod_hub.commands` with `main(argv) -> int`: it parses the
flags into the library's dataclass arguments (`arguments.parse_args`, or `TrlParser` for train:
snake_case flags, `--flag-name` accepted too) and calls the library, which never reads argv.
Modules are imported only when their command runs, so `meditod -h` and light commands stay
fast. Failures and exit codes are `errors.run_main`'s: one line, 0/1/2/130.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys

from meditod_hub import quiet
from meditod_hub.errors import EXIT_OK, EXIT_USAGE, open_standard_streams, run_main

# name -> (module with main(argv), one-line help); the order is the order data flows.
COMMANDS: dict[str, tuple[str, str]] = {
    "annotate": ("meditod_hub.commands.annotate", "label dialogues in the browser into a release folder"),
    "agreement": ("meditod_hub.commands.agreement", "score two annotators' releases of the same dialogues"),
    "build": ("meditod_hub.commands.build", "validate a release and write the Hub-ready dataset folder"),
    "push": ("meditod_hub.commands.push", "upload a built dataset folder to the Hub (private, gated)"),
    "tiny": ("meditod_hub.commands.tiny", "build the tiny offline models the tiny-* recipes train on CPU"),
    "pretrained": ("meditod_hub.commands.pretrained", "fetch and convert the real pretrained model "
                                                    "(SmolLM2-135M-Instruct) offline"),
    "train": ("meditod_hub.commands.train", "train MODEL [TASK] (a recipes/ folder) into run folders"),
    "predict": ("meditod_hub.commands.predict", "greedy predictions of a run (or Hub model) on a split"),
    "fewshot": ("meditod_hub.commands.fewshot", "the paper's in-context baseline of a served model"),
    "evaluate": ("meditod_hub.commands.evaluate", "score a predictions file: results .json/.md/.png"),
    "harness": ("meditod_hub.commands.harness", "MediTOD tasks for lm-evaluation-harness, "
                                                        "and the lm_eval command lines"),
    "publish": ("meditod_hub.commands.publish", "push an evaluated run with its model card to the Hub"),
    "results": ("meditod_hub.commands.results", "the paper's tables beside your runs and the Hub's models "
                                       "(.md/.csv/.json/.png)"),
    "eval-cascade": ("meditod_hub.commands.eval_cascade", "NLU -> state -> POL -> NLG on a split, scored "
                                                 "beside gold inputs"),
    "eval-state": ("meditod_hub.commands.eval_state", "an NLU model's state accuracy on the kit's "
                                                     "held-out patient lines"),
    "eval-policy": ("meditod_hub.commands.eval_policy", "a POL model's acceptable next actions on the "
                                                       "kit's held-out interview moments"),
    "eval-nlg": ("meditod_hub.commands.eval_nlg", "an NLG model's slot errors and questions on the "
                                                 "kit's held-out action sets"),
    "eval-conversations": ("meditod_hub.commands.eval_conversations", "the assistant through the "
                           "kit's scripted patient conversations, each turn marked right or wrong"),
    "chat": ("meditod_hub.commands.chat", "talk to the three models as the patient (terminal)"),
    "app": ("meditod_hub.commands.app", "the chat app in the browser (Gradio, http://127.0.0.1:7860)"),
    "space": ("meditod_hub.commands.space", "upload the chat app (app.py) as a Hub Space, private"),
    "leaderboard": ("meditod_hub.commands.leaderboard", "upload the results leaderboard as a Hub Space, "
                                               "private"),
}


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
    # deferred: only --version reads the installed metadata; meditod -h stays fast
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
    quiet.command_warnings_off()
    if name not in COMMANDS:
        print(f"error: unknown command {name!r}\n\n{usage()}", file=sys.stderr)
        return EXIT_USAGE
    if name == "train" and (code := answer_train_help(rest)) is not None:
        return code
    module = importlib.import_module(COMMANDS[name][0])
    if "transformers" in sys.modules:  # a command that loads models: one line per stage
        quiet.progress_bars_off()
    return run_main(module.main, rest)


def answer_train_help(rest: list[str]) -> int | None:
    """`meditod train` alone or with -h: its help, answered without torch (but --help_all) and
    outside `run_main` (`commands.train.answer_help` says which lines are help); None for a line
    that trains."""
    # deferred: cli imports a command's module only when it runs (meditod -h stays fast)
    from meditod_hub.commands.train import answer_help

    return answer_help(rest)


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
