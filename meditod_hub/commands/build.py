"""`meditod build`: the flags of `BuildArguments` -> `data.build.build`, and what was built."""

from __future__ import annotations

import sys

from meditod_hub.arguments import parse_args
from meditod_hub.data import build
from meditod_hub.data.build import BuildArguments
from meditod_hub.data.card import splits_table
from meditod_hub.data.release import OOD_SPLIT
from meditod_hub.errors import run_main


def main(argv: list[str]) -> int:
    (args,) = parse_args((BuildArguments,), argv, "meditod build", build.__doc__.split("\n\n")[0])
    built = build.build(args)
    print(f"built {args.out}: {built.provenance.describe()}")
    gate = "be gated, manual approval of each request" if built.licence.gated else "not be gated"
    print(f"licence: {built.licence.reason}; a push will {gate}; "
          f"{len(built.release.problems)} warning(s)")
    print(splits_table(built.sizes))
    if not built.release.has_ood:
        print(f"no out-of-domain set given: no {OOD_SPLIT} split")
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main, sys.argv[1:]))
