"""`meditod eval-policy`: the flags of `EvalPolicyArguments` -> `evaluation.policy_accuracy`."""

from __future__ import annotations

import sys

from meditod_hub import quiet
from meditod_hub.arguments import parse_args
from meditod_hub.errors import run_main
from meditod_hub.evaluation import policy_accuracy
from meditod_hub.evaluation.policy_accuracy import EvalPolicyArguments


def main(argv: list[str]) -> int:
    (args,) = parse_args((EvalPolicyArguments,), argv, "meditod eval-policy",
                         policy_accuracy.__doc__.split("\n\n")[0])
    quiet.progress_bars_off()
    results = policy_accuracy.evaluate_policy(args)
    print(f"{results['model']} on {results['evaluated_on']}; trained on {results['trained_on']}; "
          f"{'under the CMAS grammar' if results['constrained'] else 'free decoding'}:")
    print(policy_accuracy.table(results))
    print(f"wrote {results['out']}/{policy_accuracy.RESULTS_FILE} and "
          f"{policy_accuracy.MOMENTS_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main, sys.argv[1:]))
