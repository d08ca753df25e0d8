"""One base for the three stages: LoRA adapters of one base share it, a multi-task run serves all.

Offline, CPU. Three `tiny-llama-lora` runs (a LoRA adapter per task on the tiny base, a few steps
each: what is checked is sharing, not learning) and one `tiny-llama-multitask` run (all weights,
trained on the three tasks' examples together until it memorises them).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers import train_args

from meditod_hub.apps.assistant import Assistant
from meditod_hub.commands import train as train_cmd
from meditod_hub.data.dataset import load_split
from meditod_hub.models.adapters import SharedModels, adapter_base
from meditod_hub.models.families import get_family
from meditod_hub.models.predictor import DecodeOptions, ModelSpec, load_predictor

pytestmark = pytest.mark.usefixtures("one_thread")
TASKS = ("nlu", "pol", "nlg")


def parameters(model, lora: bool | None = None) -> int:
    """Parameter count: all, only the LoRA ones (True) or only the base's (False)."""
    return sum(p.numel() for name, p in model.named_parameters()
               if lora is None or ("lora_" in name) == lora)


def stage_rows(data: Path, n: int = 3) -> dict[str, list[dict]]:
    return {task: load_split(data, task, "train")[:n] for task in TASKS}


def raws(predictor, rows: list[dict]) -> list[str]:
    return [r.raw for r in predictor.predict(rows)]


@pytest.mark.slow
def test_three_adapters_of_one_base_load_it_once_and_predict_as_if_loaded_apart(
        lora_runs, tiny_models, embedded_build):
    specs = {t: ModelSpec(str(lora_runs / t), decode=DecodeOptions(max_new_tokens=12))
             for t in TASKS}
    assistant = Assistant.load(specs)
    models = {id(assistant.predictors[t].model) for t in TASKS}
    assert len(models) == 1, "one base model object serves the three stages"
    assert len({id(assistant.predictors[t]._lock) for t in TASKS}) == 1, "and one lock"
    shared = assistant.predictors["nlu"].model
    assert sorted(shared.peft_config) == sorted(TASKS)
    apart = {t: load_predictor(spec, t) for t, spec in specs.items()}
    base = parameters(apart["nlu"].model, lora=False)
    adapters = sum(parameters(apart[t].model, lora=True) for t in TASKS)
    assert parameters(shared, lora=False) == base and adapters > 0
    assert parameters(shared) == base + adapters
    assert any("attached to the base loaded for nlu" in note for note in assistant.loading)

    rows = stage_rows(embedded_build)
    for task in (*TASKS, *reversed(TASKS)):  # switching back and forth changes nothing
        assert raws(assistant.predictors[task], rows[task]) == raws(apart[task], rows[task]), task
    conversation, pieces = assistant.new_conversation(), []
    turn = assistant.respond(conversation, rows["nlu"][0]["patient_text"], stream=pieces.append)
    assert "".join(pieces).strip() == turn.nlg.raw, "the streamed text is the reply's output"


@pytest.mark.slow
def test_adapters_of_different_bases_load_apart_and_say_why(lora_runs, tiny_models, tmp_path):
    other_base = tmp_path / "other-base"
    shutil.copytree(tiny_models / "tiny-llama", other_base)
    moved = tmp_path / "pol"
    shutil.copytree(lora_runs / "pol", moved)
    config = json.loads((moved / "adapter_config.json").read_text())
    (moved / "adapter_config.json").write_text(json.dumps(
        {**config, "base_model_name_or_path": str(other_base)}))
    assert adapter_base(moved, False) != adapter_base(lora_runs / "nlu", False)
    assert adapter_base(lora_runs / "nlu", False) != adapter_base(lora_runs / "nlu", True)

    models, family = SharedModels(), get_family("chat")
    nlu = models.load(lora_runs / "nlu", family, False, "nlu")
    pol = models.load(moved, family, False, "pol")
    nlg = models.load(lora_runs / "nlg", family, False, "nlg")
    assert pol.model is not nlu.model and nlg.model is nlu.model and models.base_models == 2
    assert "not shared with nlu's" in models.notes[1] and "another base" in models.notes[1]


