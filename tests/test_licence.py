"""The licence rule (meditod_hub/data/licence.py): synthetic is proven from the content, never declared.

The authors' sample (real MediTOD dialogues, ../shared, copied into tmp_path only) is built and
pushed with every kind of release.json, and hidden anywhere inside a synthetic release: none goes
out synthetic, and only an explicit own-data licence goes out ungated. The embedded sample and a
generated synthetic corpus, unmodified, still do. Failures print ids and kinds, never dialogue
text.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers import push
from huggingface_hub import DatasetCard

from meditod_hub.data import about
from meditod_hub.data import build as B
from meditod_hub.data.licence import MEDITOD, OWN, SAMPLE_FINGERPRINT, SYNTHETIC, content_fingerprint
from meditod_hub.data.release import read_release
from meditod_hub.data.synthetic import generate_release
from meditod_hub.errors import MeditodError

EMBEDDED = Path(__file__).resolve().parent.parent / "data" / "sample"

# release.json written beside the authors' dialogues -> the licence the build must record
# (None: the build refuses the release).
RELEASE_JSONS = {
    "synthetic true": ('{"synthetic": true}', MEDITOD),
    "synthetic false": ('{"synthetic": false}', MEDITOD),
    "missing": (None, MEDITOD),
    "the embedded sample's": ((EMBEDDED / "release.json").read_text(), MEDITOD),
    "a forged generator record": ('{"generator": {"name": "meditod_hub.data.synthetic", "seed": 0, '
                                  '"dialogues": 3}, "synthetic": true}', MEDITOD),
    "own-data declaration": ('{"license": "cc-by-4.0", "name": "My clinic dialogues"}', OWN),
    "garbage bytes": ("{not json", None),
    "garbage synthetic value": ('{"synthetic": "yes"}', None),
    "garbage licence value": ('{"license": 4}', None),
}


def _with_release_json(authors: Path, tmp_path: Path, text: str | None) -> Path:
    release = tmp_path / "release"
    shutil.copytree(authors, release)
    (release / "release.json").unlink(missing_ok=True)
    if text is not None:
        (release / "release.json").write_text(text)
    return release


def _card(folder: Path) -> DatasetCard:
    return DatasetCard.load(folder / "README.md")


@pytest.mark.parametrize("case", RELEASE_JSONS)
def test_the_authors_dialogues_never_build_or_push_as_synthetic(case, sample_release, hub_server,
                                                                tmp_path):
    text, expected = RELEASE_JSONS[case]
    release = _with_release_json(sample_release, tmp_path, text)
    out = tmp_path / "meditod"
    if expected is None:
        with pytest.raises(MeditodError, match="release.json"):
            B.build(B.BuildArguments(source=release, out=out))
        assert not out.exists()
        return
    built = B.build(B.BuildArguments(source=release, out=out))
    manifest = B.verify_manifest(out)
    assert (built.licence.kind, manifest["licence"], manifest["synthetic"]) == (expected, expected,
                                                                               False)
    card = _card(out)
    assert "synthetic" not in (card.data.tags or [])
    assert manifest["gated"] == (expected == MEDITOD) == ("extra_gated_fields" in card.data.to_dict())

    result = push(hub_server.client_env(tmp_path), out, "org/data", "--public")
    assert result.returncode == 0, result.stderr[-2000:]
    repo = hub_server.repo("dataset", "org/data")
    assert repo.gated == ("manual" if expected == MEDITOD else False)
    assert "synthetic" not in (DatasetCard(hub_server.files("dataset", "org/data")["README.md"]
                                           .decode()).data.tags or [])
    assert ("gated, manual approval" if expected == MEDITOD else "not gated") in result.stdout
    assert "why: " + manifest["licence_reason"] in result.stdout


def test_the_embedded_sample_is_synthetic_by_its_content(tmp_path, hub_server):
    release = read_release(EMBEDDED)
    assert content_fingerprint(release.dialogues, release.splits, release.metadata,
                               release.other_files) == SAMPLE_FINGERPRINT
    copy = tmp_path / "copy"
    shutil.copytree(EMBEDDED, copy)  # proven by its content, wherever it is
    out = tmp_path / "meditod"
    assert B.build(B.BuildArguments(source=copy, out=out)).licence.kind == SYNTHETIC
    result = push(hub_server.client_env(tmp_path), out, "org/sample", "--public")
    assert result.returncode == 0, result.stderr[-2000:]
    assert hub_server.repo("dataset", "org/sample").gated is False and "not gated" in result.stdout
    assert "the embedded sample, by content fingerprint" in result.stdout


def test_a_generated_corpus_is_synthetic_and_an_edited_one_is_not(tmp_path, hub_server):
    release = generate_release(tmp_path / "generated", seed=3, dialogues=6)
    out = tmp_path / "meditod"
    assert B.build(B.BuildArguments(source=release, out=out)).licence.kind == SYNTHETIC
    result = push(hub_server.client_env(tmp_path), out, "org/generated")
    assert result.returncode == 0, result.stderr[-2000:]
    assert hub_server.repo("dataset", "org/generated").gated is False
    assert "regenerated by meditod_hub.data.synthetic from seed 3" in result.stdout

    dialogs = json.loads((release / "dialogs.json").read_text())
    first = next(iter(dialogs.values()))
    first["utterances"][1]["text"] += " (a real patient line pasted in)"
    (release / "dialogs.json").write_text(json.dumps(dialogs))
    assert B.build(B.BuildArguments(source=release, out=out)).licence.kind == MEDITOD
    metadata = json.loads((release / "release.json").read_text())
    metadata["generator"]["seed"] = 4  # the original content, but another recorded seed
    dialogs = generate_release(tmp_path / "again", seed=3, dialogues=6) / "dialogs.json"
    shutil.copy(dialogs, release / "dialogs.json")
    (release / "release.json").write_text(json.dumps(metadata))
    assert B.build(B.BuildArguments(source=release, out=out)).licence.kind == MEDITOD


def test_own_dataset_card_has_its_own_identity_and_the_cmas_citation(sample_release, tmp_path):
    release = _with_release_json(sample_release, tmp_path, None)
    out = tmp_path / "own"
    B.build(B.BuildArguments(source=release, out=out, name="Clinic history-taking",
                             description="Dialogues recorded in our portal.", license="cc-by-4.0"))
    card = _card(out)
    text = card.text
    assert (card.data.license, card.data.pretty_name) == ("cc-by-4.0", "Clinic history-taking")
    assert text.lstrip().startswith("# Clinic history-taking")
    assert "Dialogues recorded in our portal." in text
    assert about.CITATION in text                                   # CMAS, always
    assert about.SOURCE_CITATION not in text and about.SUMMARY not in text  # MediTOD's, never
    assert "233 dialogues" not in text and "extra_gated" not in str(card.data.to_dict())


def test_meditod_card_keeps_meditod_identity(sample_release, tmp_path):
    out = tmp_path / "meditod"
    B.build(B.BuildArguments(source=_with_release_json(sample_release, tmp_path, None), out=out))
    card = _card(out)
    assert card.data.pretty_name == about.PRETTY_NAME and card.data.license == "other"
    assert about.SUMMARY in card.text and about.CITATION in card.text
    assert about.SOURCE_CITATION in card.text


def test_build_prints_the_licence_and_why(sample_release, tmp_path, capsys):
    from meditod_hub.commands import build

    release = _with_release_json(sample_release, tmp_path, '{"synthetic": true}')
    assert build.main(["--source", str(release), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "licence-restricted MediTOD data" in out and "gated" in out
    assert "release.json's \"synthetic\" is not proof" in out


def _hide_in_dialogue(release: Path, authors: dict) -> None:
    _edit_json(release / "dialogs.json", lambda d: next(iter(d.values())).update(notes=authors))


def _hide_in_utterance(release: Path, authors: dict) -> None:
    _edit_json(release / "dialogs.json",
               lambda d: next(iter(d.values()))["utterances"][0].update(notes={"x": [authors]}))


def _hide_in_no_split(release: Path, authors: dict) -> None:
    _edit_json(release / "dialogs.json", lambda d: d.update({f"x{k}": v for k, v in authors.items()}))


def _hide_in_release_json(release: Path, authors: dict) -> None:
    _edit_json(release / "release.json", lambda m: m.update(notes=authors))


def _hide_in_a_file(release: Path, authors: dict) -> None:
    (release / "notes").mkdir()
    (release / "notes" / "dialogs.json").write_text(json.dumps(authors))


def _edit_json(path: Path, edit) -> None:
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


# Where the authors' dialogues are hidden inside a synthetic release (None: in --description).
HIDING_PLACES = {"a dialogue-level key": _hide_in_dialogue, "an utterance's nested key":
                 _hide_in_utterance, "dialogs.json, in no split": _hide_in_no_split,
                 "release.json": _hide_in_release_json, "a file in a subfolder": _hide_in_a_file,
                 "the build's --description": None}


@pytest.mark.parametrize("base", ["embedded sample", "generated corpus"])
@pytest.mark.parametrize("place", HIDING_PLACES)
def test_nothing_rides_along_with_a_synthetic_release(base, place, sample_release, hub_server,
                                                      tmp_path):
    release = tmp_path / "release"
    if base == "embedded sample":
        shutil.copytree(EMBEDDED, release)
    else:
        generate_release(release, seed=1, dialogues=4)
    authors_text = (sample_release / "dialogs.json").read_text()
    description = None
    if HIDING_PLACES[place] is None:
        description = authors_text
    else:
        HIDING_PLACES[place](release, json.loads(authors_text))
    out = tmp_path / "meditod"
    built = B.build(B.BuildArguments(source=release, out=out, description=description))
    manifest = B.verify_manifest(out)
    assert (built.licence.kind, manifest["synthetic"], manifest["gated"]) == (MEDITOD, False, True)
    if place == "a file in a subfolder":
        assert "other file(s): notes/dialogs.json" in built.licence.reason

    result = push(hub_server.client_env(tmp_path), out, "org/data", "--public")
    assert result.returncode == 0, result.stderr[-2000:]
    assert hub_server.repo("dataset", "org/data").gated == "manual"
    assert "gated, manual approval" in result.stdout and "not gated" not in result.stdout
