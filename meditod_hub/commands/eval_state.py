"""`meditod eval-state`: the flags of `EvalStateArguments` -> `evaluation.state_accuracy`."""

from __future__ import annotations

import sys

from meditod_hub.commands.heldout import run_check
from meditod_hub.errors import run_main
from meditod_hub.evaluation import state_accuracy
from meditod_hub.evaluation.state_accuracy import EvalStateArguments


def main(argv: list[str]) -> int:
    return run_check(argv, "meditod eval-state", state_accuracy, EvalStateArguments,
                     state_accuracy.evaluate_state, (state_accuracy.RESULTS_FILE, state_accuracy.LINES_FILE))


if __name__ == "__main__":
    sys.exit(run_main(main, sys.argv[1:]))
