"""`meditod space`: the flags of `space_arguments` (made from the stages) -> `publishing.space`'s
plan and upload."""

from __future__ import annotations

import sys

from meditod_hub.arguments import parse_args
from meditod_hub.errors import run_main
from meditod_hub.models.cascade import stages
from meditod_hub.publishing import space
from meditod_hub.publishing.space import space_arguments


def argument_types() -> tuple[type, ...]:
    """The flags' dataclass, made from the stages now."""
    return (space_arguments(stages()),)


def main(argv: list[str]) -> int:
    (args,) = parse_args(argument_types(), argv, "meditod space", space.__doc__.split("\n\n")[0])
    files, settings = space.plan(args)
    if args.dry_run:
        space.print_plan(args.repo, files, args.public)
        return 0
    url = space.upload(args.repo, files, public=args.public, timeout=args.timeout,
                       take_over=args.take_over)
    print(f"uploaded the app ({len(files)} files; models: "
          f"{', '.join(s['source'] for s in settings.values())}) to {url}")
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main, sys.argv[1:]))
