"""What a build's dialogues are, said everywhere a model or a score is shown.

`meditod build` records it in the build manifest from the build itself (the licence proof and the
release's own counts, never a self-declared flag); `meditod train` copies it into every run's
run_info.json and `meditod evaluate` into every results.json, so model cards, results tables,
charts, the assistant's banner and the chat's opening line say what a model was trained and
scored on. Four kinds:

- `embedded-sample`: the kit's invented sample (`data/sample`), proven by content fingerprint;
- `synthetic-corpus`: a corpus regenerated from its seed by `meditod_hub.data.synthetic`;
- `own`: dialogues the user declared their own under a licence;
- `meditod`: everything else, MediTOD's licence-restricted data (or a copy of it).

Only `meditod` builds stand beside the paper's rows; the others are never called MediTOD: every
page (dataset card and infos, model card and its model-index, Spaces, results tables and charts)
takes what it says about the data from here, so MediTOD's description, citations and licence
text appear only on MediTOD's data.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from meditod_hub.data import about
from meditod_hub.data.dataset import (
    MANIFEST,
    DatasetError,
    available_splits,
    fingerprint,
    hub_shaped,
    read_parquet_split,
)

EMBEDDED_SAMPLE, SYNTHETIC_CORPUS, OWN, MEDITOD = (
    "embedded-sample", "synthetic-corpus", "own", "meditod")
KINDS = (EMBEDDED_SAMPLE, SYNTHETIC_CORPUS, OWN, MEDITOD)
UNKNOWN = "unknown"  # a Hub id or a folder without a build manifest: nothing proven


@dataclass(frozen=True)
class Provenance:
    kind: str        # one of KINDS, or UNKNOWN
    name: str        # the release's own name (release.json or --name)
    dialogues: int   # in the build, every split
    utterances: int

    @property
    def synthetic(self) -> bool:
        return self.kind in (EMBEDDED_SAMPLE, SYNTHETIC_CORPUS)

    @property
    def comparable(self) -> bool:
        """Whether its scores may stand beside the paper's: MediTOD, or a Hub dataset whose
        content this kit cannot see (said as unknown wherever it is shown)."""
        return self.kind in (MEDITOD, UNKNOWN)

    @property
    def meditod(self) -> bool:
        """Whether this is the authors' data (or a copy of it): what MediTOD's text describes."""
        return self.kind == MEDITOD

    def index_type(self, hub: str | None) -> str:
        """A model-index `dataset.type`: the Hub id when there is one, else `meditod` for what
        stands beside the paper's rows (MediTOD's data, or a run that recorded none); synthetic
        and own data are typed by their kind (`embedded-sample`, `synthetic-corpus`, `own`)."""
        return hub or (MEDITOD if self.comparable else self.kind)

    def index_name(self) -> str:
        """A model-index `dataset.name`: MediTOD for what stands beside the paper's rows (the
        leaderboard reads it so), else what the data is."""
        return about.PRETTY_NAME if self.comparable else self.short()

    def short(self) -> str:
        """A table cell: what it is in a few words."""
        what = {EMBEDDED_SAMPLE: "synthetic sample (embedded)",
                SYNTHETIC_CORPUS: "synthetic corpus", OWN: f"own data: {self.name}",
                MEDITOD: self.name or "MediTOD", UNKNOWN: self.name}[self.kind]
        return what if self.kind == UNKNOWN else f"{what}, {self.dialogues} dialogues"

    def describe(self) -> str:
        """A sentence's worth, for cards, banners and summaries."""
        size = f"{self.dialogues} dialogues, {self.utterances} utterances"
        if self.kind == EMBEDDED_SAMPLE:
            return f"the kit's embedded synthetic sample ({size}, invented; not MediTOD)"
        if self.kind == SYNTHETIC_CORPUS:
            return (f"a synthetic corpus of meditod_hub.data.synthetic ({size}, generated; not "
                    "MediTOD)")
        if self.kind == OWN:
            return f"{self.name}, the user's own dialogues ({size}; not MediTOD)"
        if self.kind == MEDITOD:
            return f"{self.name or 'MediTOD'} (licence-restricted MediTOD data, {size})"
        return f"{self.name} (no build manifest of this kit: what it holds is not recorded)"

    def description(self) -> str:
        """dataset_infos.json's description: MediTOD's summary and licence for MediTOD's data;
        other data says what it is and that only its schema is MediTOD's."""
        if self.meditod:
            return f"{about.SUMMARY} {about.LICENCE_NOTE} This build: {self.describe()}."
        return (f"This build: {self.describe()}. {about.SCHEMA_NOTE}")

    def citations(self) -> list[str]:
        """BibTeX entries: the MediTOD paper (CMAS, the schema) always; the source dialogues'
        paper for MediTOD's data only."""
        return [about.CITATION, about.SOURCE_CITATION] if self.meditod else [about.CITATION]

    def as_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, value) -> Provenance | None:
        """A recorded provenance, or None when the record is missing or malformed."""
        if not isinstance(value, dict) or value.get("kind") not in (*KINDS, UNKNOWN):
            return None
        name, dialogues, utterances = value.get("name"), value.get("dialogues"), value.get("utterances")
        if not isinstance(name, str) or type(dialogues) is not int or type(utterances) is not int:
            return None
        return cls(value["kind"], name, dialogues, utterances)


