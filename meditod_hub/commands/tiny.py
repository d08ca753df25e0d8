"""`meditod tiny`: which tiny models to build, from which dataset, into which folder ->
`models.tiny.build_all`."""

from __future__ import annotations

import json
import sys

from meditod_hub.arguments import KitParser
from meditod_hub.errors import run_main
from meditod_hub.models import tiny
from meditod_hub.models.tiny import DEFAULT_OUT, FAMILY_OF


def main(argv: list[str]) -> int:
    parser = KitParser(prog="meditod tiny", description=tiny.__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="meditod",
                        help="built dataset folder (meditod build; default: meditod)")
    parser.add_argument("--out", default=str(DEFAULT_OUT),
                        help=f"folder the models are written into, one subfolder each (default: "
                             f"{DEFAULT_OUT}, where the tiny-* recipes look for them)")
    parser.add_argument("--models", nargs="+", default=list(FAMILY_OF), choices=list(FAMILY_OF),
                        metavar="NAME", help=f"which to build: {', '.join(FAMILY_OF)} (default: all)")
    args = parser.parse_args(argv)
    for name, path in tiny.build_all(args.data, args.out, args.models).items():
        params = json.loads((path / "tiny.json").read_text())["parameters"]
        print(f"{name}: {path} ({params / 1e6:.2f}M parameters)")
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main, sys.argv[1:]))
