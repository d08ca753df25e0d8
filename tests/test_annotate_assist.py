"""Model suggestions with tiny models trained here (tiny-t5, 40 steps per task, CPU, offline):
suggestions appear, the model sees exactly the dataset's rows, and accepting every suggestion
reproduces the model's predictions on the built dataset exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from meditod_hub.apps.annotate.assist import LabelSuggester
from meditod_hub.apps.annotate.server import PortalSettings, create_app
from meditod_hub.commands import train as train_cmd
from meditod_hub.data.dataset import load_split
from meditod_hub.errors import UsageError
from meditod_hub.models.predictor import ModelSpec, load_predictor

PROJECT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.usefixtures("one_thread")
STEPS = 40  # enough for most outputs of the memorised training dialogues to parse
# what a model reads of a row (the labels are what it predicts)
INPUTS = {"nlu": ("id", "dialogue_id", "turn", "uttr_id", "context", "last_doctor_text", "patient_text"),
          "pol": ("id", "dialogue_id", "turn", "uttr_id", "context", "last_patient_text", "state")}


@pytest.fixture(scope="module")
def runs(tiny_models, embedded_build, tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("assist-runs")
    for task in ("nlu", "pol"):
        train_cmd.main([str(PROJECT / "recipes" / "tiny-t5" / f"{task}.yaml"),
                        f"--dataset_name={embedded_build}", f"--model_name_or_path={tiny_models / 'tiny-t5'}",
                        f"--output_dir={out / task}", f"--max_steps={STEPS}", "--save_strategy=no",
                        "--logging_steps=20"])
    return {"nlu": out / "nlu", "pol": out / "pol"}


class Recording:
    """A predictor that remembers the rows it was given."""

    def __init__(self, inner):
        self.inner, self.name, self.rows = inner, inner.name, []

    def predict(self, rows):
        self.rows.extend(rows)
        return self.inner.predict(rows)


def transcript(dialogue: dict) -> str:
    return "\n".join(f"{'D' if u['speaker'] == 'doctor' else 'P'}: {u['text']}"
                     for u in dialogue["utterances"])


@pytest.mark.slow
def test_accepting_every_suggestion_reproduces_the_models_predictions(
        runs, embedded_release, release_copy, tmp_path):
    from meditod_hub.data.build import BuildArguments, build

    release = release_copy(embedded_release)
    nlu, pol = (Recording(load_predictor(ModelSpec(str(runs[t])), t)) for t in ("nlu", "pol"))
    app = create_app(PortalSettings(source=release, assistant=LabelSuggester(nlu, pol)))
    client = TestClient(app, base_url="http://127.0.0.1")
    trained_on = json.loads((embedded_release / "dialogs.json").read_text())["9001"]
    did = client.post("/api/import", json={"text": transcript(trained_on)}).json()["id"]
    client.put(f"/api/dialogues/{did}/split", json={"split": "test"})

    opened = client.get(f"/api/dialogues/{did}").json()
    speakers = [u["speaker"] for u in opened["dialogue"]["utterances"]]
    labels = [[] for _ in speakers]
    origins = [[] for _ in speakers]
    suggested = {"nlu": 0, "pol": 0}
    version = opened["version"]
    for speaker, task in (("patient", "nlu"), ("doctor", "pol")):  # NLU first: POL reads the state
        for uid in (i for i, s in enumerate(speakers) if s == speaker):
            r = client.post(f"/api/dialogues/{did}/suggest", json={"labels": labels, "uttr_id": uid}).json()
            if r["suggestion"] is None:
                assert r["reason"], "a missing suggestion says why"
                continue
            assert r["model"] == str(runs[task])
            suggested[task] += bool(r["suggestion"])
            labels[uid], origins[uid] = r["suggestion"], ["suggested"] * len(r["suggestion"])
            saved = client.put(f"/api/dialogues/{did}", json={"version": version, "labels": labels,
                                                               "origins": origins}).json()
            version = saved["version"]
    assert suggested["nlu"] > 0 and suggested["pol"] > 0, f"no suggestion appeared: {suggested}"

    built = tmp_path / "built"
    build(BuildArguments(source=release, out=built))
    for task, recorder in (("nlu", nlu), ("pol", pol)):
        rows = [r for r in load_split(built, task, "test") if r["dialogue_id"] == did]
        seen = {r["id"]: r for r in recorder.rows}
        assert rows and set(seen) >= {r["id"] for r in rows}
        for row in rows:  # the model read exactly the dataset row's inputs
            assert json.dumps({k: seen[row["id"]][k] for k in INPUTS[task]}) == \
                json.dumps({k: row[k] for k in INPUTS[task]}), row["id"]
        # the same model, one row per generate call as the app suggests: a barely trained
        # model's near-tied logits can flip with a batch's padding
        records = [recorder.inner.predict([row])[0] for row in rows]
        column = "nlu" if task == "nlu" else "actions"
        for row, record in zip(rows, records):
            expected = record.prediction if record.parse_ok else []
            assert row[column] == expected, row["id"]
    provenance = json.loads((release / "provenance.json").read_text())[did]
    assert {o for entry in provenance.values() for o in entry["origins"]} == {"suggested"}
    assert provenance[next(iter(provenance))]["models"] == {"nlu": str(runs["nlu"]),
                                                            "pol": str(runs["pol"])}


def test_a_model_for_the_wrong_task_or_without_a_family_is_refused(runs, tiny_models):
    with pytest.raises(UsageError, match="trained for nlu, not pol"):
        load_predictor(ModelSpec(str(runs["nlu"])), "pol")
    with pytest.raises(UsageError, match="no run_info.json: pass --family .* --nlu_family"):
        load_predictor(ModelSpec(str(tiny_models / "tiny-t5")), "nlu")
