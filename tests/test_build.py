"""Building the authors' sample: sizes, byte-exact labels and states, lossless dialogues. No network."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from datasets import load_dataset

from meditod_hub.data.release import read_release
from meditod_hub.data.state import fold_states

SAMPLE_ROWS = {"train": 51, "validation": 53, "test": 74}


@pytest.fixture(scope="module")
def dialogs(sample_release):
    return json.loads((sample_release / "dialogs.json").read_text())


@pytest.mark.parametrize("config", ["nlu", "pol", "nlg"])
def test_sample_rows_per_split(sample_build, config):
    dataset = load_dataset(str(sample_build), config)
    assert {split: len(rows) for split, rows in dataset.items()} == SAMPLE_ROWS


def test_recomputed_state_is_byte_identical(dialogs):
    checked = 0
    for dialogue in dialogs.values():
        patients = [u for u in dialogue["utterances"] if u["speaker"] == "patient"]
        for utt, state in zip(patients, fold_states(u["nlu"] for u in patients)):
            assert json.dumps(state) == json.dumps(utt["dialog_state"]), utt["uttr_id"]
            checked += 1
    assert checked == 178


def test_sample_validates_cleanly(sample_release):
    assert read_release(sample_release, strict=True).problems == []


def test_labels_round_trip_in_order(sample_build, dialogs):
    """nlu/state/actions/response read back from Parquet equal the release JSON byte for byte."""
    for split in SAMPLE_ROWS:
        for row in load_dataset(str(sample_build), "nlu", split=split):
            utt = dialogs[row["dialogue_id"]]["utterances"][row["uttr_id"]]
            assert json.dumps(row["nlu"]) == json.dumps(utt["nlu"])
            assert json.dumps(row["state"]) == json.dumps(utt["dialog_state"])
            assert row["patient_text"] == utt["text"]
            assert row["id"] == f"{row['dialogue_id']}-{utt['uttr_id']}"
        for row in load_dataset(str(sample_build), "nlg", split=split):
            utterances = dialogs[row["dialogue_id"]]["utterances"]
            utt = utterances[row["uttr_id"]]
            assert json.dumps(row["actions"]) == json.dumps(utt["actions"])
            assert row["response"] == utt["text"]
            assert json.dumps(row["state"]) == json.dumps(utterances[row["uttr_id"] - 1]["dialog_state"])
            assert [c["text"] for c in row["context"]] == [u["text"] for u in utterances[:row["uttr_id"]]]


def test_rows_match_the_authors_pptod_turns(sample_build, sample_release):
    """Turn numbers and pairing equal the authors' PPTOD views (docs/format.md, "Dataset views")."""
    files = {"train": "train", "validation": "dev", "test": "test"}
    for split, name in files.items():
        sessions = json.loads((sample_release / "pptod" / f"fine-processed-{name}.json").read_text())
        turns = [t for session in sessions for t in session]
        nlu = load_dataset(str(sample_build), "nlu", split=split)
        nlg = load_dataset(str(sample_build), "nlg", split=split)
        assert len(turns) == len(nlu) == len(nlg)
        for turn, u, g in zip(turns, nlu, nlg):
            assert turn["dial_id"] == f"osce{u['dialogue_id']}" and turn["turn_num"] == u["turn"] == g["turn"]
            assert turn["nlu"] == u["nlu"] and turn["dst"] == u["state"]
            assert turn["pol"] == g["actions"] and turn["nlg"] == g["response"]


def test_dialogues_config_reproduces_the_release(sample_build, dialogs):
    rebuilt = {}
    for split in SAMPLE_ROWS:
        for row in load_dataset(str(sample_build), "dialogues", split=split):
            rebuilt[row["dialogue_id"]] = {**row["metadata"], "utterances": row["utterances"]}
    assert json.dumps(rebuilt, sort_keys=False) == json.dumps({k: dialogs[k] for k in rebuilt})
    assert set(rebuilt) == set(dialogs)


def test_card_describes_the_build(sample_build):
    card = (sample_build / "README.md").read_text()
    assert "configs:" in card and "config_name: nlu" in card
    assert "extra_gated_fields" in card  # real data: gated
    assert "no `test_ood` split" in card
    assert "| test | 1 | 149 | 74 | 74 | 74 |" in card
    assert "`respone_to`" in card and "`location` **M** *list*" in card


def test_the_build_records_what_it_holds_from_its_own_content(sample_build, embedded_build):
    """Provenance as data: the kind from the licence proof, name and counts from the build."""
    from meditod_hub.data import proof

    embedded = proof.read(embedded_build)
    assert (embedded.kind, embedded.dialogues, embedded.synthetic) == ("embedded-sample", 10, True)
    authors = proof.read(sample_build)
    assert (authors.kind, authors.dialogues, authors.comparable) == ("meditod", 3, True)
    card = (sample_build / "README.md").read_text()
    assert f"**This build:** {authors.describe()}." in card
    assert proof.read(sample_build.parent).kind == "unknown"  # no manifest: nothing proven


def test_a_release_under_its_own_name_cites_its_own_counts(embedded_release, tmp_path):
    """Before: "Knee pain pilot" (no licence declared) got a card citing MediTOD's 233 dialogues
    as if they were its own."""
    import shutil

    from meditod_hub.data.build import BuildArguments, build

    release = tmp_path / "pilot"
    shutil.copytree(embedded_release, release)
    built = build(BuildArguments(source=release, out=tmp_path / "built", name="Knee pain pilot"))
    card = (tmp_path / "built" / "README.md").read_text()
    assert card.startswith("---") and "# Knee pain pilot" in card
    assert "**This build:** Knee pain pilot (licence-restricted MediTOD data, 10 dialogues, " \
        f"{built.provenance.utterances} utterances)." in card
    assert "About MediTOD (the paper's corpus, not this build): MediTOD is" in card


