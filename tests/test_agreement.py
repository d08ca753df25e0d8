"""`meditod agreement`: two annotators' releases scored with the evaluation `make eval` runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from meditod_hub.commands import agreement as agreement_cmd
from meditod_hub.data.tasks import get_task, view_rows
from meditod_hub.errors import MeditodError
from meditod_hub.evaluation import agreement as A

PROJECT = Path(__file__).resolve().parent.parent


def edit(folder: Path, change) -> None:
    path = folder / "dialogs.json"
    dialogues = json.loads(path.read_text(encoding="utf-8"))
    change(dialogues)
    path.write_text(json.dumps(dialogues, indent=2), encoding="utf-8")


@pytest.fixture
def pair(embedded_release, tmp_path):
    import shutil

    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(embedded_release, a)
    shutil.copytree(embedded_release, b)

    def annotator_b(dialogues):
        d = dialogues["9001"]["utterances"]
        d[1]["nlu"][0]["slots"]["positive_symptom"][0]["onset"] = "a week ago"  # value differs
        d[2]["actions"] = [{"action": "chit-chat"}]                              # action differs
        del d[1]["dialog_state"]  # the release's state is not what is compared
    edit(b, annotator_b)
    return a, b


def test_identical_releases_agree_fully(embedded_release, tmp_path, capsys):
    out = tmp_path / "agreement.json"
    assert agreement_cmd.main(["--a", str(embedded_release), "--b", str(embedded_release),
                               "--out", str(out)]) == 0
    results = json.loads(out.read_text())
    for task in ("nlu", "pol"):
        assert results[task]["f1"] == results[task]["symmetric_f1"] == 1.0
        assert results[task]["disagreements"] == []


def test_a_as_gold_b_as_prediction_with_make_evals_keys(pair, tmp_path, capsys):
    a, b = pair
    out = tmp_path / "agreement.json"
    assert agreement_cmd.main(["--a", str(a), "--b", str(b), "--out", str(out)]) == 0
    results = json.loads(out.read_text())
    dialogues_a = json.loads((a / "dialogs.json").read_text())
    dialogues_b = json.loads((b / "dialogs.json").read_text())
    for task, column in (("nlu", "nlu"), ("pol", "actions")):
        gold = [r for d in dialogues_a for r in view_rows(task, d, dialogues_a[d])]
        pred = {r["id"]: r[column] for d in dialogues_b for r in view_rows(task, d, dialogues_b[d])}
        expected = get_task(task).score(gold, [pred[r["id"]] for r in gold])
        got = results[task]
        assert set(got) == set(expected) | {"task", "split", "f1_b_as_gold", "symmetric_f1",
                                            "disagreements"}
        assert {k: got[k] for k in expected} == json.loads(json.dumps(expected))
        assert got["f1"] < 1.0
        assert got["symmetric_f1"] == pytest.approx((got["f1"] + got["f1_b_as_gold"]) / 2)
    assert results["nlu"]["disagreements"] == [{
        "dialogue_id": "9001", "uttr_id": 1, "only_a": ["inform/positive_symptom/onset"],
        "only_b": ["inform/positive_symptom/onset"]}]
    assert results["pol"]["disagreements"] == [{
        "dialogue_id": "9001", "uttr_id": 2,
        "only_a": ["inquire/symptom/check:characteristics", "inquire/symptom/value"],
        "only_b": ["chit-chat"]}]
    printed = capsys.readouterr().out
    assert "dialogue 9001, utterance 1: only A inform/positive_symptom/onset" in printed
    assert "a week ago" not in printed and "a week ago" not in json.dumps(results["nlu"]["disagreements"])


def test_the_skip_rule_makes_the_two_directions_differ(embedded_release, tmp_path):
    import shutil

    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(embedded_release, a)
    shutil.copytree(embedded_release, b)
    edit(a, lambda d: d["9001"]["utterances"][1].update(nlu=[{"intent": "inform"}]))
    edit(a, lambda d: d["9001"]["utterances"][1].pop("dialog_state"))
    results = A.agreement(A.load(str(a), "A"), A.load(str(b), "B"))
    assert results["nlu"]["f1"] == 1.0, "A's bare inform turn is not scored with A as gold"
    assert results["nlu"]["f1_b_as_gold"] < 1.0


def test_different_dialogues_under_one_id_are_refused(embedded_release, tmp_path):
    import shutil

    b = tmp_path / "b"
    shutil.copytree(embedded_release, b)
    edit(b, lambda d: d["9002"]["utterances"][3].update(text="something else"))
    with pytest.raises(MeditodError) as caught:
        A.agreement(A.load(str(embedded_release), "A"), A.load(str(b), "B"))
    assert str(caught.value).startswith("dialogue 9002, utterance 3: speaker or text differ")
    assert "something else" not in str(caught.value)


def test_a_broken_release_is_a_one_line_error(embedded_release, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "dialogs.json").write_text("{")
    with pytest.raises(MeditodError) as caught:
        A.load(str(broken), "B")
    assert "\n" not in str(caught.value) and str(caught.value).startswith("B: cannot build")


def test_make_agreement_writes_out(pair, tmp_path):
    import subprocess

    a, b = pair
    out = tmp_path / "dir with space"
    result = subprocess.run(["make", "-s", "-o", "setup", "agreement", f"A={a}", f"B={b}",
                             f"OUT={out}", f"PY={sys.executable}"], cwd=PROJECT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert set(json.loads((out / "agreement.json").read_text())) >= {"nlu", "pol"}
