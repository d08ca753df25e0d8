"""`meditod leaderboard`: the flags of `LeaderboardArguments` -> the leaderboard Space's files,
uploaded through `publishing.space.upload`."""

from __future__ import annotations

import sys

from meditod_hub.arguments import parse_args
from meditod_hub.errors import run_main
from meditod_hub.publishing import leaderboard
from meditod_hub.publishing.leaderboard import LeaderboardArguments
from meditod_hub.publishing.space import print_plan, upload


def main(argv: list[str]) -> int:
    (args,) = parse_args((LeaderboardArguments,), argv, "meditod leaderboard",
                         leaderboard.__doc__.split("\n\n")[0])
    files = leaderboard.plan(args)
    if args.dry_run:
        print_plan(args.repo, files, args.public)
        return 0
    url = upload(args.repo, files, public=args.public, timeout=args.timeout,
                 what="the leaderboard", message=f"MediTOD leaderboard for {args.dataset}",
                 command="leaderboard", take_over=args.take_over)
    print(f"uploaded the leaderboard of {args.dataset} ({len(files)} files) to {url}")
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main, sys.argv[1:]))
