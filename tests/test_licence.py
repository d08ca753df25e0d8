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
import string
from pathlib import Path

import pytest
from helpers import push
from huggingface_hub import DatasetCard
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from meditod_hub.data import about, proof
from meditod_hub.data import build as B
from meditod_hub.data import manifest as M
from meditod_hub.data.licence import (
    HUB_LICENCES,
    MEDITOD,
    OWN,
    SAMPLE_FINGERPRINT,
    SYNTHETIC,
    LicenceError,
    content_fingerprint,
    declared_licence,
    hub_licence,
    licence_of,
)
from meditod_hub.data.release import Release, read_release
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
    manifest = M.verify_manifest(out)
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
    manifest = M.verify_manifest(out)
    assert (built.licence.kind, manifest["synthetic"], manifest["gated"]) == (MEDITOD, False, True)
    if place == "a file in a subfolder":
        assert "other file(s): notes/dialogs.json" in built.licence.reason

    result = push(hub_server.client_env(tmp_path), out, "org/data", "--public")
    assert result.returncode == 0, result.stderr[-2000:]
    assert hub_server.repo("dataset", "org/data").gated == "manual"
    assert "gated, manual approval" in result.stdout and "not gated" not in result.stdout


# --- issue 46: a licence is an id of the Hub's list, nothing else ---------------------------------
# Every Unicode general category (hypothesis draws from each).
CATEGORIES = ("Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps",
              "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs",
              "Co", "Cn")
IDS = frozenset(HUB_LICENCES)
PROOFS = tuple(i for i in HUB_LICENCES if i != "unknown")  # `other` needs more: see below
# The battery's blank-looking characters, and the other invisible ones of issue 36.
BLANK_LOOKING = ("\u0301", "\u034f", "\u3164", "\u2800", "\u115f", "\u1160", "\uffa0", "\ufe0f",
                 "\u17b4", "\u17b5", "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00a0",
                 "\u2007", "\u202f", "\u3000", "\u200e", "\u200f", "\u180e", "\u00ad", "\u2028")
# Words that name no licence (the battery's, and near misses of real ids).
NEAR_MISSES = ("none", "None", "unknown", "UNKNOWN", "NOASSERTION", "N/A", "n/a", "-", ".", "",
               "   ", "MediTOD", "UMLS", "cc-by-4.0 but not really", "cc by 4.0", "cc-by-4",
               "cc-by-4.0.", "cc_by_4.0", "CC BY 4.0", "apache 2.0", "apache-2", "Apache License 2.0",
               "mit license", "MIT-0", "'mit'", '"mit"', "mit;", "mit,apache-2.0",
               "mit/apache-2.0", "mit apache-2.0", "gpl-3.0+", "gpl-3.0-or-later", "public domain",
               "proprietary", "private", "own", "mine", "yes", "true", "cc-by-4.0\x00", "\x1cmit",
               "m\u0131t", "\u212ait")  # dotless i; Kelvin sign (lowercases to ASCII k)
ASCII_SPACE = st.text(alphabet=string.whitespace, max_size=4)


def _refused(value: str) -> None:
    assert declared_licence(value) is None, ascii(value)
    if hub_licence(value) is None:
        with pytest.raises(LicenceError) as refusal:
            licence_of(Release(dialogues={}, splits={}, metadata={}), {"license": value})
        message = str(refusal.value)
        assert "\n" not in message and message.startswith("--license ")
        assert "https://huggingface.co/docs/hub/repositories-licenses" in message


@pytest.mark.parametrize("category", CATEGORIES)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_strings_of_any_unicode_category_are_refused(category, data):
    """30 categories x 25 examples: a string of one category's characters, alone, or inside or
    around a real id, is no licence (an ASCII letter that makes another real id aside)."""
    chars = st.characters(categories=[category])
    alone = data.draw(st.text(alphabet=chars, min_size=1, max_size=6), "alone")
    assume(alone.strip(string.whitespace).lower() not in IDS)
    _refused(alone)
    ident = data.draw(st.sampled_from(HUB_LICENCES), "id")
    char = data.draw(chars.filter(lambda c: c not in string.whitespace), "char")
    at = data.draw(st.integers(0, len(ident)), "at")
    near = ident[:at] + char + ident[at:]
    assume(near.lower() not in IDS)
    _refused(near)
    _refused(data.draw(ASCII_SPACE, "before") + near + data.draw(ASCII_SPACE, "after"))


@settings(max_examples=150, deadline=None)
@given(blank=st.text(alphabet=st.sampled_from(BLANK_LOOKING + tuple(string.whitespace)),
                     min_size=1, max_size=8),
       ident=st.sampled_from(HUB_LICENCES), where=st.sampled_from(["alone", "before", "after"]))