def unknown(data: str | Path) -> Provenance:
    """A dataset whose content is not recorded: named by its Hub id, never by a local path
    (cards and tables are public)."""
    hub = hub_shaped(str(data)) and not Path(data).exists()
    return Provenance(UNKNOWN, str(data) if hub else "a local dataset folder", 0, 0)


def of_build(kind: str, name: str | None, dialogues: dict[str, dict]) -> Provenance:
    """The provenance `meditod build` records: its kind from the licence proof, its name and
    counts from the release it read."""
    fallback = {EMBEDDED_SAMPLE: "synthetic sample", SYNTHETIC_CORPUS: "synthetic corpus",
                OWN: "own dialogues", MEDITOD: "MediTOD"}[kind]
    return Provenance(kind, name.strip() if isinstance(name, str) and name.strip() else fallback,
                      len(dialogues), sum(len(d["utterances"]) for d in dialogues.values()))


def read(data: str | Path) -> Provenance:
    """What a local build's dialogues are, proven again from its rows (`prove`); `unknown` for a
    Hub id, a folder without a manifest or a build made before provenance was recorded."""
    path = Path(data) / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return unknown(data)
    found = Provenance.from_json(manifest.get("provenance")) if isinstance(manifest, dict) else None
    return prove(Path(data), found) if found else unknown(data)


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


def prove(folder: Path, claimed: Provenance) -> Provenance:
    """The kind a manifest claims, only as far as the rows prove it (a manifest is a file anyone
    can edit): the embedded sample's rows are the embedded sample whatever the claim, and a claim
    of the embedded sample that its rows do not bear out is MediTOD's, as the build calls every
    dialogue it cannot prove (`build.provenance_kind`). A synthetic corpus's claim stands as
    recorded here (proving it means generating and building it again, which a push does:
    `build.reprove_licence`)."""
    try:
        rows, count = rows_fingerprint(folder)
    except (DatasetError, OSError, ValueError):
        return claimed  # unreadable rows: the command that reads them says so, in its own words
    if rows == EMBEDDED_SAMPLE_ROWS:
        name = claimed.name if claimed.kind == EMBEDDED_SAMPLE else "synthetic sample"
        return replace(claimed, kind=EMBEDDED_SAMPLE, name=name, dialogues=count)
    if claimed.kind == EMBEDDED_SAMPLE:
        return replace(claimed, kind=MEDITOD, name="MediTOD (unproven synthetic claim)",
                       dialogues=count)
    return replace(claimed, dialogues=count)


def of_run(info: dict) -> Provenance:
    """What a run (or results file) was trained or scored on: proven again from its dataset
    folder's rows while that folder is still the one it recorded (`data_fingerprint`), else its
    record (proven at training, `read`), else what its dataset folder says now (runs made before
    provenance was recorded)."""
    dataset, recorded = info.get("dataset"), Provenance.from_json(info.get("provenance"))
    if isinstance(dataset, str) and Path(dataset).is_dir() \
            and info.get("data_fingerprint") == fingerprint(dataset):
        return read(dataset)
    return recorded or read(str(dataset or "an unrecorded dataset"))