def test_embedded_sample_has_ood_and_is_not_gated(embedded_build):
    card = (embedded_build / "README.md").read_text()
    assert "synthetic" in card and "extra_gated_fields" not in card
    assert "test_ood" in load_dataset(str(embedded_build), "nlu")


def test_dataset_infos_do_not_drift(embedded_build):
    """The top-level dataset_infos.json is generated by the builder from the embedded sample."""
    committed = json.loads((Path(__file__).resolve().parent.parent / "dataset_infos.json").read_text())
    built = json.loads((embedded_build / "dataset_infos.json").read_text())
    assert committed == built, "run `make infos` to regenerate dataset_infos.json"


# --- the build writes what `datasets` would, without importing it ------------------------------

@pytest.mark.parametrize("config", ["dialogues", "nlu", "pol", "nlg"])
def test_parquet_schema_and_card_metadata_are_what_datasets_writes(config):
    from datasets import DatasetInfo, SplitDict, SplitInfo
    from datasets.info import DatasetInfosDict
    from huggingface_hub import DatasetCardData

    from meditod_hub.data.build import card_dataset_info
    from meditod_hub.data.parquet import arrow_schema
    from meditod_hub.data.tasks import features

    theirs = features(config).arrow_schema
    ours = arrow_schema(config)
    assert ours.equals(theirs, check_metadata=False)
    assert json.loads(ours.metadata[b"huggingface"])["info"]["features"] == features(config).to_dict()
    counts = {config: {"train": 3, "test": 1}}
    sizes = {config: {"train": (3000, 1200), "test": (900, 700)}}  # (Arrow bytes, Parquet bytes)
    splits = SplitDict()
    for name, n in counts[config].items():
        splits.add(SplitInfo(name=name, num_examples=n, num_bytes=sizes[config][name][0]))
    card = DatasetCardData()
    DatasetInfosDict({config: DatasetInfo(features=features(config), splits=splits,
                                          config_name=config, download_size=1900,
                                          dataset_size=3900)}).to_dataset_card_data(card)
    theirs = card.dataset_info if isinstance(card.dataset_info, list) else [card.dataset_info]
    assert card_dataset_info(counts, sizes) == theirs


def test_the_card_gives_each_split_its_real_size(embedded_build):
    """Issue 25: every split said `num_bytes: 0`. Now its Arrow size (what `datasets` reports as
    num_bytes), and per config the Parquet files' bytes (download_size) and the total."""
    import pyarrow.parquet as pq
    import yaml

    card = (embedded_build / "README.md").read_text(encoding="utf-8")
    infos = yaml.safe_load(card.split("---\n")[1])["dataset_info"]
    assert {info["config_name"] for info in infos} == {"dialogues", "nlu", "pol", "nlg"}
    for info in infos:
        files = {split["name"]: embedded_build / info["config_name"] /
                 f"{split['name']}-00000-of-00001.parquet" for split in info["splits"]}
        for split in info["splits"]:
            arrow = pq.read_table(files[split["name"]]).nbytes
            assert split["num_bytes"] > 0 and abs(split["num_bytes"] - arrow) <= 0.02 * arrow, split
        assert info["download_size"] == sum(f.stat().st_size for f in files.values())
        assert info["dataset_size"] == sum(s["num_bytes"] for s in info["splits"])


def test_the_build_says_whether_a_push_is_gated_in_plain_english(embedded_release, sample_release,
                                                                   tmp_path, capsys):
    """Issue 25: the build printed 'a push will be not gated'."""
    from meditod_hub.commands import build

    assert build.main(["--source", str(embedded_release), "--out", str(tmp_path / "synthetic")]) == 0
    out = capsys.readouterr().out
    assert "a push will not be gated;" in out and "be not gated" not in out
    assert build.main(["--source", str(sample_release), "--out", str(tmp_path / "meditod")]) == 0
    assert "a push will be gated, manual approval of each request;" in capsys.readouterr().out


@pytest.mark.parametrize("build", ["embedded_build", "sample_build"])
def test_the_pyarrow_reader_equals_load_dataset(request, build):
    """`dataset.read_parquet_split` (every command's reader, and the fallback for `datasets`
    older than 4.7) gives exactly what `load_dataset` gives."""
    from meditod_hub.data.dataset import available_splits, read_parquet_split

    folder = request.getfixturevalue(build)
    for config in ("dialogues", "nlu", "pol", "nlg"):
        for split in available_splits(folder, config):
            assert read_parquet_split(folder, config, split) == \
                list(load_dataset(str(folder), config, split=split)), (config, split)


def test_labels_are_json_text_for_a_plain_parquet_reader(embedded_build):
    """What a reader without `datasets` sees: JSON text, which json.loads turns into the labels."""
    import pyarrow.parquet as pq

    table = pq.read_table(embedded_build / "nlu" / "test-00000-of-00001.parquet")
    rows = load_dataset(str(embedded_build), "nlu", split="test")
    assert [json.loads(v.as_py()) for v in table.column("nlu")] == rows["nlu"]
