"""Every page says what its data is (issue 35, item 4): a synthetic or own build's dataset card,
dataset_infos.json and the model card of a run trained on it carry none of MediTOD's own text
(its size, specialties, source dialogues, licence) and no `dataset.type: meditod`; the authors'
sample still gets all of it; charts and tables title their data; SmolLM2's family reads `chat`.
No network, no training: builds of a few dialogues and runs written as files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from helpers import write_release, write_run
from huggingface_hub import ModelCard

from meditod_hub.data import proof, provenance, synthetic
from meditod_hub.data.build import BuildArguments, build
from meditod_hub.evaluation.report import markdown as results_markdown
from meditod_hub.evaluation.results import local_rows
from meditod_hub.evaluation.results_render import chart_heading
from meditod_hub.evaluation.results_table import Row
from meditod_hub.models.families import get_family
from meditod_hub.models.runs import family_label, read_run
from meditod_hub.publishing.model_card import render_model_card

# What only MediTOD's own data may say: its size, specialties, source dialogues and licence.
MEDITOD_ONLY = ("233", "22.5k", "respiratory", "musculoskeletal", "Fareez", "fareez2022",
                "simulated", "UMLS")


def _leaks(text: str) -> list[str]:
    return [phrase for phrase in MEDITOD_ONLY if phrase in text]


def _pages(folder: Path) -> dict[str, str]:
    return {name: (folder / name).read_text(encoding="utf-8")
            for name in ("README.md", "dataset_infos.json")}


def _model_card(tmp_path: Path, data: Path) -> ModelCard:
    """The card of a POL run trained and scored on the build `data`."""
    run = write_run(tmp_path / "run", task="pol", **proof.record(data))
    return render_model_card(read_run(run), run_id="tester/run", repo_id="tester/run")


@pytest.fixture(scope="module")
def synthetic_build(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("synthetic")
    build(BuildArguments(source=synthetic.generate_release(folder / "release", seed=1, dialogues=5),
                         out=folder / "meditod"))
    return folder / "meditod"


@pytest.fixture(scope="module")
def own_build(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("own")
    build(BuildArguments(source=write_release(folder / "release"), out=folder / "meditod",
                         license="cc-by-4.0", name="Ward 3 interviews"))
    return folder / "meditod"


@pytest.mark.parametrize("which", ["synthetic_build", "embedded_build", "own_build"])
def test_a_build_not_of_meditods_data_says_nothing_of_meditod_data(request, tmp_path, which):
    """(before: every synthetic card said "233 dialogues ... respiratory cases", cited Fareez et
    al. and printed the UMLS gating text; its model cards declared `dataset.type: meditod`)"""
    data = request.getfixturevalue(which)
    for name, text in _pages(data).items():
        assert not _leaks(text), f"{which} {name}: {_leaks(text)}"
    infos = json.loads((data / "dataset_infos.json").read_text(encoding="utf-8"))
    assert all("not MediTOD" in info["description"] for info in infos.values())
    assert all(info["citation"].startswith("@article{saley2024meditod") for info in infos.values())
    card = _model_card(tmp_path, data)
    assert not _leaks(str(card)), _leaks(str(card))
    kind = proof.read(data).kind
    assert {r.dataset_type for r in card.data.eval_results} == {kind} != {"meditod"}
    assert "type: meditod" not in str(card)


def test_own_data_is_named_and_licensed_as_declared(own_build):
    card = _pages(own_build)["README.md"]
    metadata = yaml.safe_load(card.split("---")[1])
    assert (metadata["pretty_name"], metadata["license"]) == ("Ward 3 interviews", "cc-by-4.0")
    assert "Licence: `cc-by-4.0`" in card and "extra_gated_prompt" not in card


def test_the_authors_sample_keeps_meditods_text_and_type(sample_build, tmp_path):
    """The authors' data (../shared/meditod-sample; skipped where it is absent) is MediTOD."""
    pages = _pages(sample_build)
    for phrase in ("233 dialogues", "respiratory", "Fareez", "UMLS"):
        assert phrase in pages["README.md"] and phrase in pages["dataset_infos.json"], phrase
    assert "## Results in the paper" in pages["README.md"]
    card = _model_card(tmp_path, sample_build)
    assert {r.dataset_type for r in card.data.eval_results} == {"meditod"}
    assert {r.dataset_name for r in card.data.eval_results} == {"MediTOD"}
    assert "respiratory (in-domain)" in str(card)


