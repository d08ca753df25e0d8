"""Build MediTOD into a Hub-ready dataset folder, and push it (the kit's dataset script).

    # the embedded synthetic sample (what `make data` does without SOURCE)
    python meditod.py build --source data/sample --out meditod
    # the real release (canonical JSON from the authors, UMLS licence required)
    python meditod.py build --source /path/to/MediTOD/data --ood_source /path/to/ood --out meditod
    python -c "from datasets import load_dataset; print(load_dataset('meditod', 'nlu'))"
    # upload: private and gated unless the build is synthetic; --public to make it public
    python meditod.py push --folder meditod --repo my-org/meditod

The same as `meditod build` / `meditod push` (meditod_hub.data.build, meditod_hub.publishing.hub): the output
folder holds one Parquet file per config and split, the dataset card (`README.md`, whose YAML
`configs:` lets `datasets` load it without a script), `dataset_infos.json` and the build manifest.
"""

from __future__ import annotations

import sys

from meditod_hub.cli import COMMANDS
from meditod_hub.cli import main as cli_main
from meditod_hub.data.build import BuildArguments, build
from meditod_hub.errors import EXIT_USAGE

__all__ = ["BuildArguments", "build"]
COMMANDS_HERE = ("build", "push")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS_HERE:
        width = max(map(len, COMMANDS_HERE))
        print("usage: python meditod.py {build,push} [flags]  (-h for the flags of each)\n\n"
              + "\n".join(f"  {c:<{width}}  {COMMANDS[c][1]}" for c in COMMANDS_HERE),
              file=sys.stderr if argv[:1] not in (["-h"], ["--help"]) else sys.stdout)
        return 0 if argv[:1] in (["-h"], ["--help"]) else EXIT_USAGE
    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())
