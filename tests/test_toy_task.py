"""A fourth task is one file (tests/toy_task.py: findings by polarity, a structured label with its
own view and CMAS language) plus the registry's line (`register`): the kit's build, formats,
grammars, harness export, scoring, cascade, eval-cascade and assistant then take it like the
paper's three, reading its fields; nothing here wires it in. No network. The predictors are
scripted, except a random tiny model decoding under the toy's grammar."""

from __future__ import annotations

import dataclasses
import json

import pytest
import toy_task
from helpers import Scripted, ScriptedPredictor, invented_dialogue, write_release

from meditod_hub.apps.assistant import Assistant
from meditod_hub.data.build import BuildArguments, build
from meditod_hub.data.dataset import load_split
from meditod_hub.data.tasks import TASKS, features, register, view_rows
from meditod_hub.errors import UsageError
from meditod_hub.evaluation.eval_cascade import EvalCascadeArguments, evaluate_cascade, summary
from meditod_hub.evaluation.fewshot import prompts
from meditod_hub.evaluation.harness import export, scoring
from meditod_hub.models.cascade import Pipeline, cascade, pipeline_arguments, stages
from meditod_hub.models.constrained import grammars, processor
from meditod_hub.models.families import FAMILIES, Budget
from meditod_hub.models.formats import chat
from meditod_hub.models.predictor import DecodeOptions, LocalPredictor

DIALOGUE = invented_dialogue()
WHEEZING = [{"polarity": "positive", "symptom": [{"value": "wheezing"}]}]
NO_FEVER = [{"polarity": "negative", "symptom": [{"value": "fever"}]}]
NLU = {"nlu": [{"intent": "inform", "slots": {"positive_symptom": [{"value": "wheezing"}]}}],
       "pol": [{"action": "inquire", "symptom": [{"value": "fever"}]}], "nlg": "Any fever?"}


@pytest.fixture
def toy():
    task = register(toy_task.TASK)
    yield task
    del TASKS[task.name]


@pytest.fixture
def toy_build(toy, tmp_path):
    """Three invented dialogues built by the build (`meditod build`) with the toy registered."""
    out = tmp_path / "built"
    build(BuildArguments(source=write_release(tmp_path / "release"), out=out))
    return out


def scripted_pipeline(answer_toy, cls=Pipeline):
    """Every stage scripted: the paper's three answer NLU, POL, NLG; the toy `answer_toy(row)`."""
    script = Scripted(lambda task, row: (NLU[task], True) if task in NLU else answer_toy(row))
    return cls({task.name: ScriptedPredictor(script, task.name) for task in stages()}), script


def test_the_toy_task_has_its_own_view_and_features(toy):
    rows = view_rows(toy.name, "1", DIALOGUE)
    assert [row[toy.target_column] for row in rows] == [WHEEZING, NO_FEVER]
    assert [row["id"] for row in rows] == [row["id"] for row in view_rows("nlu", "1", DIALOGUE)]
    assert [row["state"] for row in rows] == [{}, view_rows("nlu", "1", DIALOGUE)[0]["state"]]
    assert set(features(toy.name)) == set(rows[0])


def test_the_build_writes_the_toy_config(toy_build, toy):
    built = load_split(toy_build, toy.name, "train")
    assert built == view_rows(toy.name, "1", invented_dialogue())
    infos = json.loads((toy_build / "dataset_infos.json").read_text())
    assert infos[toy.name]["features"] == toy.features
    assert f"config_name: {toy.name}" in (toy_build / "README.md").read_text()


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_family_formats_the_toy_task_and_parses_it_back(toy, family):
    """The chat family's messages and answer, a span family's input and target (Flan-T5,
    BioGPT, PPTOD), each parsed back to the label by the family's own parser."""
    row = view_rows(toy.name, "1", DIALOGUE)[1]
    fam = FAMILIES[family]
    if family == "chat":
        messages = chat.messages(toy, row)
        assert messages[0]["content"] == toy.system_message
        assert messages[1]["content"].startswith(toy.reads.chat_block)
        text = messages[2]["content"]
    else:
        parts = fam.source_parts(toy, row)
        assert parts.prefix in (toy.authors_prefix, toy.pptod_prefix)
        assert "[positive_symptom] ( value=wheezing" in parts.body  # the state it reads
        text = fam.target_text(toy, row)
    assert fam.parse(toy, text).value == NO_FEVER