def _row(dataset: str, comparable: bool, source: str = "local") -> Row:
    return Row("nlu", "test", "a system", source, "supervised", False, "", {"f1": 0.5},
               dataset=dataset, comparable=comparable)


def test_a_chart_is_titled_meditod_only_when_every_bar_is():
    """(before: "MediTOD NLU: F1 by system" above the bars of runs on the synthetic sample)"""
    paper, synthetic_run = _row("MediTOD", True, "paper"), _row("synthetic corpus, 5 dialogues", False)
    assert chart_heading("nlu", "F1", [paper, _row("MediTOD", True)]) == "MediTOD NLU: F1 by system"
    mixed = chart_heading("nlu", "F1", [paper, synthetic_run])
    assert mixed == "NLU: F1 by system, on MediTOD and synthetic corpus, 5 dialogues"
    assert not chart_heading("nlu", "F1", [synthetic_run]).startswith("MediTOD")


def test_a_runs_results_table_is_titled_with_its_data():
    from meditod_hub.data.tasks import TASKS

    results = {"task": "nlg", "split": "test", "bleu2": 1.0, "bleu4": 0.5, "rouge1": 0.1,
               "rougeL": 0.1, "sacrebleu": {"score": 1.0, "signature": "x"}, "bertscore": None,
               "examples": 3, "parse_failures": 0}
    sample = {"kind": "embedded-sample", "name": "s", "dialogues": 10, "utterances": 136}
    own = results_markdown({**results, "provenance": sample}, TASKS["nlg"]).splitlines()[0]
    assert own == "# NLG results (test) on synthetic sample (embedded), 10 dialogues"
    meditod = {**sample, "kind": "meditod", "name": "MediTOD"}
    assert results_markdown({**results, "provenance": meditod}, TASKS["nlg"]).startswith(
        "# MediTOD NLG results (test)")


def test_the_chat_family_is_chat_and_an_old_runs_llama_reads_as_chat(tmp_path):
    """(issue 47: the family was registered as `llama` and shown as `chat` for SmolLM2's recipes;
    `llama` is now only how run folders made before recorded it)"""
    run = write_run(tmp_path / "smollm2", model="smollm2-135m", family="llama")  # an old folder
    assert read_run(run).family.name == "chat"
    assert family_label(read_run(run).info) == "chat"
    assert family_label({"family": "pptod"}) == "pptod"
    assert get_family("llama") is get_family("chat")
    card = render_model_card(read_run(run), run_id="t/r", repo_id="t/r")
    assert "chat" in card.data.tags and "llama" not in card.data.tags
    assert "Model family (`meditod_hub.models.families`): `chat`" in str(card)
    rows, _ = local_rows([tmp_path])
    assert {r.family for r in rows} == {"chat"}


def test_train_help_shows_smollm2s_family_as_chat():
    from meditod_hub.commands.train import train_help

    recipe = Path(__file__).resolve().parent.parent / "recipes" / "smollm2-135m" / "nlu.yaml"
    line = next(line for line in train_help([str(recipe), "-h"]).splitlines()
                if line.strip().startswith("family"))
    assert line.split()[1] == "chat"


# --- issue 46.5: what the data is, proven again from its rows by every reader -------------------
def _edit_claim(folder: Path, kind: str, **manifest) -> None:
    path = folder / "build_manifest.json"
    record = json.loads(path.read_text())
    record["provenance"]["kind"] = kind
    record.update(manifest)
    path.write_text(json.dumps(record))


def test_the_pinned_rows_are_the_embedded_samples(embedded_build):
    assert proof.rows_fingerprint(embedded_build)[0] == proof.EMBEDDED_SAMPLE_ROWS
    assert proof.read(embedded_build).kind == provenance.EMBEDDED_SAMPLE


