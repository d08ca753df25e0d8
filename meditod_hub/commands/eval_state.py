"""`meditod eval-state`: the flags of `EvalStateArguments` -> `evaluation.state_accuracy`."""

from __future__ import annotations

import sys

from meditod_hub import quiet
from meditod_hub.arguments import parse_args
from meditod_hub.errors import run_main
from meditod_hub.evaluation import state_accuracy
from meditod_hub.evaluation.state_accuracy import EvalStateArguments


def main(argv: list[str]) -> int:
    (args,) = parse_args((EvalStateArguments,), argv, "meditod eval-state",
                         state_accuracy.__doc__.split("\n\n")[0])
    quiet.progress_bars_off()
    results = state_accuracy.evaluate_state(args)
    print(f"{results['model']} on {results['evaluated_on']}; trained on {results['trained_on']}; "
          f"{'under the CMAS grammar' if results['constrained'] else 'free decoding'}:")
    print(state_accuracy.table(results))
    print(f"wrote {results['out']}/{state_accuracy.RESULTS_FILE} and {state_accuracy.LINES_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main, sys.argv[1:]))
