"""A release's rows as Parquet: the Arrow schema `datasets` writes for the features of
`tasks.FEATURES` (`arrow_schema`), and one Parquet file per config and split (`write_parquet`).

Speed and memory: the release is read once; each dialogue's rows go straight into Arrow columns
(the `context` column is a gather over the dialogue's utterances, not one Python list per row)
and Parquet row groups of a few dialogues, so memory is bounded by one dialogue however long a
release is; `datasets` is not imported (the schema comes from `tasks.FEATURES`, checked against
`datasets` by the tests).

Apart from `build` because it is the one writer of the dataset's bytes (the columns, their types,
row groups), which the build only places in its folder beside the card and the manifest.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from meditod_hub.data.release import Release
from meditod_hub.data.tasks import CONFIGS, FEATURES, dialogue_views
from meditod_hub.data.views import JSON

ROW_GROUP_ROWS = 2048       # rows per Parquet row group (a few dialogues)...
ROW_GROUP_BYTES = 64 << 20  # ...or fewer, when their context columns are this large


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