def test_the_in_context_prompt_reads_the_toy_task_s_definitions(toy):
    row = view_rows(toy.name, "1", DIALOGUE)[1]
    system = prompts.system_prompt(toy)
    assert system.startswith(toy.fewshot_header) and '"name": "negative"' in system
    answer = prompts.exemplar_answer(toy, row)
    assert prompts.parse_answer(toy, answer).value == NO_FEVER


TINY = {"chat": "tiny-llama", "span": "tiny-t5", "pptod": "tiny-pptod", "fewshot": "tiny-llama"}


def accepts(tokenizer, grammar: str, text: str) -> bool:
    xgr = pytest.importorskip("xgrammar")
    info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=len(tokenizer))
    matcher = xgr.GrammarMatcher(xgr.GrammarCompiler(info).compile_grammar(grammar))
    return matcher.accept_string(text) and matcher.is_completed()


@pytest.mark.parametrize("fmt", grammars.FORMATS)
def test_the_toy_grammar_is_written_from_its_language(tiny_models, toy, fmt):
    """Each format's grammar holds the toy's gold answer and refuses a polarity or slot outside
    its language."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_models / TINY[fmt])
    row = view_rows(toy.name, "1", DIALOGUE)[1]
    family = {"chat": "chat", "span": "flan-t5", "pptod": "pptod"}.get(fmt)
    gold = prompts.exemplar_answer(toy, row) if fmt == "fewshot" else \
        chat.answer(toy, row) if fmt == "chat" else FAMILIES[family].target_text(toy, row)
    grammar = processor.constraint(fmt, toy).grammar
    assert accepts(tokenizer, grammar, gold), gold
    for wrong in (gold.replace("negative", "denied"), gold.replace("symptom", "mood")):
        assert not accepts(tokenizer, grammar, wrong), wrong
    if fmt == "fewshot":
        assert grammars.json_schema(toy)["items"]["properties"]["polarity"] == {
            "enum": ["positive", "negative", "unknown"]}


def test_a_random_model_decodes_the_toy_task_under_its_grammar(tiny_models, toy):
    """Constrained, a random tiny Llama's every answer parses and is a usable findings label."""
    pytest.importorskip("xgrammar")
    from transformers import AutoTokenizer

    fam, path = FAMILIES["chat"], tiny_models / "tiny-llama"
    model, tokenizer = fam.auto_model().from_pretrained(path), AutoTokenizer.from_pretrained(path)
    rows = view_rows(toy.name, "1", DIALOGUE)
    records = LocalPredictor(model, tokenizer, fam, toy, Budget(None, 48),
                             DecodeOptions(2, constrained=True)).predict(rows)
    assert all(r.parse_ok and r.constrained for r in records), [r.reason for r in records]
    assert all(toy.label_errors(r.prediction) == [] for r in records)


def test_the_harness_exports_the_toy_task(toy_build, toy, tmp_path):
    """The fine-tuned harness task: its YAML, its rows, its system message; the raw answers a
    harness hands back score through the kit as `Task.score` does."""
    written = export.write(tmp_path / "harness", str(toy_build), ["test"], settings=("ft",))
    name = export.task_name(toy.name, "test", "ft")
    assert name in written.tasks["ft"]
    task_yaml = (tmp_path / "harness" / "lm_eval" / f"{name}.yaml").read_text()
    assert f"process_results: !function utils.{scoring.process_name('ft', toy.name)}" in task_yaml
    assert "metric: exact_match" in task_yaml
    rows = load_split(toy_build, toy.name, "test")
    docs = [json.loads(line) for line in
            (tmp_path / "harness" / "data" / f"{toy.name}-test.jsonl").read_text().splitlines()]
    assert [doc["id"] for doc in docs] == [row["id"] for row in rows]
    assert (tmp_path / "harness" / "lighteval" / f"{toy.name}_ft.system.txt").read_text() == \
        toy.system_message
    answers = [chat.answer(toy, row) for row in rows]
    assert scoring.score("ft", toy.name, rows, answers)["f1"] == 1.0


