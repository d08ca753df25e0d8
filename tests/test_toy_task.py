"""A fourth task is one file (tests/toy_task.py) plus the registry's line (`register`): the
kit's view, formats, few-shot prompt, scoring, cascade and pipeline (its flags and predictors,
made from the stages) then take it like the paper's three, reading its fields. No network, no
model: the cascade's predictors are scripted."""

from __future__ import annotations

import dataclasses

import pytest
import toy_task
from helpers import Scripted, ScriptedPredictor, invented_dialogue

from meditod_hub.data.tasks import TASKS, features, get_task, register, view_rows
from meditod_hub.errors import UsageError
from meditod_hub.evaluation.fewshot import prompts
from meditod_hub.models.cascade import Pipeline, cascade, pipeline_arguments, stages
from meditod_hub.models.formats import chat
from meditod_hub.models.formats.span_models import PPTOD_STYLE, T5_STYLE, source_parts

DIALOGUE = invented_dialogue()


@pytest.fixture
def toy():
    task = register(toy_task.TASK)
    yield task
    del TASKS[task.name]


def test_the_toy_task_has_a_view_and_features(toy):
    rows = view_rows(toy.name, "1", DIALOGUE)
    assert [row["length"] for row in rows] == ["short", "long"]
    assert [row["id"] for row in rows] == [row["id"] for row in view_rows("nlg", "1", DIALOGUE)]
    assert set(features(toy.name)) == set(rows[0])


def test_the_formats_and_prompt_read_the_toy_task_s_fields(toy):
    row = view_rows(toy.name, "1", DIALOGUE)[0]
    messages = chat.messages(toy, row)
    assert messages[0]["content"] == toy.system_message
    assert "[action]" in messages[1]["content"]  # what it reads beside the dialogue
    assert chat.parse_answer(toy, messages[2]["content"]).value == "short"
    assert source_parts(T5_STYLE, toy, row).prefix == toy.authors_prefix
    assert source_parts(PPTOD_STYLE, toy, row).prefix == toy.pptod_prefix
    assert prompts.system_prompt(toy.name).startswith(toy.fewshot_header)


def test_the_toy_task_scores_itself(toy):
    rows = view_rows(toy.name, "1", DIALOGUE)
    results = get_task(toy.name).score(rows, ["short", None])
    assert results == {"accuracy": 0.5, "examples": 2, "parse_failures": 1}


def test_the_cascade_walks_to_the_toy_task_after_its_upstream(toy):
    assert [task.name for task in stages()] == ["nlu", "pol", "nlg", toy.name]

    def answer(task, row):
        if task == "pol":
            return [{"action": "chit-chat"}], True
        return ([], True) if task == "nlu" else ("short", True)

    script = Scripted(answer)
    pipeline = Pipeline({task.name: ScriptedPredictor(script, task.name) for task in stages()})
    rows = {name: view_rows(name, "1", DIALOGUE) for name in TASKS}
    run = cascade(pipeline, rows, gold_inputs=False)
    assert [r.label for r in run[toy].cascaded] == ["short", "short"]
    # its rows were built from POL's predicted actions, as NLG's are
    assert [row["actions"] for row in run[toy].rows] == [[{"action": "chit-chat"}]] * 2
    assert [task for task, _ in script.seen][-2:] == [toy.name, toy.name]


def test_a_pipeline_takes_the_toy_task_as_a_stage(toy):
    """Its flags come from the stages; a pipeline without its predictor is refused."""
    arguments = pipeline_arguments(stages())
    flags = [f.name for f in dataclasses.fields(arguments)]
    assert flags[:12] == [f"{task}{suffix}" for suffix in ("", "_revision", "_family")
                          for task in ("nlu", "pol", "nlg", toy.name)]
    models = arguments("n", "p", "g", "l")
    assert models.sources() == {"nlu": "n", "pol": "p", "nlg": "g", toy.name: "l"}
    assert [spec.source for spec in models.specs(constrained=False).values()] == ["n", "p", "g", "l"]
    assert models.served_models == f"nlu,pol,nlg,{toy.name}"
    with pytest.raises(UsageError, match=r"give four names \(NLU,POL,NLG,LENGTH\)"):
        arguments("n", "p", "g", "l", served_models="a,b,c").specs()
    script = Scripted(lambda task, row: ([], True))
    with pytest.raises(ValueError, match=f"no predictor for the stage\\(s\\) {toy.name}"):
        Pipeline({name: ScriptedPredictor(script, name) for name in ("nlu", "pol", "nlg")})


def test_a_task_registers_after_its_upstream():
    orphan = toy_task.TASK.__class__(**{**toy_task.TASK.__dict__, "upstream": "nowhere"})
    with pytest.raises(ValueError, match="register its upstream 'nowhere' first"):
        register(orphan)
    assert "length" not in TASKS
