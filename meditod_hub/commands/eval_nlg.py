"""`meditod eval-nlg`: the flags of `EvalNlgArguments` -> `evaluation.nlg_accuracy`."""

from __future__ import annotations

import sys

from meditod_hub.commands.heldout import run_check
from meditod_hub.errors import run_main
from meditod_hub.evaluation import nlg_accuracy
from meditod_hub.evaluation.nlg_accuracy import EvalNlgArguments


def main(argv: list[str]) -> int:
    return run_check(argv, "meditod eval-nlg", nlg_accuracy, EvalNlgArguments,
                     nlg_accuracy.evaluate_nlg, (nlg_accuracy.RESULTS_FILE, nlg_accuracy.ITEMS_FILE))


if __name__ == "__main__":
    sys.exit(run_main(main, sys.argv[1:]))