def test_blank_looking_strings_are_refused_alone_or_around_an_id(blank, ident, where):
    """150 examples: the battery's invisible characters, mixed with ASCII whitespace."""
    assume(blank.strip(string.whitespace))  # ASCII whitespace alone is tested below
    _refused({"alone": blank, "before": blank + ident, "after": ident + blank}[where])


@pytest.mark.parametrize("word", NEAR_MISSES)
def test_words_that_name_no_licence_are_refused(word):
    _refused(word)


@settings(max_examples=100, deadline=None)
@given(ident=st.sampled_from(HUB_LICENCES), sep=st.sampled_from([" ", "\t", "-", ":", "/", "; "]),
       word=st.text(alphabet=string.ascii_letters + string.digits + ".-+", min_size=1,
                    max_size=8))
def test_an_id_with_another_word_is_refused(ident, sep, word):
    """100 examples: "cc-by-4.0 but not really" and its kind."""
    near = ident + sep + word
    assume(near.lower() not in IDS)
    _refused(near)


@settings(max_examples=200, deadline=None)
@given(ident=st.sampled_from(HUB_LICENCES), upper=st.lists(st.booleans(), min_size=40,
                                                            max_size=40),
       before=ASCII_SPACE, after=ASCII_SPACE)
def test_every_hub_id_in_any_ascii_case_with_spaces_around_is_that_id(ident, upper, before, after):
    """200 examples (and every id once, below)."""
    cased = "".join(c.upper() if up else c for c, up in zip(ident, upper, strict=False))
    assert hub_licence(before + cased + after) == ident
    assert declared_licence(before + cased + after) == (None if ident == "unknown" else ident)


def test_every_hub_id_is_accepted_and_unknown_proves_nothing():
    assert len(HUB_LICENCES) == len(IDS) and all(i == i.strip().lower() for i in IDS)
    for ident in PROOFS:
        assert declared_licence(f" \t{ident.upper()}\n") == ident
        if ident != "other":
            licence, _ = licence_of(Release(dialogues={}, splits={}, metadata={}),
                                    {"license": f" {ident.title()} "})
            assert (licence.kind, licence.license, licence.gated) == (OWN, ident, False)
    with pytest.raises(LicenceError, match="names no licence"):
        licence_of(Release(dialogues={}, splits={}, metadata={}), {"license": " Unknown"})


# The battery's strings, each declared for the authors' dialogues in release.json or by --license.
BATTERY = {"combining acute": "\u0301", "combining grapheme joiner": "\u034f",
           "Hangul filler": "\u3164", "braille blank": "\u2800", "Hangul choseong filler": "\u115f",
           "halfwidth Hangul filler": "\uffa0", "variation selector": "\ufe0f",
           "Khmer vowel inherent": "\u17b4", "none": "none", "unknown": "unknown",
           "NOASSERTION": "NOASSERTION", "N/A": "N/A", "dash": "-", "dot": ".",
           "MediTOD": "MediTOD", "UMLS": "UMLS", "cc-by-4.0 but not really": "cc-by-4.0 but not really"}


@pytest.mark.parametrize("how", ["release.json", "--license"])
@pytest.mark.parametrize("case", BATTERY)
def test_the_battery_licences_refuse_the_build_in_one_line(case, how, sample_release, tmp_path,
                                                           capsys):
    """Before: each built the authors' dialogues as the user's own, ungated, and `push --public`
    made them public. Now the build stops, names where the licence came from and where the
    accepted ids are, and writes nothing."""
    from meditod_hub.commands import build as build_cmd
    from meditod_hub.errors import run_main

    value = BATTERY[case]
    release, extra = _with_release_json(sample_release, tmp_path, None), []
    if how == "release.json":
        (release / "release.json").write_text(json.dumps({"license": value}))
    else:
        extra = [f"--license={value}"]
    code = run_main(build_cmd.main, ["--source", str(release), "--out", str(tmp_path / "m"),
                                     *extra])
    err = capsys.readouterr().err.strip()
    assert code == 2 and not (tmp_path / "m").exists(), err
    assert len(err.splitlines()) == 1, err
    assert ("release.json's `license`" if how == "release.json" else "--license ") in err
    assert "repositories-licenses" in err and "HUB_LICENCES" in err


def test_a_hub_id_in_any_case_builds_own_under_that_id(sample_release, tmp_path):
    out = tmp_path / "own"
    release = _with_release_json(sample_release, tmp_path, None)
    built = B.build(B.BuildArguments(source=release, out=out, license=" \tCC-BY-NC-SA-4.0\n"))
    manifest = M.verify_manifest(out)
    assert (built.licence.kind, manifest["license"], _card(out).data.license) == \
        (OWN, "cc-by-nc-sa-4.0", "cc-by-nc-sa-4.0")
    assert "declared by --license" in built.licence.reason
    proof.reprove_licence(out, manifest)


