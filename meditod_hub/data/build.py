"""Build a MediTOD release into a Hub-ready dataset folder, atomically.

    meditod build --source data/sample --out meditod
    meditod build --source /path/to/MediTOD/data --ood_source /path/to/ood --out meditod

The folder holds one Parquet file per config and split, the dataset card (`README.md`, whose
YAML `configs:` lets `datasets` load it without a script), `dataset_infos.json`, and
`build_manifest.json`: every file's sha256, the release's fingerprints, and its licence
(`licence.licence_of`: synthetic only when proven from the content, the user's own dialogues when
declared with a licence, else licence-restricted MediTOD data, gated). `meditod push` trusts the
manifest, never the card.

Safety: the build writes into a temporary folder beside `--out` and moves it into place only
when complete, under a lock, so an interrupted or concurrent build leaves the previous build
intact. `--out` must be new, empty, or a previous build of this kit (its manifest lists every
file in it); it may not be, or sit inside, a release folder.

Speed and memory: the release is read and validated once, and written a dialogue at a time
(`parquet`); `datasets` is not imported (the schema, infos and card metadata come from
`tasks.FEATURES`, checked against `datasets` by the tests).

This module is the build itself, in order (`build`), and what the card's metadata and
`dataset_infos.json` say of the features and splits; each other job has a module of its own:
`parquet` (the Arrow schema and the Parquet files), `manifest` (the manifest, written and read),
`build_lock` (one build per folder), and `proof.reprove_licence` (a manifest's licence proven
again before a push).
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from meditod_hub.data import provenance
from meditod_hub.data.build_lock import build_lock
from meditod_hub.data.card import render_dataset_card
from meditod_hub.data.dataset import MANIFEST
from meditod_hub.data.licence import OWN, SAMPLE_FINGERPRINT, Licence, licence_of
from meditod_hub.data.manifest import ManifestError, folder_files, read_manifest, write_manifest
from meditod_hub.data.parquet import write_parquet
from meditod_hub.data.provenance import Provenance
from meditod_hub.data.release import Release, read_release
from meditod_hub.data.tasks import CONFIGS, FEATURES
from meditod_hub.errors import OS_HINTS, MeditodError, UsageError
from meditod_hub.files import PREVIOUS_MARK, new_folder, replaceable_folder

IDENTITY_KEYS = ("name", "description", "license")  # flags that override release.json's keys
BUILD_MARK = ".build-"  # a build in progress: `.<out>.build-<random>` beside --out


@dataclass
class BuildArguments:
    source: Path = field(default=Path("data/sample"), metadata={
        "help": "release folder with dialogs.json and *_ids.json (default: the embedded sample)"})
    out: Path = field(default=Path("meditod"), metadata={
        "help": "dataset folder to write: new, empty, or a previous build"})
    ood_source: Path | None = field(default=None, metadata={
        "help": "a second release folder whose dialogues are all out-of-domain"})
    strict: bool = field(default=False, metadata={"help": "refuse warnings too"})
    name: str | None = field(default=None, metadata={
        "help": "the dataset card's title (default: release.json's `name`)"})
    description: str | None = field(default=None, metadata={
        "help": "the card's description (default: release.json's `description`)"})
    license: str | None = field(default=None, metadata={
        "help": "declare the dialogues your own (not MediTOD's), under this licence id, e.g. "
                "cc-by-4.0 (default: release.json's `license`); pushed ungated"})


@dataclass
class Built:
    release: Release
    licence: Licence
    sizes: dict[str, dict[str, int]]
    manifest: dict
    provenance: Provenance


def provenance_kind(licence: Licence, content: str) -> str:
    """What the licence proof says the dialogues are."""
    if licence.synthetic:
        return provenance.EMBEDDED_SAMPLE if content == SAMPLE_FINGERPRINT \
            else provenance.SYNTHETIC_CORPUS
    return provenance.OWN if licence.kind == OWN else provenance.MEDITOD


# --- the card's metadata and dataset_infos.json, from the one feature spec ------------------------
def _yaml_feature(feature: dict):
    kind = feature.get("_type")
    if kind == "Value":
        return feature["dtype"]
    if kind == "Json":
        return "json"
    if kind == "List":
        return {"list": _yaml_feature(feature["feature"])}
    return [_named(name, sub) for name, sub in feature.items()]


def _named(name: str, feature: dict) -> dict:
    value = _yaml_feature(feature)
    if isinstance(value, str):
        return {"name": name, "dtype": value}
    if isinstance(value, list):
        return {"name": name, "struct": value}
    return {"name": name, **value}


def card_dataset_info(counts: dict[str, dict[str, int]],
                      sizes: dict[str, dict[str, tuple[int, int]]]) -> list[dict]:
    """The card's `dataset_info` YAML (what `DatasetInfosDict.to_dataset_card_data` writes):
    per split its rows and `num_bytes` (its Arrow size, as `datasets` counts it), per config
    `download_size` (its Parquet files' bytes) and `dataset_size` (the splits' Arrow bytes).
    `sizes[config][split]` = (Arrow bytes, Parquet file bytes), from `write_parquet`."""
    info = []
    for config in sorted(counts):
        splits = [{"name": split, "num_bytes": sizes[config][split][0], "num_examples": n}
                  for split, n in counts[config].items()]
        info.append({"config_name": config,
                     "features": [_named(name, f) for name, f in FEATURES[config].items()],
                     "splits": splits,
                     "download_size": sum(sizes[config][s][1] for s in counts[config]),
                     "dataset_size": sum(s["num_bytes"] for s in splits)})
    return info


def infos_json(counts: dict[str, dict[str, int]], origin: Provenance, license: str) -> dict:
    """dataset_infos.json: what the data is (`Provenance.description`, its citations, its
    licence), features and row counts per config (no byte sizes: deterministic)."""
    about = {"description": origin.description(), "citation": "\n\n".join(origin.citations()),
             "license": license}
    return {config: {"config_name": config, **about, "features": FEATURES[config],
                     "splits": {s: {"name": s, "num_examples": n} for s, n in counts[config].items()}}
            for config in CONFIGS}


def split_sizes(release: Release, counts: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """Dialogues, utterances and rows per view for each split (the card's splits table)."""
    return {split: {"dialogues": len(ids),
                    "utterances": sum(len(release.dialogues[d]["utterances"]) for d in ids),
                    **{config: counts[config].get(split, 0) for config in CONFIGS[1:]}}
            for split, ids in release.splits.items()}


# --- the folder: a new one, or a previous build's, replaced whole ---------------------------------
def _check_out(out: Path, sources: list[Path]) -> bool:
    """Whether `out` holds a previous build (to replace); refuse anything else but new/empty."""
    resolved = out.resolve()
    for source in sources:
        source = source.resolve()
        if resolved == source or source in resolved.parents:
            raise UsageError(f"--out {out} is the release folder or inside it: build into a "
                             "folder of its own, e.g. --out meditod")
        if resolved in source.parents:
            raise UsageError(f"--out {out} contains the release folder {source}: build into a "
                             "folder of its own, e.g. --out meditod")
    if not out.exists():
        return False
    if not out.is_dir():
        raise UsageError(f"--out {out} is a file: give a folder")
    if not any(out.iterdir()):
        return False
    try:
        manifest = read_manifest(out)
    except ManifestError:
        raise UsageError(f"--out {out} holds files and no {MANIFEST}: this kit only replaces its "
                         "own builds; choose a new or empty folder") from None
    extra = sorted(set(folder_files(out)) - set(manifest["files"]) - {MANIFEST})
    if extra:
        raise UsageError(f"--out {out} is a previous build but also holds {len(extra)} other "
                         f"file(s) ({', '.join(extra[:3])}): move them away or choose another "
                         "folder")
    return True


def _recover(out: Path) -> None:
    """Finish what a killed build left beside `out` (only this kit's own temporary folders)."""
    for leftover in out.parent.glob(f".{out.name}{BUILD_MARK}*"):
        shutil.rmtree(leftover, ignore_errors=True)
    previous = sorted(out.parent.glob(f".{out.name}{PREVIOUS_MARK}*"))
    if previous and not out.exists():
        os.rename(previous[-1], out)  # killed between the two renames: put the old build back
        print(f"restored the previous build of {out} (a build was interrupted)", file=sys.stderr)
        previous = previous[:-1]
    for old in previous:
        shutil.rmtree(old, ignore_errors=True)


def build(args: BuildArguments) -> Built:
    out = replaceable_folder(args.out, example="meditod")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create {out.parent} ({type(exc).__name__}): choose a writable "
                         "--out") from None
    if not out.parent.is_dir() or not os.access(out.parent, os.W_OK):
        raise UsageError(f"cannot write into {out.parent}: choose a writable --out")
    sources = [Path(args.source)] + ([Path(args.ood_source)] if args.ood_source else [])
    with build_lock(out):
        _recover(out)
        _check_out(out, sources)
        gc.disable()  # the build allocates millions of small objects and frees none until the end
        try:
            release = read_release(args.source, args.ood_source, strict=args.strict)
            for problem in release.problems:
                print(problem, file=sys.stderr)
            metadata = {**release.metadata, **{key: getattr(args, key) for key in IDENTITY_KEYS
                                                if getattr(args, key) is not None}}
            licence, content = licence_of(release, metadata)
            origin = provenance.of_build(provenance_kind(licence, content), metadata.get("name"),
                                         release.dialogues)
            try:
                # written beside `out`, then moved into place whole (`_check_out` allowed an
                # empty folder or a previous build there); `_recover` knows these names
                with new_folder(out, prefix=f".{out.name}{BUILD_MARK}") as tmp:
                    counts, parquet_sizes = write_parquet(release, tmp)
                    sizes = split_sizes(release, counts)
                    infos = infos_json(counts, origin, licence.license)
                    (tmp / "dataset_infos.json").write_text(json.dumps(infos, indent=2) + "\n",
                                                            encoding="utf-8")
                    render_dataset_card(card_dataset_info(counts, parquet_sizes), sizes, metadata,
                                        licence, release.has_ood, origin, Path(args.source).name
                                        ).save(tmp / "README.md")
                    manifest = write_manifest(tmp, release, licence, content, origin)
            except OSError as exc:  # disk full, quota, I/O error
                hint = OS_HINTS.get(exc.errno, "free disk space or choose another --out")
                reason = exc.strerror or str(exc).splitlines()[0]
                raise MeditodError(f"cannot write the build of {out} beside it ({reason}): "
                                   f"{hint}; the previous build, if any, is untouched") from exc
        finally:
            gc.enable()
    return Built(release, licence, sizes, manifest, origin)
