"""`python -m meditod_hub.commands.synthetic`: write a synthetic release folder
(`data.synthetic.generate_release`). Not a `meditod` subcommand: benches, tests and the demo
make their corpora with it.

    python -m meditod_hub.commands.synthetic --out /tmp/synthetic --seed 0
    python -m meditod_hub.commands.synthetic --out /tmp/small --dialogues 12
    python -m meditod_hub.commands.synthetic --out /tmp/train --dialogues 40 --style realistic
"""

from __future__ import annotations

import sys
from pathlib import Path

from meditod_hub.arguments import KitParser
from meditod_hub.data import synthetic
from meditod_hub.errors import UsageError, run_main


def main(argv: list[str]) -> int:
    parser = KitParser(prog="python -m meditod_hub.commands.synthetic",
                       description=synthetic.__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="release folder to write")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dialogues", type=int, default=synthetic.PAPER_DIALOGUES)
    parser.add_argument("--style", choices=synthetic.STYLES, default=synthetic.DEFAULT_STYLE,
                        help="how utterances say their labels (template: filler-padded, the "
                             "paper's lengths; realistic: varied natural phrasings)")
    args = parser.parse_args(argv)
    if args.dialogues < len(synthetic.PAPER_SHAPE):
        raise UsageError(f"--dialogues {args.dialogues}: give at least {len(synthetic.PAPER_SHAPE)}"
                         f" (one per split: {', '.join(synthetic.PAPER_SHAPE)})")
    out = synthetic.generate_release(args.out, args.seed, args.dialogues, args.style)
    print(f"wrote {args.dialogues} synthetic dialogues ({args.style} style) to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main, sys.argv[1:]))