@pytest.fixture(scope="module")
def multitask_run(tiny_models, embedded_build, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("multitask") / "run"
    train_cmd.main(train_args("tiny-llama-multitask/multitask.yaml", embedded_build,
                              tiny_models / "tiny-llama", out, "--save_strategy=no", "--logging_steps=50"))
    return out


@pytest.mark.slow
def test_a_multitask_run_learns_the_three_tasks_and_serves_every_stage(multitask_run,
                                                                       embedded_build):
    from meditod_hub.commands.evaluate import main as evaluate
    from meditod_hub.commands.predict import main as predict

    info = json.loads((multitask_run / "run_info.json").read_text())
    assert (info["task"], info["tasks"]) == ("multitask", list(TASKS))
    counts = {t: len(load_split(embedded_build, t, "train")) for t in TASKS}
    assert info["train_examples"] == sum(counts.values()) and info["skipped_examples"] == 0
    scores = {}
    for task in TASKS:  # the same commands as a single-task run
        predictions = multitask_run / "eval" / task / "predictions.jsonl"
        predict(["--model_path", str(multitask_run), "--task", task, "--data",
                 str(embedded_build), "--split", "train", "--out", str(predictions)])
        results = predictions.with_name("results.json")
        evaluate(["--task", task, "--data", str(embedded_build), "--split", "train",
                  "--predictions", str(predictions), "--out", str(results)])
        scores[task] = json.loads(results.read_text())
    assert scores["nlu"]["f1"] > 0.9 and scores["pol"]["f1"] > 0.9, scores
    assert scores["nlg"]["bleu4"] > 50, scores["nlg"]["bleu4"]

    assistant = Assistant.load({t: ModelSpec(str(multitask_run)) for t in TASKS})
    assert len({id(assistant.predictors[t].model) for t in TASKS}) == 1
    assert assistant.loading[1:] == ("pol: the same model as nlu (one folder, loaded once)",
                                     "nlg: the same model as nlu (one folder, loaded once)")
    rows = load_split(embedded_build, "nlu", "train")
    turn = assistant.respond(assistant.new_conversation(), rows[0]["patient_text"])
    assert turn.nlu.parse_ok and turn.pol.parse_ok and turn.reply


def test_the_served_layout_one_endpoint_three_model_names(tmp_path):
    """vLLM's multi-LoRA layout: each stage's prompts go to its own name at one endpoint."""
    from chat_server import ChatServer, answer_for

    from meditod_hub.models.cascade import pipeline_arguments, stages
    from meditod_hub.models.runs import write_run_files

    for task in TASKS:  # the runs give family and budgets; the weights are the server's
        write_run_files(tmp_path / task, {"model": "m", "task": task, "family": "chat",
                                          "base_model": "b", "adapter": True}, {})
        (tmp_path / task / "adapter_config.json").write_text(
            json.dumps({"base_model_name_or_path": "b"}))  # an adapter run, weights not needed
    with ChatServer(models=["meditod-nlu", "meditod-pol", "meditod-nlg"]) as server:
        pipeline = pipeline_arguments(stages())(
            *(str(tmp_path / t) for t in TASKS), endpoint=server.url,
            served_models="meditod-nlu,meditod-pol,meditod-nlg")
        assistant = Assistant.load(pipeline.specs())
        turn = assistant.respond(assistant.new_conversation(), "I have had a cough for a week.")
    assert [body["model"] for body in server.received] == ["meditod-nlu", "meditod-pol",
                                                          "meditod-nlg"]
    systems = [body["messages"][0]["content"] for body in server.received]
    assert len(set(systems)) == 3, "each stage sends its own task's prompt"
    assert turn.reply == answer_for(server.received[-1])
    assert not turn.nlu.parse_ok and "NLU output unusable" in turn.notes[0]
