"""Render the dataset card from what was built: schema from CMAS, sizes from the release, and
the identity its provenance allows: MediTOD's description, statistics, licence text and both
citations for MediTOD's data only; a synthetic build says what it is, and a user's own
dialogues carry the release's own name, description and licence. Every card cites CMAS (the
MediTOD paper) for the schema; MediTOD's card shows the paper's headline table
(`paper_results.headline_markdown`)."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from huggingface_hub import DatasetCard, DatasetCardData

from meditod_hub.data import about, cmas
from meditod_hub.data.licence import OWN, Licence
from meditod_hub.data.paper_results import headline_markdown
from meditod_hub.data.provenance import Provenance
from meditod_hub.data.tasks import CONFIGS, TASK_NAMES

GATING = {
    "extra_gated_prompt": about.LICENCE_NOTE,
    "extra_gated_fields": {
        "I hold a UMLS Metathesaurus licence (https://uts.nlm.nih.gov/)": "checkbox",
        "I will use the data for research only, never for clinical decisions": "checkbox",
        "Affiliation": "text",
    },
    "extra_gated_button_content": "Request access (approved manually)",
}


def card_template(name: str) -> Path:
    """A card template of the top-level `cards/` folder, which the wheel ships as the package
    `meditod_hub.cards` (pyproject's package-dir); looked up when a card is rendered, so a Space
    that uploads only the code still imports."""
    return Path(str(files("meditod_hub.cards") / name))


def _slot_tree() -> list[dict]:
    tree = []
    for base in cmas.BASE_SLOTS:
        keys = [k for k in cmas.PATIENT_SLOT_KEYS if cmas.split_slot_key(k).base == base]
        tree.append({
            "name": base,
            "slot_keys": ", ".join(f"`{k}`" for k in keys),
            "attributes": [{"name": a, "medical": cmas.is_medical_attribute(base, a),
                            "list": cmas.is_list_attribute(a)} for a in cmas.SLOT_ATTRIBUTES[base]],
        })
    return tree


DEFAULT_CONFIG = TASK_NAMES[0]  # the config the viewer opens: the first task's (NLU)


def splits_table(sizes: dict[str, dict[str, int]]) -> str:
    columns = ["split", "dialogues", "utterances", *(f"{name} rows" for name in TASK_NAMES)]
    rows = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    rows += ["| " + " | ".join([s, *(str(n[c]) for c in ("dialogues", "utterances", *TASK_NAMES))])
             + " |" for s, n in sizes.items()]
    return "\n".join(rows)


def render_dataset_card(dataset_info: list[dict], sizes: dict[str, dict[str, int]],
                        metadata: dict, licence: Licence, has_ood: bool,
                        origin: Provenance, folder_name: str = "") -> DatasetCard:
    """The card of a build: `dataset_info` is the YAML block of features and row counts per
    config (`build.card_dataset_info`), `metadata` release.json with the build's --name,
    --description and --license; an own dataset without a name takes its folder's. `origin`
    says what this build holds, in its own counts (never the paper's)."""
    synthetic, own = licence.synthetic, licence.kind == OWN
    pretty_name = metadata.get("name") or (folder_name if own else origin.name)
    configs = [{"config_name": info["config_name"],
                "data_files": [{"split": split["name"],
                                "path": f"{info['config_name']}/{split['name']}-*.parquet"}
                               for split in info["splits"]],
                **({"default": True} if info["config_name"] == DEFAULT_CONFIG else {})}
               for info in sorted(dataset_info, key=lambda i: CONFIGS.index(i["config_name"]))]
    card_data = DatasetCardData(
        language="en", license=licence.license, pretty_name=pretty_name,
        task_categories=["text-generation", "token-classification"],
        tags=["medical", "dialogue", "task-oriented-dialogue"] + (["synthetic"] if synthetic else []),
        size_categories="n<1K" if sum(n[DEFAULT_CONFIG] for n in sizes.values()) < 1000 else "10K<n<100K",
        configs=configs, dataset_info=dataset_info, **(GATING if licence.gated else {}))
    return DatasetCard.from_template(
        card_data, template_path=str(card_template("dataset_card.md")),
        pretty_name=pretty_name, this_build=origin.describe(), synthetic=synthetic, own=own,
        meditod=origin.meditod, license=licence.license, schema_note=about.SCHEMA_NOTE,
        description=metadata.get("description", ""), summary=about.SUMMARY,
        paper=about.PAPER, homepage=about.HOMEPAGE, splits_table=splits_table(sizes),
        has_ood=has_ood, intents=", ".join(f"`{i}`" for i in cmas.PATIENT_INTENTS),
        action_types=", ".join(f"`{a}`" for a in cmas.ACTION_TYPES),
        action_slots=", ".join(f"`{s}`" for s in cmas.ACTION_SLOTS),
        slots=_slot_tree(), licence_note=about.LICENCE_NOTE, headline_table=headline_markdown(),
        citations=origin.citations())
