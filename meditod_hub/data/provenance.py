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
text appear only on MediTOD's data. A reader never takes the kind from a manifest or a run file
(both editable): `proof` proves it again from the rows.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from meditod_hub.data import about
from meditod_hub.data.dataset import hub_shaped

EMBEDDED_SAMPLE, SYNTHETIC_CORPUS, OWN, MEDITOD = (
    "embedded-sample", "synthetic-corpus", "own", "meditod")
KINDS = (EMBEDDED_SAMPLE, SYNTHETIC_CORPUS, OWN, MEDITOD)
UNKNOWN = "unknown"  # a Hub id or a folder without a build manifest: nothing proven
UNPROVEN_NOTE = " (as recorded: its dataset folder is not at hand to prove it)"


@dataclass(frozen=True)
class Provenance:
    kind: str        # one of KINDS, or UNKNOWN
    name: str        # the release's own name (release.json or --name)
    dialogues: int   # in the build, every split
    utterances: int
    # False where a reader found only a record of what the data was (a run's or a results
    # file's), its dataset folder no longer at hand to prove it again (`proof.of_record`)
    proven: bool = field(default=True, compare=False)

    @property
    def synthetic(self) -> bool:
        return self.kind in (EMBEDDED_SAMPLE, SYNTHETIC_CORPUS)

    @property
    def comparable(self) -> bool:
        """Whether its scores may stand beside the paper's: MediTOD, or a Hub dataset whose
        content this kit cannot see (said as unknown wherever it is shown); a record whose data
        is not at hand to prove it never does."""
        return self.kind in (MEDITOD, UNKNOWN) and self.proven

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
        if self.kind == UNKNOWN:
            return what
        return f"{what}, {self.dialogues} dialogues{'' if self.proven else UNPROVEN_NOTE}"

    def describe(self) -> str:
        """A sentence's worth, for cards, banners and summaries."""
        said = self._describe()
        return said if self.proven or self.kind == UNKNOWN else f"{said}{UNPROVEN_NOTE}"

    def _describe(self) -> str:
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
        """The record (what `meditod build` proved; `proven` is a reader's finding, never
        recorded)."""
        record = asdict(self)
        del record["proven"]
        return record

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
