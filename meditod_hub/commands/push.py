"""`meditod push`: the flags of `PushArguments` -> `publishing.hub.push_dataset`."""

from __future__ import annotations

import sys

from meditod_hub.arguments import parse_args
from meditod_hub.errors import run_main
from meditod_hub.publishing import hub
from meditod_hub.publishing.hub import PushArguments


def main(argv: list[str]) -> int:
    (args,) = parse_args((PushArguments,), argv, "meditod push", hub.__doc__.split("\n\n")[0])
    url = hub.push_dataset(args.folder, args.repo, args.public, args.timeout)
    print(f"pushed {args.folder} to {url}")
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main, sys.argv[1:]))
