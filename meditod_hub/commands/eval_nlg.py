"""`meditod eval-nlg`: the flags of `EvalNlgArguments` -> `evaluation.nlg_accuracy`."""

from __future__ import annotations

import sys

from meditod_hub import quiet
from meditod_hub.arguments import parse_args
from meditod_hub.errors import run_main
from meditod_hub.evaluation import nlg_accuracy
from meditod_hub.evaluation.nlg_accuracy import EvalNlgArguments


def main(argv: list[str]) -> int:
    (args,) = parse_args((EvalNlgArguments,), argv, "meditod eval-nlg",
                         nlg_accuracy.__doc__.split("\n\n")[0])
    quiet.progress_bars_off()
    results = nlg_accuracy.evaluate_nlg(args)
    print(f"{results['model']} on {results['evaluated_on']}; trained on {results['trained_on']}; "
          f"{'under the grammar' if results['constrained'] else 'free decoding'}:")
    print(nlg_accuracy.table(results))
    print(f"wrote {results['out']}/{nlg_accuracy.RESULTS_FILE} and {nlg_accuracy.ITEMS_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main, sys.argv[1:]))