def test_the_toy_task_scores_itself(toy):
    rows = view_rows(toy.name, "1", DIALOGUE)
    results = toy.score(rows, [[{"polarity": "positive", "symptom": [{"value": "wheezing"},
                                                                      {"value": "cough"}]}], None])
    assert results == {"precision": 0.5, "recall": 0.5, "f1": 0.5, "tp": 1, "fp": 1, "fn": 1,
                       "exact_match": 0.0, "examples": 2, "parse_failures": 1}


def test_the_cascade_builds_the_toy_task_s_state_from_predicted_nlu(toy):
    assert [task.name for task in stages()] == ["nlu", "pol", toy.name, "nlg"]
    pipeline, script = scripted_pipeline(lambda row: (WHEEZING, True))
    rows = {name: view_rows(name, "1", DIALOGUE) for name in TASKS}
    run = cascade(pipeline, rows, gold_inputs=False)
    assert [r.label for r in run[toy].cascaded] == [WHEEZING, WHEEZING]
    # its second row's state is folded from NLU's predicted label of the first patient line
    assert run[toy].rows[1]["state"] == {"positive_symptom": [{"value": "wheezing"}]}
    assert [task for task, _ in script.seen].count(toy.name) == 2


def test_eval_cascade_scores_the_toy_task_on_both_inputs(toy_build, toy, tmp_path):
    pipeline, _ = scripted_pipeline(lambda row: (row[toy.target_column], True))
    flags = pipeline_arguments(stages())(**{task.name: f"scripted/{task.name}" for task in stages()})
    args = EvalCascadeArguments(data=str(toy_build), split="train", out=str(tmp_path / "out"))
    results = evaluate_cascade(flags, args, pipeline)
    assert results[toy.name]["gold_input"]["f1"] == 1.0  # it answers its rows' gold label
    assert results["attribution"][f"{toy.name}_rows"] == 2
    assert f"{toy.display_name} F1 1.0000 -> " in summary(results)
    assert (tmp_path / "out" / "predictions" / f"{toy.name}.cascaded.jsonl").is_file()
    assert f"| {toy.display_name} | Exact match |" in (tmp_path / "out" / "results.md").read_text()


def test_the_assistant_runs_the_toy_stage_and_still_says_nlg_s_reply(toy):
    assistant, _ = scripted_pipeline(lambda row: (NO_FEVER, True), cls=Assistant)
    turn = assistant.respond(assistant.new_conversation(), "No fever.")
    assert turn.findings.value == NO_FEVER and turn.findings.used
    assert turn.reply == "Any fever?"
    assert [task.name for task, _ in turn.stages()] == ["nlu", "pol", toy.name, "nlg"]

    assistant, _ = scripted_pipeline(lambda row: ([{"polarity": "maybe"}], True), cls=Assistant)
    turn = assistant.respond(assistant.new_conversation(), "No fever.")
    assert not turn.findings.used and turn.reply == "Any fever?"
    assert any(note.startswith(f"{toy.display_name} output unusable") for note in turn.notes)


def test_a_pipeline_takes_the_toy_task_as_a_stage(toy):
    """Its flags come from the stages; a pipeline without its predictor is refused."""
    arguments = pipeline_arguments(stages())
    flags = [f.name for f in dataclasses.fields(arguments)]
    assert flags[:12] == [f"{task}{suffix}" for suffix in ("", "_revision", "_family")
                          for task in ("nlu", "pol", toy.name, "nlg")]
    models = arguments("n", "p", "f", "g")
    assert models.sources() == {"nlu": "n", "pol": "p", toy.name: "f", "nlg": "g"}
    assert [spec.source for spec in models.specs(constrained=False).values()] == ["n", "p", "f", "g"]
    assert models.served_models == f"nlu,pol,{toy.name},nlg"
    with pytest.raises(UsageError, match=r"give four names \(NLU,POL,FINDINGS,NLG\)"):
        arguments("n", "p", "f", "g", served_models="a,b,c").specs()
    script = Scripted(lambda task, row: ([], True))
    with pytest.raises(ValueError, match=f"no predictor for the stage\\(s\\) {toy.name}"):
        Pipeline({name: ScriptedPredictor(script, name) for name in ("nlu", "pol", "nlg")})


def test_a_task_registers_after_its_upstream():
    orphan = dataclasses.replace(toy_task.TASK, upstream="nowhere")
    with pytest.raises(ValueError, match="register its upstream 'nowhere' first"):
        register(orphan)
    assert toy_task.TASK.name not in TASKS