@pytest.mark.parametrize("claim", [provenance.MEDITOD, provenance.OWN, provenance.SYNTHETIC_CORPUS])
def test_an_edited_manifest_does_not_change_what_the_embedded_sample_is(claim, embedded_build,
                                                                        tmp_path):
    """Before: the manifest's word was taken; the sample edited to say MediTOD stood beside the
    paper's rows in results and cards."""
    copy = tmp_path / "meditod"
    shutil.copytree(embedded_build, copy)
    _edit_claim(copy, claim)
    found = proof.read(copy)
    assert found.kind == provenance.EMBEDDED_SAMPLE and not found.comparable


def test_a_synthetic_claim_the_rows_do_not_bear_out_is_meditods(own_build, tmp_path):
    copy = tmp_path / "meditod"
    shutil.copytree(own_build, copy)
    _edit_claim(copy, provenance.EMBEDDED_SAMPLE)
    found = proof.read(copy)
    assert found.kind == provenance.MEDITOD and not found.synthetic


def test_a_runs_record_is_proven_again_from_its_unchanged_dataset(embedded_build, tmp_path):
    from meditod_hub.data.dataset import fingerprint

    edited = {"kind": provenance.MEDITOD, "name": "MediTOD", "dialogues": 233, "utterances": 22503}
    info = {"dataset": str(embedded_build), "data_fingerprint": fingerprint(embedded_build),
            "provenance": edited}
    assert proof.of_record(info).kind == provenance.EMBEDDED_SAMPLE
    moved = {**info, "data_fingerprint": "sha256:another-build"}  # the folder was rebuilt since
    found = proof.of_record(moved)
    assert found.kind == provenance.MEDITOD and not found.proven and not found.comparable
    assert found.short().endswith(provenance.UNPROVEN_NOTE) and provenance.UNPROVEN_NOTE in \
        found.describe()
    assert "proven" not in found.as_json()  # a reader's finding, never written into a record


def _results_file(folder: Path, data: Path, **edits) -> Path:
    """A results file as `meditod evaluate` writes it for `data`, with `edits` to its record."""
    from meditod_hub.models.records import Results

    record = {**proof.record(data), **edits}
    folder.mkdir(parents=True)
    path = folder / "results.json"
    path.write_text(json.dumps(Results("nlu", "test", {"f1": 0.5}, **record).as_json()))
    return path


def _cascade_file(folder: Path, data: Path, **edits) -> Path:
    """An `eval-cascade` results file for `data`, with `edits` to its record."""
    folder.mkdir(parents=True)
    scores = {"f1": 0.5, "bleu4": 1.0}
    path = folder / "results.json"
    path.write_text(json.dumps({
        "split": "test", **proof.record(data), **edits,
        "models": {t: {"label": f"tiny-{t}"} for t in ("nlu", "pol", "nlg")}, "nlu": scores,
        **{t: {"gold_input": scores, "cascaded": scores} for t in ("pol", "nlg")}}))
    return path


MEDITOD_CLAIM = {"kind": provenance.MEDITOD, "name": "MediTOD", "dialogues": 233,
                 "utterances": 22503}


@pytest.mark.parametrize("write", [_results_file, _cascade_file], ids=["evaluate", "cascade"])
def test_results_files_are_proven_again_from_their_data_not_their_record(write, embedded_build,
                                                                         tmp_path):
    """Before: `meditod results` took a results file's recorded provenance: one edited to say
    MediTOD stood beside the paper's rows; one whose data is gone was taken at its word."""
    from meditod_hub.evaluation.results import local_rows

    data = tmp_path / "meditod"
    shutil.copytree(embedded_build, data)
    write(tmp_path / "runs" / "edited", data, provenance=MEDITOD_CLAIM)
    gone = tmp_path / "gone"
    shutil.copytree(embedded_build, gone)
    write(tmp_path / "runs" / "gone", gone)
    write(tmp_path / "runs" / "old", data, provenance=MEDITOD_CLAIM, dataset=None,
          data_fingerprint=None)  # written before results recorded their dataset
    shutil.rmtree(gone)
    rows, skipped = local_rows([tmp_path / "runs"])
    assert not skipped and rows
    by = {Path(r.link).parent.name: r for r in rows}
    assert by["edited"].dataset.startswith("synthetic sample (embedded)")
    assert by["gone"].dataset == f"synthetic sample (embedded), 10 dialogues" \
        f"{provenance.UNPROVEN_NOTE}"
    assert by["old"].dataset == f"MediTOD, 233 dialogues{provenance.UNPROVEN_NOTE}"
    assert not any(row.comparable for row in rows)


