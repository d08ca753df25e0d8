"""`meditod publish`: the flags of `PublishArguments` -> `publishing.publish` (a push, its dry
run, or the table of published runs)."""

from __future__ import annotations

import sys

from meditod_hub.arguments import parse_args
from meditod_hub.errors import UsageError, run_main
from meditod_hub.hubclient import check_repo_id
from meditod_hub.models.runs import PUBLISHED
from meditod_hub.publishing import publish
from meditod_hub.publishing.publish import PublishArguments


def main(argv: list[str]) -> int:
    (args,) = parse_args((PublishArguments,), argv, "meditod publish",
                         publish.__doc__.split("\n")[0])
    if args.leaderboard:  # the card links to it
        check_repo_id(args.leaderboard, "--leaderboard")
    if args.table:
        if not args.table.is_dir():
            raise UsageError(f"--table {args.table}: no such folder: give the folder of your runs "
                             "(e.g. runs)")
        table = publish.published_table(args.table)
        print(table)
        if table.count("\n") < 2:
            print(f"(no published run under {args.table}: `meditod publish` records each one in "
                  f"its run's {PUBLISHED})", file=sys.stderr)
    elif not (args.run and args.repo):
        raise UsageError("--run and --repo are required (or --table RUNS)")
    elif args.dry_run:
        print(publish.dry_run(args.run, args.repo, merged=args.merged, card_dir=args.card_dir,
                              cascade=args.cascade, leaderboard=args.leaderboard,
                              harness_results=args.harness_results))
    else:
        done = publish.publish(args.run, args.repo, public=args.public, merged=args.merged,
                               timeout=args.timeout, cascade=args.cascade,
                               leaderboard=args.leaderboard, harness_results=args.harness_results)
        state = "published" if done.new_commit else "already published, no new commit:"
        print(f"{state} run {done.run_id} at {done.url} revision {done.revision}"
              f"{' (also main)' if done.on_main else ''}, commit {done.commit}")
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main, sys.argv[1:]))
