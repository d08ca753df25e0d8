"""`meditod agreement`: the flags of `AgreementArguments` -> `evaluation.agreement`, printed and
written."""

from __future__ import annotations

import json
import sys

from meditod_hub.arguments import parse_args
from meditod_hub.errors import run_main
from meditod_hub.evaluation import agreement
from meditod_hub.evaluation.agreement import AgreementArguments
from meditod_hub.files import atomic_write, output_path


def main(argv: list[str]) -> int:
    (args,) = parse_args([AgreementArguments], argv, "meditod agreement",
                         agreement.__doc__.split("\n\n")[0])
    if args.out:  # before the work: never over an annotator's files or another command's
        output_path(args.out, purpose="agreement", input_folders=[args.a, args.b])
    results = agreement.agreement(agreement.load(args.a, "A"), agreement.load(args.b, "B"))
    print(agreement.summary(results))
    if args.out:
        atomic_write(args.out, json.dumps(results, indent=2) + "\n", purpose="agreement")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main, sys.argv[1:]))