@pytest.fixture(scope="module")
def corpus_build(tmp_path_factory) -> Path:
    """A generated corpus (seed 3, 8 dialogues, realistic) as `meditod build` makes it."""
    tmp = tmp_path_factory.mktemp("corpus")
    source = synthetic.generate_release(tmp / "release", 3, 8, "realistic")
    build(BuildArguments(source=source, out=tmp / "meditod"))
    return tmp / "meditod"


def test_a_generated_corpus_is_proven_by_regenerating_it(corpus_build):
    found = proof.read(corpus_build)
    assert found.kind == provenance.SYNTHETIC_CORPUS and found.dialogues == 8


@pytest.mark.parametrize("generator", [
    {"name": "meditod-synthetic", "seed": 4, "dialogues": 8, "style": "realistic"},  # another seed
    {"name": "meditod-synthetic", "seed": 3, "dialogues": 9, "style": "realistic"},
    {"name": "meditod-synthetic", "seed": 3, "dialogues": 8, "style": "template"},
    {"name": "meditod-synthetic", "seed": "3", "dialogues": 8},
    None])
def test_a_generator_record_that_does_not_remake_the_rows_proves_nothing(generator, corpus_build,
                                                                          tmp_path):
    """Before: a synthetic corpus's claim stood as the manifest recorded it, for every reader
    (evaluate, results, cards): an edited manifest made any build synthetic, unlike MediTOD."""
    copy = tmp_path / "meditod"
    shutil.copytree(corpus_build, copy)
    _edit_claim(copy, provenance.SYNTHETIC_CORPUS, generator=generator)
    found = proof.read(copy)
    assert (found.kind, found.name) == (provenance.MEDITOD, proof.UNPROVEN) and found.comparable


def test_another_builds_rows_under_a_corpus_claim_are_meditods(own_build, corpus_build, tmp_path):
    """The manifest of a generated corpus copied over another build's rows."""
    copy = tmp_path / "meditod"
    shutil.copytree(own_build, copy)
    manifest = json.loads((corpus_build / "build_manifest.json").read_text())
    _edit_claim(copy, provenance.SYNTHETIC_CORPUS, generator=manifest["generator"])
    assert proof.read(copy).kind == provenance.MEDITOD


@pytest.mark.parametrize("claim", [provenance.MEDITOD, provenance.OWN])
def test_a_generated_corpus_edited_to_say_meditod_or_own_is_still_synthetic(claim, corpus_build,
                                                                            tmp_path):
    """An edited claim never makes invented dialogues stand beside the paper's rows."""
    copy = tmp_path / "meditod"
    shutil.copytree(corpus_build, copy)
    _edit_claim(copy, claim)
    found = proof.read(copy)
    assert found.kind == provenance.SYNTHETIC_CORPUS and not found.comparable


def test_a_generator_record_of_another_size_generates_nothing(corpus_build, tmp_path,
                                                              monkeypatch):
    """A forged size (a billion dialogues) would make every reader generate it."""
    copy = tmp_path / "meditod"
    shutil.copytree(corpus_build, copy)
    _edit_claim(copy, provenance.SYNTHETIC_CORPUS,
                generator={"name": "meditod-synthetic", "seed": 3, "dialogues": 10**9})
    monkeypatch.setattr(synthetic, "generate_release", lambda *a, **k: pytest.fail("generated"))
    assert proof.read(copy).kind == provenance.MEDITOD
