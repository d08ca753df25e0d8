"""Inference: the predictions-file contract, adapters, batching, stop tokens. Offline, CPU, tiny
random-weight models from `meditod_hub.models.tiny` (outputs are mostly unparsable: exactly what the
parse-failure accounting must survive)."""

from __future__ import annotations

import json

import pytest
from datasets import load_dataset
from helpers import rows

from meditod_hub.commands import predict as predict_cmd
from meditod_hub.data.tasks import TASKS
from meditod_hub.errors import run_main
from meditod_hub.models import loading
from meditod_hub.models import predictor as R
from meditod_hub.models.families import FAMILIES
from meditod_hub.models.records import read_predictions

pytestmark = pytest.mark.usefixtures("one_thread")



def test_predictions_file_follows_the_evaluation_contract(tiny_models, embedded_build, tmp_path,
                                                          capsys):
    from meditod_hub.commands.evaluate import main as evaluate

    out = tmp_path / "eval" / "test" / "predictions.jsonl"
    predict_cmd.main(["--model_path", str(tiny_models / "tiny-llama"), "--family", "chat", "--task", "pol",
                      "--data", str(embedded_build), "--split", "test", "--out", str(out),
                      "--max_new_tokens", "12"])
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in lines] == [r["id"] for r in rows(embedded_build, "pol", "test")]
    assert all(set(r) == {"id", "prediction", "raw", "parse_ok", "constrained"} for r in lines)
    assert not any(r["constrained"] for r in lines), "the paper's setting by default"
    assert all(isinstance(r["prediction"], list) and isinstance(r["raw"], str) for r in lines)
    failed = sum(not r["parse_ok"] for r in lines)
    assert failed > 0, "12 tokens from a random model cannot close the answer"
    assert f"{len(lines)} predictions, {failed} did not parse" in capsys.readouterr().err
    assert len(read_predictions(out)) == len(lines)
    assert run_main(evaluate, ["--task", "pol", "--data", str(embedded_build), "--split", "test",
                               "--predictions", str(out), "--out", str(out.parent / "results.json")]) == 0


