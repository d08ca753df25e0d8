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

Speed and memory: the release is read and validated once; each dialogue's rows go straight
into Arrow columns (the `context` column is a gather over the dialogue's utterances, not one
Python list per row) and Parquet row groups of a few dialogues, so memory is bounded by one
dialogue however long a release is; `datasets` is not imported (the schema, infos and card
metadata come from `tasks.FEATURES`, checked against `datasets` by the tests).
"""

from __future__ import annotations

import fcntl
import gc
import hashlib
import io
import json
import os
import shutil
import sys
import tempfile
from contextlib import contextmanager, redirect_stderr
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from meditod_hub.data import provenance, synthetic
from meditod_hub.data.card import render_dataset_card
from meditod_hub.data.dataset import MANIFEST
from meditod_hub.data.licence import KINDS as LICENCE_KINDS
from meditod_hub.data.licence import (
    LICENCE_LIST,
    OWN,
    SAMPLE_FINGERPRINT,
    SYNTHETIC,
    Licence,
    declared_licence,
    licence_of,
)
from meditod_hub.data.provenance import Provenance
from meditod_hub.data.release import DIALOGS_FILE, Release, read_release
from meditod_hub.data.tasks import CONFIGS, FEATURES, dialogue_views
from meditod_hub.data.views import JSON
from meditod_hub.errors import OS_HINTS, MeditodError, UsageError, name_ids
from meditod_hub.files import PREVIOUS_MARK, new_folder, pid_alive, replaceable_folder

MANIFEST_FORMAT = "meditod-build/2"  # /2: the licence is proven, and recorded with its reason
ROW_GROUP_ROWS = 2048       # rows per Parquet row group (a few dialogues)...
ROW_GROUP_BYTES = 64 << 20  # ...or fewer, when their context columns are this large
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


# --- the schema, from the one feature spec ----------------------------------------------------
def arrow_type(feature: dict):
    # deferred: pyarrow is slow to import
    import pyarrow as pa

    kind = feature.get("_type")
    if kind == "Value":
        return {"string": pa.string(), "int32": pa.int32()}[feature["dtype"]]
    if kind == "Json":
        return pa.json_()
    if kind == "List":
        return pa.list_(arrow_type(feature["feature"]))
    return pa.struct([(name, arrow_type(sub)) for name, sub in feature.items()])


def arrow_schema(config: str):
    """The Parquet schema `datasets` writes for these features (its metadata included)."""
    # deferred: pyarrow is slow to import
    import pyarrow as pa

    metadata = {"huggingface": json.dumps({"info": {"features": FEATURES[config]}})}
    return pa.schema([(name, arrow_type(f)) for name, f in FEATURES[config].items()],
                     metadata=metadata)


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


# --- Arrow tables, one dialogue at a time -----------------------------------------------------
class _JsonText:
    """Compact JSON of label objects, each serialised once per dialogue: a state object is the
    `state` of an nlu row, of the pol and nlg rows after it and part of its utterance in
    `dialogues`, so memoising by identity removes most of the build's encoding work."""

    def __init__(self) -> None:
        self.memo: dict[int, tuple[object, str]] = {}  # id -> (the object, kept alive; its text)

    def __call__(self, value) -> str | None:
        if value is None:
            return None
        hit = self.memo.get(id(value))
        if hit is None:
            if isinstance(value, dict) and value.get("speaker"):  # an utterance: reuse its parts
                parts = (f"{json.dumps(k)}:{self(v) if isinstance(v, (dict, list)) else _dumps(v)}"
                         for k, v in value.items())
                text = "{" + ",".join(parts) + "}"
            else:
                text = _dumps(value)
            hit = self.memo[id(value)] = (value, text)
        return hit[1]


def _dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _json_array(texts: list[str | None]):
    # deferred: pyarrow is slow to import
    import pyarrow as pa

    return pa.ExtensionArray.from_storage(pa.json_(), pa.array(texts, pa.string()))


def _context_array(rows: list[dict], utterances):
    """Row i's context = the dialogue's utterances before it: a gather, not a copy per row."""
    # deferred: pyarrow is slow to import
    import pyarrow as pa

    lengths = np.fromiter((row["uttr_id"] for row in rows), dtype=np.int64, count=len(rows))
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    indices = np.concatenate([np.arange(n) for n in lengths]) if len(rows) else \
        np.zeros(0, dtype=np.int64)
    return pa.ListArray.from_arrays(pa.array(offsets), utterances.take(pa.array(indices)))


def _context_bytes(dialogue: dict) -> list[int]:
    """UTF-8 bytes of the context of a row at each utterance index (the texts before it)."""
    sizes, total = [], 0
    for utterance in dialogue["utterances"]:
        sizes.append(total)
        total += len(utterance["text"].encode())
    return sizes


