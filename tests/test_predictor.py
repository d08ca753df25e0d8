"""One Predictor: the same run gives the same predictions through every command that reaches it,
with the token budget its training resolved and recorded. Offline, CPU; the tiny runs trained
on the embedded synthetic sample (`tiny_runs`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from meditod_hub.commands import train as train_cmd
from meditod_hub.models.families import FAMILIES, Budget
from meditod_hub.models.predictor import DecodeOptions, ModelSpec, load_predictor
from meditod_hub.models.runs import RUN_INFO, budget_record, run_budget

pytestmark = pytest.mark.usefixtures("one_thread")
TASKS = ("nlu", "pol", "nlg")
DIALOGUES = ("9001", "9002")  # memorised training dialogues: their outputs parse


# --- the budget: resolved once at training, read back by every reader ------------------------
def recipe_file(tmp_path: Path, family: str, **keys) -> Path:
    settings = {"task": "nlu", "family": family, "model": "x", "model_name_or_path": "x",
                "output_dir": str(tmp_path / "run"), **keys}
    path = tmp_path / "recipe.yaml"
    path.write_text("".join(f"{k}: {v}\n" for k, v in settings.items()))
    return path


@pytest.mark.parametrize("family,keys,expected", [
    ("biogpt", {}, FAMILIES["biogpt"].default_budget),  # no trainer default leaks in (1024, 500)
    ("biogpt", {"max_length": 256, "max_new_tokens": 64}, Budget(256, 64)),
    ("flan-t5", {}, FAMILIES["flan-t5"].default_budget),
    ("flan-t5", {"max_source_length": 300}, Budget(300, 512)),
    ("chat", {"max_new_tokens": 99}, Budget(None, 99)),
])
def test_training_resolves_the_budget_that_prediction_reads_back(tmp_path, family, keys, expected):
    recipe = train_cmd.parse_recipe([str(recipe_file(tmp_path, family, **keys))])
    assert recipe.budget == expected
    info = {"family": family, "budget": budget_record(recipe.budget)}
    # a recipe that says otherwise beside the run does not change what prediction uses
    assert run_budget(json.loads(json.dumps(info)), {"max_new_tokens": 7}, FAMILIES[family]) \
        == expected


def test_a_trained_run_predicts_with_the_budget_it_recorded(tiny_runs):
    info = json.loads((tiny_runs / "nlu" / RUN_INFO).read_text())
    assert info["budget"] == {"max_length": 1024, "max_new_tokens": 256}  # recipes/tiny-llama
    source = str(tiny_runs / "nlu")
    assert load_predictor(ModelSpec(source), "nlu").budget == Budget(1024, 256)
    overridden = ModelSpec(source, decode=DecodeOptions(max_new_tokens=7))
    assert load_predictor(overridden, "nlu").budget == Budget(1024, 7)


# --- one run, the same predictions through predict, eval-cascade, the assistant, the portal -----
def records(path: Path) -> dict[str, dict]:
    return {r["id"]: r for r in map(json.loads, path.read_text().splitlines())}


def as_dicts(predictions) -> dict[str, dict]:
    return {p.id: json.loads(json.dumps(p.as_json())) for p in predictions}


@pytest.mark.slow
def test_one_run_predicts_the_same_through_every_command(tiny_runs, embedded_build,
                                                         embedded_release, tmp_path):
    from meditod_hub.apps.annotate.serve import AnnotateArguments, build_settings
    from meditod_hub.apps.assistant import Assistant
    from meditod_hub.commands.eval_cascade import main as eval_cascade
    from meditod_hub.commands.predict import main as predict
    from meditod_hub.data.dataset import load_split

    rows = {task: [r for r in load_split(embedded_build, task, "train")
                   if r["dialogue_id"] in DIALOGUES] for task in TASKS}
    assert all(len({r["dialogue_id"] for r in rows[t]}) == 2 for t in TASKS)
    runs = {task: str(tiny_runs / task) for task in TASKS}

    predicted = {}
    for task in TASKS:  # gold inputs; the first rows of the split are these dialogues'
        out = tmp_path / "predict" / f"{task}.jsonl"
        assert predict(["--model_path", runs[task], "--task", task, "--data",
                        str(embedded_build), "--split", "train", "--limit",
                        str(len(rows[task])), "--out", str(out)]) == 0
        predicted[task] = records(out)
        assert set(predicted[task]) == {r["id"] for r in rows[task]}
    assert all(r["parse_ok"] for task in ("nlu", "pol") for r in predicted[task].values()), \
        "memorised dialogues parse, so the comparisons below compare labels"

    cascade = tmp_path / "cascade"
    assert eval_cascade(["--nlu", runs["nlu"], "--pol", runs["pol"], "--nlg", runs["nlg"],
                         "--data", str(embedded_build), "--split", "train", "--limit", "2",
                         "--out", str(cascade)]) == 0
    assert records(cascade / "predictions" / "nlu.jsonl") == predicted["nlu"]
    for task in ("pol", "nlg"):
        assert records(cascade / "predictions" / f"{task}.gold_input.jsonl") == predicted[task]

    assistant = Assistant.load({task: ModelSpec(runs[task]) for task in TASKS})
    for task in TASKS:
        assert as_dicts(assistant.run_stage(task, rows[task])[0]) == predicted[task]

    # the portal suggests one utterance at a time, from the release's own dialogues
    suggestions = build_settings(AnnotateArguments(
        source=str(tmp_path / "release"), nlu_model=runs["nlu"], pol_model=runs["pol"])).assistant
    dialogues = json.loads((embedded_release / "dialogs.json").read_text())
    compared = 0
    for dialogue_id in DIALOGUES:
        for uttr_id, _ in enumerate(dialogues[dialogue_id]["utterances"]):
            row_id = f"{dialogue_id}-{uttr_id}"
            task = next((t for t in ("nlu", "pol") if row_id in predicted[t]), None)
            found = suggestions.suggest(dialogue_id, dialogues[dialogue_id], uttr_id)
            if task is None:  # the opening doctor line: no model input
                assert found.label is None and found.reason
                continue
            expected = predicted[task][row_id]
            assert (found.label, found.parse_ok) == (expected["prediction"], expected["parse_ok"])
            compared += 1
    assert compared == len(rows["nlu"]) + len(rows["pol"])


# --- streaming: the answer, never the format's markers ------------------------------------------
@pytest.mark.parametrize("family,pieces,shown", [
    ("chat", ["[answer]", " Any", " fever?", " [done]", " [answer] junk"], "Any fever?"),
    ("biogpt", ["Any", " fever?"], "Any fever?"),
])
def test_a_streamed_reply_shows_the_answer_as_the_parser_reads_it(family, pieces, shown):
    from meditod_hub.data.tasks import TASKS
    from meditod_hub.models.predictor import Predictor

    class Streaming(Predictor):
        def generate(self, rows, progress, stream=None):
            for piece in pieces:
                stream(piece)
            return {0: "".join(pieces)}, {}

    seen = []
    predictor = Streaming(FAMILIES[family], TASKS["nlg"], Budget(None, 8))
    [record] = predictor.predict([{"id": "d-1"}], stream=seen.append)
    assert "".join(seen) == shown == record.prediction
    assert len(seen) >= 2, "pieces arrive as they are generated, not at the end"
