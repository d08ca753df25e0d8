"""`meditod eval-policy`: the flags of `EvalPolicyArguments` -> `evaluation.policy_accuracy`."""

from __future__ import annotations

import sys

from meditod_hub.commands.heldout import run_check
from meditod_hub.errors import run_main
from meditod_hub.evaluation import policy_accuracy
from meditod_hub.evaluation.policy_accuracy import EvalPolicyArguments


def main(argv: list[str]) -> int:
    return run_check(argv, "meditod eval-policy", policy_accuracy,
                     EvalPolicyArguments, policy_accuracy.evaluate_policy,
                     (policy_accuracy.RESULTS_FILE, policy_accuracy.MOMENTS_FILE))


if __name__ == "__main__":
    sys.exit(run_main(main, sys.argv[1:]))