def _chunks(rows: list[dict], context_bytes: list[int]):
    """A dialogue's rows in runs whose `context` columns stay under a row group's bytes, so one
    absurdly long utterance (repeated in every later row's context) never fills memory."""
    chunk, size = [], 0
    for row in rows:
        row_bytes = context_bytes[row["uttr_id"]] if "uttr_id" in row else 0
        if chunk and size + row_bytes > ROW_GROUP_BYTES:
            yield chunk
            chunk, size = [], 0
        chunk.append(row)
        size += row_bytes
    if chunk:
        yield chunk


def _utterance_structs(dialogue: dict):
    # deferred: pyarrow is slow to import
    import pyarrow as pa

    utterances = dialogue["utterances"]
    return pa.StructArray.from_arrays(
        [pa.array([u["uttr_id"] for u in utterances], pa.int32()),
         pa.array([u["speaker"] for u in utterances], pa.string()),
         pa.array([u["text"] for u in utterances], pa.string())],
        names=["uttr_id", "speaker", "text"])


def _table(config: str, rows: list[dict], utterances, text: _JsonText):
    # deferred: pyarrow is slow to import
    import pyarrow as pa

    columns = []
    for name, feature in FEATURES[config].items():
        if name == "context":
            columns.append(_context_array(rows, utterances))
            continue
        values = [row[name] for row in rows]
        if feature == JSON:
            columns.append(_json_array([text(v) for v in values]))
        elif feature.get("feature") == JSON:
            flat = _json_array([text(v) for value in values for v in value])
            offsets = [0]
            for value in values:
                offsets.append(offsets[-1] + len(value))
            columns.append(pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), flat))
        else:
            columns.append(pa.array(values, arrow_type(feature)))
    return pa.Table.from_arrays(columns, schema=arrow_schema(config))


class _SplitWriter:
    """One Parquet file per config and split, fed a dialogue at a time, flushed by row group."""

    def __init__(self, folder: Path, config: str, split: str):
        self.path = folder / config / f"{split}-00000-of-00001.parquet"
        self.config = config
        self.pending: list = []
        self.pending_rows = self.pending_bytes = 0
        self.rows = self.arrow_bytes = 0
        self.writer = None

    def add(self, table) -> None:
        self.pending.append(table)
        self.rows += table.num_rows
        self.arrow_bytes += table.nbytes  # the split's size as `datasets` reports it (num_bytes)
        self.pending_rows += table.num_rows
        self.pending_bytes += table.get_total_buffer_size()
        if self.pending_rows >= ROW_GROUP_ROWS or self.pending_bytes >= ROW_GROUP_BYTES:
            self.flush()

    def flush(self) -> None:
        # deferred: pyarrow is slow to import
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not self.pending:
            return
        if self.writer is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.writer = pq.ParquetWriter(self.path, arrow_schema(self.config))
        self.writer.write_table(pa.concat_tables(self.pending))
        self.pending = []
        self.pending_rows = self.pending_bytes = 0

    def close(self) -> None:
        self.flush()
        if self.writer is not None:
            self.writer.close()


def write_parquet(release: Release, folder: Path) -> tuple[dict[str, dict[str, int]],
                                                            dict[str, dict[str, tuple[int, int]]]]:
    """Every config and split of the release as Parquet under `folder`; returns the row counts
    and the sizes (Arrow bytes, Parquet file bytes) per config and split."""
    counts: dict[str, dict[str, int]] = {config: {} for config in CONFIGS}
    sizes: dict[str, dict[str, tuple[int, int]]] = {config: {} for config in CONFIGS}
    for split, ids in release.splits.items():
        writers = {config: _SplitWriter(folder, config, split) for config in CONFIGS}
        try:
            for did in ids:
                dialogue = release.dialogues[did]
                utterances, text = _utterance_structs(dialogue), _JsonText()
                context_bytes = _context_bytes(dialogue)
                for config, rows in dialogue_views(did, dialogue).items():
                    for chunk in _chunks(rows, context_bytes):
                        writers[config].add(_table(config, chunk, utterances, text))
        finally:
            for writer in writers.values():
                writer.close()
        for config, writer in writers.items():
            if writer.rows:
                counts[config][split] = writer.rows
                sizes[config][split] = (writer.arrow_bytes, writer.path.stat().st_size)
    return counts, sizes


