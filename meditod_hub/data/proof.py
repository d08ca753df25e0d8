"""What a build's dialogues are, proven again by whoever reads the build (evaluate, results,
cards, the assistant, training): from its rows, never from its manifest or a run's record, which
are files anyone can edit (`provenance` is the record itself; `meditod build` writes it).

- the embedded sample: its rows are pinned (`EMBEDDED_SAMPLE_ROWS`);
- a synthetic corpus: its rows are those of the corpus regenerated from the seed, size and style
  its manifest records, built again (once per corpus in a process);
- whatever the manifest claims: a synthetic build edited to say MediTOD is still synthetic, and a
  synthetic claim the rows do not bear out is MediTOD's, as the build calls every dialogue it
  cannot prove (`build.provenance_kind`).

A push proves the licence a build's manifest claims the same way, before it trusts it
(`reprove_licence`): synthetic only when the proven source, built again, makes the very same files.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import tempfile
from contextlib import redirect_stderr
from dataclasses import replace
from pathlib import Path

from meditod_hub.data import synthetic
from meditod_hub.data.build import BuildArguments, build
from meditod_hub.data.dataset import (
    MANIFEST,
    DatasetError,
    available_splits,
    fingerprint,
    read_parquet_split,
)
from meditod_hub.data.licence import LICENCE_LIST, OWN, SYNTHETIC, declared_licence
from meditod_hub.data.manifest import ManifestError
from meditod_hub.data.provenance import (
    EMBEDDED_SAMPLE,
    MEDITOD,
    SYNTHETIC_CORPUS,
    UNKNOWN,
    Provenance,
    unknown,
)
from meditod_hub.errors import MeditodError, name_ids

UNPROVEN = "MediTOD (unproven synthetic claim)"
SAMPLE_RELEASE = Path(__file__).resolve().parents[2] / "data" / "sample"  # the embedded sample


def read(data: str | Path) -> Provenance:
    """What a local build's dialogues are, proven again from its rows (`prove`); `unknown` for a
    Hub id, a folder without a manifest or a build made before provenance was recorded."""
    path = Path(data) / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return unknown(data)
    if not isinstance(manifest, dict):
        return unknown(data)
    found = Provenance.from_json(manifest.get("provenance"))
    return prove(Path(data), found, manifest.get("generator")) if found else unknown(data)


def rows_fingerprint(folder: Path) -> tuple[str, int]:
    """sha256 of a build's dialogues, every split's rows as canonical JSON (what the dialogues
    are, whatever the Parquet bytes, which another pyarrow writes otherwise, or the manifest
    say), and how many there are. Computed once per state of the files in a process (a card or
    a results table asks of every run on it): keyed by each dialogue file's size and mtime."""
    folder = Path(folder).resolve()
    stamps = tuple((p.name, p.stat().st_size, p.stat().st_mtime_ns)
                   for p in sorted((folder / "dialogues").glob("*.parquet")))
    return _rows_fingerprint(str(folder), stamps)


@functools.lru_cache(maxsize=32)
def _rows_fingerprint(folder: str, stamps: tuple) -> tuple[str, int]:
    splits = {split: read_parquet_split(folder, "dialogues", split)
              for split in available_splits(Path(folder), "dialogues")}
    text = json.dumps(splits, sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                      default=str)
    return (hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(),
            sum(map(len, splits.values())))


# rows_fingerprint of `meditod build --source data/sample` (tests/test_provenance_pages.py
# checks it against the suite's embedded build)
EMBEDDED_SAMPLE_ROWS = "c04026ff0f8e31509ebc5db566f8143ae47e0c43532b827b2c0da89d27c5cb3b"


@functools.lru_cache(maxsize=8)
def corpus_rows(seed: int, size: int, style: str) -> str | None:
    """rows_fingerprint of the synthetic corpus `seed`, `size`, `style` built by this kit, or
    None when the generator refuses them (regenerated and built once per process)."""
    with tempfile.TemporaryDirectory(prefix="meditod-proof-") as tmp:
        try:
            source = synthetic.generate_release(Path(tmp) / "release", seed, size, style)
            with redirect_stderr(io.StringIO()):
                build(BuildArguments(source=source, out=Path(tmp) / "built"))
        except (ValueError, TypeError, MeditodError):
            return None
        return rows_fingerprint(Path(tmp) / "built")[0]


def prove(folder: Path, claimed: Provenance, generator: object = None) -> Provenance:
    """The kind a manifest claims, only as far as the rows prove it, whatever the claim: the
    embedded sample's rows are the embedded sample; rows that the manifest's `generator` record
    (seed, size, style: the recipe, not the proof) makes again are that synthetic corpus; a
    synthetic claim the rows do not bear out is MediTOD's."""
    try:
        rows, count = rows_fingerprint(folder)
    except (DatasetError, OSError, ValueError):
        return claimed  # unreadable rows: the command that reads them says so, in its own words
    if rows == EMBEDDED_SAMPLE_ROWS:
        name = claimed.name if claimed.kind == EMBEDDED_SAMPLE else "synthetic sample"
        return replace(claimed, kind=EMBEDDED_SAMPLE, name=name, dialogues=count)
    if _regenerates(generator, rows, count):
        name = claimed.name if claimed.kind == SYNTHETIC_CORPUS else "synthetic corpus"
        return replace(claimed, kind=SYNTHETIC_CORPUS, name=name, dialogues=count)
    if claimed.synthetic:
        return replace(claimed, kind=MEDITOD, name=UNPROVEN, dialogues=count)
    return replace(claimed, dialogues=count)


