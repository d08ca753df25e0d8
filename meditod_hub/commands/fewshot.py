"""`meditod fewshot`: the flags of `FewshotArguments` -> `evaluation.fewshot.run.run`."""

from __future__ import annotations

import sys

from meditod_hub.arguments import parse_args
from meditod_hub.errors import run_main
from meditod_hub.evaluation.fewshot import run
from meditod_hub.evaluation.fewshot.run import FewshotArguments


def main(argv: list[str]) -> int:
    (args,) = parse_args((FewshotArguments,), argv, "meditod fewshot",
                         run.__doc__.split("\n\n")[0])
    run.run(args)
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main, sys.argv[1:]))