# `other`: a LICENSE file in the release and release.json's `license_name`, or refused.
OTHER_CASES = {"no LICENSE file": (None, "my-clinic-1.0", "LICENSE file"),
               "an empty LICENSE file": ("", "my-clinic-1.0", "LICENSE file"),
               "no license_name": ("Our terms.", None, "license_name"),
               "a license_name that names none": ("Our terms.", "none", "license_name"),
               "a blank-looking license_name": ("Our terms.", "\u3164", "license_name"),
               "a license_name with spaces": ("Our terms.", "my licence", "license_name"),
               "a LICENSE file and a license_name": ("Our terms.", " My-Clinic-1.0 ", None)}


@pytest.mark.parametrize("case", OTHER_CASES)
def test_other_needs_a_licence_file_and_a_licence_name(case, sample_release, tmp_path):
    text, name, refused = OTHER_CASES[case]
    release = _with_release_json(sample_release, tmp_path, json.dumps(
        {"license": "Other", **({"license_name": name} if name is not None else {})}))
    if text is not None:
        (release / "LICENSE").write_text(text)
    out = tmp_path / "own"
    if refused:
        with pytest.raises(LicenceError, match=refused) as refusal:
            B.build(B.BuildArguments(source=release, out=out))
        assert "release.json's `license` 'other'" in str(refusal.value) and not out.exists()
        return
    built = B.build(B.BuildArguments(source=release, out=out))
    assert (built.licence.kind, built.licence.license) == (OWN, "other")
    assert "other (my-clinic-1.0, text in LICENSE)" in built.licence.reason
    assert not M.verify_manifest(out)["gated"]


def _edit_card(folder: Path, text: str) -> dict:
    """Add `text` to a build's card and record the new card in its manifest (as a user could)."""
    card = folder / "README.md"
    card.write_text(card.read_text(encoding="utf-8") + "\n" + text + "\n", encoding="utf-8")
    manifest = json.loads((folder / B.MANIFEST).read_text())
    manifest["files"]["README.md"] = M.file_sha256(card)
    (folder / B.MANIFEST).write_text(json.dumps(manifest))
    return M.verify_manifest(folder)


@pytest.mark.parametrize("base", ["embedded sample", "generated corpus"])
def test_a_synthetic_card_carrying_the_authors_utterances_is_refused_at_push(
        base, sample_release, tmp_path, capsys, monkeypatch):
    """Before: the push's re-proof compared the data files only, so a synthetic build whose
    card (and manifest) were edited to carry the authors' dialogues went out ungated."""
    from meditod_hub.commands import push as push_cmd
    from meditod_hub.errors import run_main

    release = tmp_path / "release"
    if base == "embedded sample":
        shutil.copytree(EMBEDDED, release)
    else:
        generate_release(release, seed=2, dialogues=4)
    out = tmp_path / "meditod"
    assert B.build(B.BuildArguments(source=release, out=out)).licence.kind == SYNTHETIC
    proof.reprove_licence(out, M.verify_manifest(out))  # the card as built is the source's
    authors = json.loads((sample_release / "dialogs.json").read_text())
    utterances = [u["text"] for d in authors.values() for u in d["utterances"]][:5]
    manifest = _edit_card(out, "\n".join(utterances))
    with pytest.raises(M.ManifestError, match="README.md") as refusal:
        proof.reprove_licence(out, manifest)
    assert not any(u in str(refusal.value) for u in utterances)

    monkeypatch.setenv("HF_TOKEN", "hf_unusedWriteToken0123456789abcdefABC")
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    capsys.readouterr()
    code = run_main(push_cmd.main, ["--folder", str(out), "--repo", "org/x", "--public"])
    err = capsys.readouterr().err
    assert code == 1 and "says the data is synthetic" in err and "README.md" in err, err


def test_an_own_manifest_under_no_hub_licence_is_refused_at_push(sample_release, tmp_path):
    out = tmp_path / "own"
    B.build(B.BuildArguments(source=_with_release_json(sample_release, tmp_path, None), out=out,
                             license="cc-by-4.0"))
    manifest = M.verify_manifest(out)
    for value in [*BATTERY.values(), *NEAR_MISSES, 4, None]:
        with pytest.raises(M.ManifestError, match="licence the Hub accepts"):
            proof.reprove_licence(out, {**manifest, "license": value})
    proof.reprove_licence(out, {**manifest, "license": " CC-BY-4.0 "})
