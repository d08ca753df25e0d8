"""`meditod results`: the flags of `ResultsArguments` -> `evaluation.results`' report, written
and printed by `evaluation.results_render`."""

from __future__ import annotations

import sys
from pathlib import Path

from meditod_hub.arguments import parse_args
from meditod_hub.errors import run_main
from meditod_hub.evaluation import results
from meditod_hub.evaluation.results import ResultsArguments
from meditod_hub.evaluation.results_render import markdown, write_report


def main(argv: list[str]) -> int:
    (args,) = parse_args((ResultsArguments,), argv, "meditod results",
                         results.__doc__.split("\n\n")[0])
    report = results.build_report(args.runs, args.hub_dataset, args.hub_models, args.timeout)
    written = write_report(report, args.out,
                           input_folders=[r for r in args.runs if Path(r).is_dir()])
    for problem in report.skipped:
        print(f"skipped: {problem}", file=sys.stderr)
    print(markdown(report))
    local = sum(r.source == "local" for r in report.rows)
    hub = sum(r.source == "hub" for r in report.rows)
    print(f"{local} local and {hub} Hub rows beside the paper's "
          f"{sum(r.source == 'paper' for r in report.rows)}; {len(report.unread)} Hub models "
          f"without a row; wrote {', '.join(str(p) for p in written)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main, sys.argv[1:]))