def test_a_run_directory_supplies_family_task_and_budgets(tiny_models, embedded_build, tmp_path,
                                                          capsys):
    """The budget is the one run_info.json recorded at training, not the recipe's keys."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(tiny_models / "tiny-t5", run)
    (run / "run_info.json").write_text(json.dumps({
        "family": "flan-t5", "task": "nlg", "quantization": None,
        "budget": {"max_length": 40, "max_new_tokens": 5}}))
    (run / "recipe.yaml").write_text("max_source_length: 512\nmax_new_tokens: 512\n")
    out = tmp_path / "p.jsonl"
    predict_cmd.main(["--model_path", str(run), "--task", "nlg", "--data", str(embedded_build),
                      "--split", "validation", "--out", str(out)])
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == len(rows(embedded_build, "nlg", "validation"))
    assert all(isinstance(r["prediction"], str) for r in lines)
    assert " x input does not fit: example " in capsys.readouterr().err, "40 tokens are too few"
    assert run_main(predict_cmd.main, ["--model_path", str(run), "--task", "nlu", "--data",
                                       str(embedded_build), "--out", str(out)]) == 2  # trained for nlg
    assert "was trained for nlg, not nlu" in capsys.readouterr().err


@pytest.mark.parametrize("name,family", [("tiny-llama", "chat"), ("tiny-t5", "flan-t5")])
def test_an_adapter_brings_its_base_model(tiny_models, tmp_path, name, family):
    from peft import LoraConfig, PeftModel, get_peft_model
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

    auto = AutoModelForCausalLM if family == "chat" else AutoModelForSeq2SeqLM
    base = auto.from_pretrained(tiny_models / name)
    task_type = "CAUSAL_LM" if family == "chat" else "SEQ_2_SEQ_LM"
    adapter = get_peft_model(base, LoraConfig(r=4, task_type=task_type,
                                              target_modules=["q_proj", "v_proj"]
                                              if family == "chat" else ["q", "v"]))
    adapter.save_pretrained(tmp_path / "adapter")
    AutoTokenizer.from_pretrained(tiny_models / name).save_pretrained(tmp_path / "adapter")
    model, tokenizer = loading.load_model(str(tmp_path / "adapter"), FAMILIES[family])
    assert isinstance(model, PeftModel)
    assert model.peft_config["default"].base_model_name_or_path == str(tiny_models / name)
    assert tokenizer.pad_token_id is not None


def test_a_4bit_run_is_served_on_a_4bit_base(tiny_models):
    model, _ = loading.load_model(str(tiny_models / "tiny-llama"), FAMILIES["chat"], load_in_4bit=True)
    assert getattr(model, "is_loaded_in_4bit", False)


@pytest.mark.parametrize("name,family,task", [("tiny-llama", "chat", "nlu"),
                                              ("tiny-biogpt", "biogpt", "pol"),
                                              ("tiny-pptod", "pptod", "nlg")])
def test_batched_generation_equals_one_example_at_a_time(tiny_models, embedded_build, name,
                                                         family, task):
    """Left padding (decoders) and the length sort must not change any greedy output."""
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

    auto = AutoModelForSeq2SeqLM if family == "pptod" else AutoModelForCausalLM
    model = auto.from_pretrained(tiny_models / name)
    tok = AutoTokenizer.from_pretrained(tiny_models / name)
    family = FAMILIES[family]
    prompts = [family.prompt(TASKS[task], r, tok, family.default_budget).input_ids
               for r in rows(embedded_build, task, "test")]
    assert len({len(p) for p in prompts}) > 1
    stops = family.stop_token_ids(tok)
    batched = R.generate_texts(model, tok, prompts, 10, stops, batch_size=16)
    single = R.generate_texts(model, tok, prompts, 10, stops, batch_size=1)
    assert batched == single
    assert any(batched)


def test_stop_tokens_are_eos_and_the_chat_end_of_turn(tiny_models):
    from transformers import AutoTokenizer

    llama = AutoTokenizer.from_pretrained(tiny_models / "tiny-llama")
    assert set(FAMILIES["chat"].stop_token_ids(llama)) == {llama.convert_tokens_to_ids("<|eot_id|>")}
    t5 = AutoTokenizer.from_pretrained(tiny_models / "tiny-t5")
    assert FAMILIES["flan-t5"].stop_token_ids(t5) == [t5.eos_token_id]


def test_outputs_parse_with_their_familys_parser():
    assert FAMILIES["chat"].parse("nlu", '[answer] [{"intent": "chit-chat"}] [done]').ok
    assert FAMILIES["flan-t5"].parse("nlu", "@chit-chat@").value == [{"intent": "chit-chat"}]
    assert FAMILIES["biogpt"].parse("pol", "@ inquire @").value == [{"action": "inquire"}]
    broken = FAMILIES["pptod"].parse("nlu", "<sos_b> @inform@ [positive_symptom] ( value")
    assert not broken.ok and broken.reason


def test_cascade_rows_from_gold_upstream_equal_gold_inputs(embedded_build, tmp_path):
    """--upstream with gold NLU (for pol) or gold actions (for nlg) reproduces the gold rows."""
    import json as _json

    from meditod_hub.commands.predict import cascade_rows

    nlu = load_dataset(str(embedded_build), "nlu", split="test")
    pol = list(load_dataset(str(embedded_build), "pol", split="test"))
    nlg = list(load_dataset(str(embedded_build), "nlg", split="test"))
    nlu_file, pol_file = tmp_path / "nlu.jsonl", tmp_path / "pol.jsonl"
    nlu_file.write_text("".join(_json.dumps({"id": r["id"], "prediction": r["nlu"]}) + "\n" for r in nlu))
    pol_file.write_text("".join(_json.dumps({"id": r["id"], "prediction": r["actions"]}) + "\n" for r in pol))
    assert [r["state"] for r in cascade_rows(TASKS["pol"], pol, nlu_file)] == [r["state"] for r in pol]
    assert [r["actions"] for r in cascade_rows(TASKS["nlg"], nlg, pol_file)] == [r["actions"] for r in nlg]
    nlu_file.write_text("".join(_json.dumps({"id": r["id"], "prediction": []}) + "\n" for r in nlu))
    assert all(r["state"] == {} for r in cascade_rows(TASKS["pol"], pol, nlu_file))


def test_a_run_predicts_on_its_own_data_into_a_folder(tiny_runs, embedded_build, tmp_path, capsys):
    """`--data` defaults to the dataset the run was trained on (said), `--out` is a folder as
    Make's OUT, and --constrained gets its own file name there."""
    run = tiny_runs / "nlu"
    assert run_main(predict_cmd.main, ["--model_path", str(run), "--task", "nlu", "--limit", "2",
                                       "--out", str(tmp_path)]) == 0
    assert "(what the model was trained on)" in capsys.readouterr().err
    assert len(read_predictions(tmp_path / "predictions.jsonl")) == 2
    assert run_main(predict_cmd.main, ["--model_path", str(run), "--task", "nlu", "--limit", "1",
                                       "--out", str(tmp_path), "--constrained"]) == 0
    assert len(read_predictions(tmp_path / "predictions-constrained.jsonl")) == 1
    assert run_main(predict_cmd.main, ["--model_path", str(run), "--task", "nlu", "--limit", "1",
                                       "--out", str(tmp_path), "--data", str(tmp_path / "nope")]) != 0
    assert run_main(predict_cmd.main, ["--model_path", "org/some-model", "--task", "nlu"]) != 0
    assert "--out: give the folder for the predictions" in capsys.readouterr().err