def split_sizes(release: Release, counts: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """Dialogues, utterances and rows per view for each split (the card's splits table)."""
    return {split: {"dialogues": len(ids),
                    "utterances": sum(len(release.dialogues[d]["utterances"]) for d in ids),
                    **{config: counts[config].get(split, 0) for config in CONFIGS[1:]}}
            for split, ids in release.splits.items()}


# --- the folder: manifest, lock, atomic replacement -------------------------------------------
def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def folder_files(folder: Path) -> list[str]:
    """Every file under `folder`, as sorted POSIX paths relative to it."""
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def write_manifest(folder: Path, release: Release, licence: Licence, content: str,
                   origin: Provenance) -> dict:
    manifest = {"format": MANIFEST_FORMAT, "provenance": origin.as_json(), "licence": licence.kind,
                "licence_reason": licence.reason, "license": licence.license,
                "synthetic": licence.synthetic, "gated": licence.gated,
                "release_fingerprint": release.fingerprint, "content_fingerprint": content,
                # what `reprove_licence` regenerates a synthetic corpus from at push time
                "generator": release.metadata.get("generator")
                if origin.kind == provenance.SYNTHETIC_CORPUS else None,
                "files": {name: file_sha256(folder / name) for name in folder_files(folder)}}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


class ManifestError(MeditodError):
    """A dataset folder whose files do not match its build manifest."""


def read_manifest(folder: Path) -> dict:
    path = folder / MANIFEST
    if not path.is_file() and (folder / DIALOGS_FILE).is_file():
        # a release: build refuses to write into it, so never suggest `build --out` it
        raise ManifestError(f"{folder} is a release folder (it holds {DIALOGS_FILE}), not a "
                            f"build: build it with `meditod build --source {folder} --out "
                            "meditod`, then use that folder")
    if not path.is_file():
        raise ManifestError(f"{folder} has no {MANIFEST}: it is not a complete build of this kit "
                            f"(rebuild it with `meditod build --out {folder}`)")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise ManifestError(f"{path} is unreadable: rebuild the folder") from None
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT \
            or not isinstance(manifest.get("files"), dict) \
            or not isinstance(manifest.get("synthetic"), bool) \
            or not isinstance(manifest.get("gated"), bool) \
            or manifest.get("licence") not in LICENCE_KINDS \
            or not isinstance(manifest.get("licence_reason"), str):
        raise ManifestError(f"{path} is not a {MANIFEST_FORMAT} manifest: rebuild the folder")
    return manifest


def verify_manifest(folder: Path) -> dict:
    """The manifest, once every file it lists is present with its hash and nothing else is."""
    manifest = read_manifest(folder)
    present = set(folder_files(folder)) - {MANIFEST}
    listed = set(manifest["files"])
    missing, extra = sorted(listed - present), sorted(present - listed)
    changed = sorted(n for n in listed & present if file_sha256(folder / n) != manifest["files"][n])
    for problem, names in (("missing", missing), ("not from the build", extra),
                           ("changed since the build", changed)):
        if names:
            raise ManifestError(f"{folder}: {len(names)} file(s) {problem} ({name_ids(names, 5)}): "
                                "rebuild the folder with `meditod build`")
    return manifest


EMBEDDED_SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample"


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
    if kind == provenance.EMBEDDED_SAMPLE:
        return EMBEDDED_SAMPLE
    record = manifest.get("generator")
    if kind == provenance.SYNTHETIC_CORPUS and isinstance(record, dict) \
            and type(record.get("seed")) is int and type(record.get("dialogues")) is int:
        try:
            return synthetic.generate_release(
                tmp / "release", record["seed"], record["dialogues"],
                record.get("style", synthetic.DEFAULT_STYLE))
        except (ValueError, TypeError):
            pass
    raise ManifestError(f"{path} says the data is synthetic but names no source this kit can "
                        "rebuild to prove it: rebuild the folder with this kit's `meditod build`")


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



def _lock_pid(fd: int) -> int:
    """The pid written in an open lock file (0: none yet, or not a number)."""
    try:
        return int(os.pread(fd, 32, 0).decode().strip() or 0)
    except (OSError, ValueError, UnicodeDecodeError):
        return 0


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.path.samestat(os.fstat(fd), os.stat(path))
    except FileNotFoundError:
        return False


@contextmanager
def build_lock(out: Path):
    """One build per output folder at a time: `.<name>.build.lock` beside it, held with flock
    (which the kernel releases when its build dies, however it dies) and holding the pid.

    Taking a stale lock is atomic: a killed build's file is taken over under the flock, never
    removed and recreated, so two builds that find the same stale lock cannot both hold it (they
    once could: both removed it, and each created its own). A lock file removed by its holder
    between our open and our flock is tried again. A live pid in an unlocked file (a build of
    an older kit) still holds it."""
    lock = out.parent / f".{out.name}.build.lock"
    for _ in range(10):
        fd = os.open(lock, os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            held = False
        except BlockingIOError:
            held = True
        pid = _lock_pid(fd)
        if not held and not _same_file(fd, lock):  # its holder removed it as we opened it
            os.close(fd)
            continue
        if held or (pid and pid != os.getpid() and pid_alive(pid)):
            os.close(fd)
            running = f" (pid {pid})" if pid else ""
            raise MeditodError(f"another build into {out} is running{running}: wait for it to "
                               f"finish (or, if no build is running, remove {lock})")
        os.ftruncate(fd, 0)  # a killed build's pid, or none: ours now
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        try:
            yield
        finally:
            if _same_file(fd, lock):
                lock.unlink(missing_ok=True)
            os.close(fd)  # releases the flock
        return
    raise MeditodError(f"cannot take the build lock {lock}: other builds into {out} keep taking "
                       "it; wait for them and retry")


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