def _regenerates(generator: object, rows: str, count: int) -> bool:
    """Whether `generator` names a corpus of the build's `count` dialogues whose rows are
    `rows`; a record of another size generates nothing (a forged size costs nothing)."""
    if not isinstance(generator, dict):
        return False
    seed, size = generator.get("seed"), generator.get("dialogues")
    style = generator.get("style", synthetic.DEFAULT_STYLE)
    if type(seed) is not int or type(size) is not int or size != count \
            or not isinstance(style, str) or style not in synthetic.STYLES:
        return False
    return corpus_rows(seed, size, style) == rows


def record(data: str | Path) -> dict:
    """What a run's record or a results file keeps of the data it read: the folder, its
    fingerprint (whether it is still that folder) and what its rows proved it to be then;
    `of_record` proves it again."""
    return {"dataset": str(data), "data_fingerprint": fingerprint(data),
            "provenance": read(data).as_json()}


def of_record(info: dict) -> Provenance:
    """What a run (run_info) or a results file (`record`'s keys) was trained or scored on:
    proven again from its dataset folder's rows while that folder is the one it recorded
    (`data_fingerprint`). Without that folder the record is all there is: said as unproven
    (`Provenance.proven`), which never stands beside the paper's rows. A record that names
    no provenance: what its dataset folder says now (runs made before provenance was
    recorded), else unknown."""
    dataset, recorded = info.get("dataset"), Provenance.from_json(info.get("provenance"))
    if isinstance(dataset, str) and Path(dataset).is_dir() \
            and info.get("data_fingerprint") == fingerprint(dataset):
        return read(dataset)
    if recorded is not None:
        return recorded if recorded.kind == UNKNOWN else replace(recorded, proven=False)
    return read(dataset) if isinstance(dataset, str) and dataset else unknown(
        "an unrecorded dataset")


# --- a manifest's licence, proven again before a push trusts it ----------------------------------
def reprove_licence(folder: Path, manifest: dict) -> None:
    """Prove again, from the data, the licence a build's manifest claims before a push trusts it
    (a manifest and its card are files anyone can edit together): synthetic only when a fresh
    build of the proven source (the embedded sample, or the corpus regenerated from its recorded
    seed) holds the very same files, the card README.md included, so the card carries nothing
    that source does not make (none of the authors' utterances); the user's own only under an
    id of the Hub's licence list, `unknown` and look-alikes refused (`licence.declared_licence`)."""
    kind, path = manifest["licence"], folder / MANIFEST
    if kind == OWN and not declared_licence(manifest.get("license")):
        raise ManifestError(f"{path} says the dialogues are your own but declares no visible "
                            "licence the Hub accepts: rebuild with `meditod build --license ID` "
                            f"(see {LICENCE_LIST})")
    if kind != SYNTHETIC:
        return
    with tempfile.TemporaryDirectory(prefix="meditod-reprove-") as tmp:
        source = _proven_source(path, manifest, Path(tmp))
        with redirect_stderr(io.StringIO()):
            rebuilt = build(BuildArguments(source=source, out=Path(tmp) / "rebuilt")).manifest
    # every file, the card too: a README.md edited along with the manifest is not the source's
    ours, theirs = manifest["files"], rebuilt["files"]
    if rebuilt["licence"] != SYNTHETIC or ours != theirs:
        differ = sorted(n for n in set(ours) | set(theirs) if ours.get(n) != theirs.get(n))
        raise ManifestError(f"{path} says the data is synthetic, but its files are not what "
                            f"{source.name} builds ({name_ids(differ, 3)} differ): rebuild the "
                            "folder with `meditod build` (a manifest is never proof)")


def _proven_source(path: Path, manifest: dict, tmp: Path) -> Path:
    """The release a synthetic build's manifest says it was built from, made again."""
    origin = manifest.get("provenance")
    kind = origin.get("kind") if isinstance(origin, dict) else None
    if kind == EMBEDDED_SAMPLE:
        return SAMPLE_RELEASE
    record = manifest.get("generator")
    if kind == SYNTHETIC_CORPUS and isinstance(record, dict) \
            and type(record.get("seed")) is int and type(record.get("dialogues")) is int:
        try:
            return synthetic.generate_release(
                tmp / "release", record["seed"], record["dialogues"],
                record.get("style", synthetic.DEFAULT_STYLE))
        except (ValueError, TypeError):
            pass
    raise ManifestError(f"{path} says the data is synthetic but names no source this kit can "
                        "rebuild to prove it: rebuild the folder with this kit's `meditod build`")
