"""Build MediTOD into a Hub-ready dataset folder, and push it.

    # the embedded synthetic sample (what `make data` does without SOURCE)
    python meditod.py build --source data/sample --out meditod
    # the real release (canonical JSON from the authors, UMLS licence required)
    python meditod.py build --source /path/to/MediTOD/data --ood-source /path/to/ood --out meditod
    python -c "from datasets import load_dataset; print(load_dataset('meditod', 'nlu'))"
    # upload: private and gated unless --public
    python meditod.py push --folder meditod --repo my-org/meditod

The output folder holds one Parquet file per config and split, the dataset card (`README.md`,
whose YAML `configs:` lets `datasets` load it without a script) and `dataset_infos.json`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from datasets import Dataset, DatasetInfo, SplitDict, SplitInfo, disable_progress_bars
from datasets.info import DatasetInfosDict

from meditod_hub.card import render_dataset_card, splits_table
from meditod_hub.hub import HubError, push_dataset
from meditod_hub.release import SPLITS, Release, ReleaseError, read_release
from meditod_hub.views import CONFIGS, FEATURES, view_rows

PROJECT_ROOT = Path(__file__).resolve().parent
EMBEDDED_SAMPLE = PROJECT_ROOT / "data" / "sample"
RELEASE_METADATA = "release.json"  # optional: {"synthetic": true, "name": ..., "description": ...}


@dataclass
class BuildArguments:
    source: Path = EMBEDDED_SAMPLE
    out: Path = Path("meditod")
    ood_source: Path | None = None
    strict: bool = False


@dataclass
class PushArguments:
    repo: str
    folder: Path = Path("meditod")
    public: bool = False
    timeout: float = 30.0


def view_tables(release: Release) -> dict[str, dict[str, list[dict]]]:
    """config -> split -> rows: every view computed once, for Parquet, infos and the card."""
    tables = {config: {} for config in CONFIGS}
    for split, ids in release.splits.items():
        for config in ("dialogues", "nlu", "nlg"):
            tables[config][split] = [row for d in ids for row in view_rows(config, d, release.dialogues[d])]
        # pol rows are nlg rows without the target: derive them rather than fold every state twice
        tables["pol"][split] = [{k: row[k] for k in FEATURES["pol"]} for row in tables["nlg"][split]]
    return tables


def split_sizes(release: Release, tables: dict) -> dict[str, dict[str, int]]:
    """Dialogues, utterances and rows per view for each split (the card's splits table)."""
    return {split: {"dialogues": len(ids),
                    "utterances": sum(len(release.dialogues[d]["utterances"]) for d in ids),
                    **{config: len(tables[config][split]) for config in CONFIGS[1:]}}
            for split, ids in release.splits.items()}


def dataset_infos(tables: dict) -> DatasetInfosDict:
    """Features per config and row counts per split: what `dataset_infos.json` records."""
    infos = DatasetInfosDict()
    for config, splits in tables.items():
        split_dict = SplitDict()
        for split, rows in splits.items():
            if rows:
                split_dict.add(SplitInfo(name=split, num_examples=len(rows)))
        infos[config] = DatasetInfo(features=FEATURES[config], splits=split_dict, config_name=config)
    return infos


def infos_json(infos: DatasetInfosDict) -> dict:
    """The deterministic part of the infos: features and row counts (no byte sizes)."""
    return {name: {"config_name": name, "features": info.features.to_dict(),
                   "splits": {s.name: {"name": s.name, "num_examples": s.num_examples}
                              for s in info.splits.values()}}
            for name, info in infos.items()}


def release_metadata(source: Path) -> dict:
    path = source / RELEASE_METADATA
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def build(args: BuildArguments) -> tuple[Release, dict[str, dict[str, int]]]:
    disable_progress_bars()
    release = read_release(args.source, args.ood_source, strict=args.strict)
    for problem in release.problems:
        print(problem, file=sys.stderr)
    out = Path(args.out)
    tables = view_tables(release)
    for config in CONFIGS:
        shutil.rmtree(out / config, ignore_errors=True)
    for split in release.splits:
        encoded = {}
        for config in ("dialogues", "nlu", "nlg", "pol"):
            if not tables[config][split]:
                continue
            if config == "pol":  # pol = nlg minus the target: reuse the encoded table
                encoded[config] = encoded["nlg"].remove_columns("response")
            else:
                encoded[config] = Dataset.from_list(tables[config][split], features=FEATURES[config])
            encoded[config].to_parquet(out / config / f"{split}-00000-of-00001.parquet")
    infos = dataset_infos(tables)
    (out / "dataset_infos.json").write_text(json.dumps(infos_json(infos), indent=2) + "\n",
                                            encoding="utf-8")
    sizes = split_sizes(release, tables)
    card = render_dataset_card(release, infos, sizes, release_metadata(args.source))
    card.save(out / "README.md")
    return release, sizes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    b = commands.add_parser("build", help="validate a release and write the Hub-ready folder")
    b.add_argument("--source", type=Path, default=BuildArguments.source,
                   help="release folder with dialogs.json and *_ids.json (default: embedded sample)")
    b.add_argument("--ood-source", type=Path, help="a second release folder, all out-of-domain")
    b.add_argument("--out", type=Path, default=BuildArguments.out)
    b.add_argument("--strict", action="store_true", help="refuse warnings too")
    p = commands.add_parser("push", help="upload a built folder to the Hub (private, gated)")
    p.add_argument("--repo", required=True, help="ORG/NAME on the Hub")
    p.add_argument("--folder", type=Path, default=PushArguments.folder)
    p.add_argument("--public", action="store_true", help="make the repo public (default private)")
    p.add_argument("--timeout", type=float, default=PushArguments.timeout,
                   help="HTTP timeout in seconds")
    args = vars(parser.parse_args(argv))
    command = args.pop("command")
    try:
        if command == "build":
            release, sizes = build(BuildArguments(**args))
            print(f"built {args['out']} ({len(release.problems)} warning(s))")
            print(splits_table(sizes))
            if not release.has_ood:
                print("no out-of-domain set given: no test_ood split")
        else:
            url = push_dataset(PushArguments(**args))
            print(f"pushed {args['folder']} to {url}")
    except (ReleaseError, HubError) as exc:
        print(exc, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
