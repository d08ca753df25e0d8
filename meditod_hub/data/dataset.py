"""Reading a built MediTOD dataset: a folder of this kit's build, or a Hub dataset id.

`load_split` is what every command uses. A local folder is read straight from its Parquet files
with pyarrow (no `datasets` import, no cache written next to licensed data); the `Json` columns
(labels, states, utterances) are stored as JSON text in Arrow's JSON extension type and decoded
here. That same reader is the fallback for `datasets` older than the version the card names
(which cannot read the JSON extension type):

    from meditod_hub.data.dataset import read_parquet_split
    rows = read_parquet_split("meditod", "nlu", "test")

A Hub id goes through `datasets.load_dataset`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from meditod_hub import quiet
from meditod_hub.data.release import SPLITS
from meditod_hub.errors import MeditodError, UsageError

MANIFEST = "build_manifest.json"


class DatasetError(MeditodError):
    """A dataset folder or id that cannot be read; the message says which and what to do."""


def split_files(folder: Path, config: str, split: str) -> list[Path]:
    return sorted((folder / config).glob(f"{split}-*.parquet"))


def available_splits(folder: Path, config: str) -> list[str]:
    names = {p.name.split("-", 1)[0] for p in (folder / config).glob("*-*.parquet")}
    return [s for s in SPLITS if s in names] + sorted(names - set(SPLITS))


def _json_columns(schema) -> list[str]:
    # deferred: pyarrow is slow to import
    import pyarrow as pa

    return [f.name for f in schema if isinstance(f.type, pa.JsonType)
            or (isinstance(f.type, pa.ExtensionType) and f.type.extension_name == "arrow.json")]


def _decode_lists_of_json(schema) -> list[str]:
    """List<Json> columns (the `dialogues` config's utterances)."""
    # deferred: pyarrow is slow to import
    import pyarrow as pa

    return [f.name for f in schema if pa.types.is_list(f.type)
            and isinstance(f.type.value_type, pa.JsonType)]


def read_parquet_split(folder: str | Path, config: str, split: str) -> list[dict]:
    """Rows of one config and split of a built folder, JSON columns decoded (pyarrow only)."""
    # deferred: pyarrow is slow to import
    import pyarrow.parquet as pq

    folder = Path(folder)
    files = split_files(folder, config, split)
    if not files:
        raise DatasetError(f"{folder} has no {config!r} {split!r} split (splits: "
                           f"{', '.join(available_splits(folder, config)) or 'none'})")
    rows: list[dict] = []
    for path in files:
        table = pq.read_table(path)
        json_columns, json_lists = _json_columns(table.schema), _decode_lists_of_json(table.schema)
        for row in table.to_pylist():
            for name in json_columns:
                row[name] = None if row[name] is None else json.loads(row[name])
            for name in json_lists:
                row[name] = [json.loads(v) for v in row[name]]
            rows.append(row)
    return rows


def check_built_folder(folder: Path, config: str) -> None:
    if not (folder / config).is_dir():
        what = "a release folder (build it first: `meditod build --source " \
               f"{folder} --out meditod`)" if (folder / "dialogs.json").exists() \
            else "not a dataset built by `meditod build`"
        raise DatasetError(f"{folder} has no {config}/ folder: {what}")


def hub_shaped(name: str) -> bool:
    """Whether `name` reads as a Hub id ORG/NAME (not a path)."""
    parts = name.split("/")
    return len(parts) == 2 and all(parts) and not name.startswith((".", "~", "/"))


def fingerprint(data: str | Path) -> str:
    """What a built folder holds: the hash of its build manifest (every file's hash); a Hub id
    stands for itself."""
    manifest = Path(data) / MANIFEST
    if manifest.is_file():
        return "sha256:" + hashlib.sha256(manifest.read_bytes()).hexdigest()
    return str(data)


def load_split(data: str | Path, config: str, split: str) -> list[dict]:
    """Rows of one config and split: a built folder (read in place) or a Hub dataset id."""
    path = Path(data)
    if path.is_dir():
        check_built_folder(path, config)
        return read_parquet_split(path, config, split)
    if path.exists():
        raise UsageError(f"{path} is a file: give a dataset folder built by `meditod build`")
    if not hub_shaped(str(data)):
        raise UsageError(f"no such folder: {path} (build one with `meditod build --out {path}`, "
                         "or give a Hub dataset id ORG/NAME)")
    # deferred: datasets is slow to import
    from datasets import load_dataset

    quiet.data_bars_off()
    try:
        return list(load_dataset(str(data), config, split=split))
    except ValueError as exc:  # an unknown split or config
        raise DatasetError(f"{data}: {str(exc).splitlines()[0]}") from None
