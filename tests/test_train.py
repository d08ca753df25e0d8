"""Training entry point on tiny local models: data fitting, batching, QLoRA, resume, DDP, learning.

Offline, CPU only: models come from `meditod_hub.models.tiny` (random weights, tokenizers trained on the
embedded synthetic sample), data from `data/sample` built with `meditod.py build`. Training runs
in-process with one torch thread: on a shared 2-core machine two threads spin against other
processes and run ~2x slower (no speed is asserted anywhere).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from helpers import RECIPES, rows, train_args
from safetensors.torch import load_file

from meditod_hub.commands import train as train_cmd
from meditod_hub.data.tasks import TASKS
from meditod_hub.errors import UsageError
from meditod_hub.models import encoding, padding, trl_patch, validation
from meditod_hub.models.families import FAMILIES, Budget

PROJECT = Path(__file__).resolve().parent.parent


pytestmark = pytest.mark.usefixtures("one_thread")



def tokenizer_of(tiny_models: Path, name: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_models / name)


def run_info(out: Path) -> dict:
    return json.loads((out / "run_info.json").read_text())


# --- fitting: nothing is cut or dropped without a count --------------------------------------
@pytest.mark.parametrize("name,family,budget", [
    ("tiny-t5", "flan-t5", Budget(48, 32)),
    ("tiny-pptod", "pptod", Budget(64, 32)),
    ("tiny-biogpt", "biogpt", Budget(160, 32)),
])
def test_span_families_cut_context_never_target_and_count_it(tiny_models, embedded_build,
                                                            name, family, budget):
    family = FAMILIES[family]
    tok = tokenizer_of(tiny_models, name)
    data = rows(embedded_build, "nlu", "train")
    encoded = encoding.encode(family, TASKS["nlu"], data, tok, budget)
    kept = len(encoded.dataset) if encoded.dataset else 0
    assert kept + len(encoded.skipped) == len(data)
    assert encoded.truncated > 0, "a budget this small must cut some context"
    by_id = {r["id"]: r for r in data}
    kept_rows = [r for r in data if r["id"] not in set(encoded.skipped)]
    for example, row in zip(encoded.dataset or [], kept_rows):
        assert len(example["input_ids"]) <= budget.max_length  # BioGPT: prompt + target
        target = [t for t in example["labels"] if t != -100]
        text = tok.decode(target, skip_special_tokens=True)
        assert text.strip() == family.target_text(TASKS["nlu"], by_id[row["id"]]).strip()


@pytest.mark.parametrize("name,family", [("tiny-llama", "chat"), ("tiny-biogpt", "biogpt"),
                                         ("tiny-t5", "flan-t5"), ("tiny-pptod", "pptod")])
def test_the_authors_sample_encodes_for_every_family_and_task(sample_build, tiny_models, name,
                                                              family):
    """The real (licensed, read-in-place) sample through the recipes' budgets: every row is
    either a trainer example or a counted skip."""
    family = FAMILIES[family]
    tok = tokenizer_of(tiny_models, name)
    budget = Budget(2048, 500) if family.name == "chat" else family.default_budget
    for task in ("nlu", "pol", "nlg"):
        data = rows(sample_build, task, "train")
        encoded = encoding.encode(family, TASKS[task], data, tok, budget)
        assert len(encoded.dataset) + len(encoded.skipped) == len(data)
        assert len(encoded.dataset) > len(data) // 2
        assert encoded.truncated <= len(encoded.dataset)


def test_llama_examples_over_budget_are_skipped_and_named(tiny_models, embedded_build):
    tok = tokenizer_of(tiny_models, "tiny-llama")
    data = rows(embedded_build, "pol", "train")
    full = encoding.encode(FAMILIES["chat"], TASKS["pol"], data, tok, Budget(None, 32))
    assert len(full.dataset) == len(data) and not full.skipped
    lengths = sorted(len(tok.apply_chat_template(
        [*e["prompt"], *e["completion"]], tokenize=True, return_dict=True)["input_ids"])
        for e in full.dataset)
    cut = lengths[len(lengths) // 2]
    small = encoding.encode(FAMILIES["chat"], TASKS["pol"], data, tok, Budget(cut, 32))
    assert 0 < len(small.skipped) < len(data)
    assert len(small.dataset) + len(small.skipped) == len(data)
    assert set(small.skipped) <= {r["id"] for r in data}


def test_llama_completion_is_the_answer_and_ends_with_end_of_turn(tiny_models, embedded_build):
    from meditod_hub.models.formats import chat

    tok = tokenizer_of(tiny_models, "tiny-llama")
    row = rows(embedded_build, "nlu", "train")[0]
    example = encoding.encode(FAMILIES["chat"], TASKS["nlu"], [row], tok, Budget(1024, 32)).dataset[0]
    assert example["completion"] == [{"role": "assistant", "content": chat.answer(TASKS["nlu"], row)}]
    full = tok.apply_chat_template([*example["prompt"], *example["completion"]], tokenize=True,
                                   return_dict=True)["input_ids"]
    assert full[-1] == tok.convert_tokens_to_ids("<|eot_id|>") != tok.pad_token_id


# --- tokenizer and batching decisions ----------------------------------------------------------
def test_pad_token_is_made_distinct_from_eos(tiny_models):
    tok = tokenizer_of(tiny_models, "tiny-llama")
    tok.pad_token = tok.eos_token            # as OpenBioLLM ships it
    padding.ensure_pad_token(tok, FAMILIES["chat"])
    assert tok.pad_token == "<|finetune_right_pad_id|>"
    tok.pad_token = None                     # as Llama-3 ships it
    padding.ensure_pad_token(tok, FAMILIES["chat"])
    assert tok.pad_token_id not in FAMILIES["chat"].stop_token_ids(tok)


def test_padding_free_is_refused_for_biogpt_and_falls_back_without_cuda_flash():
    recipe = train_cmd.parse_recipe([str(RECIPES / "biogpt-full" / "nlu.yaml"), "--padding_free=true"])
    with pytest.raises(UsageError, match="position ids"):
        padding.plan_batching(FAMILIES["biogpt"], recipe.training, recipe.model)
    llama = train_cmd.parse_recipe([str(RECIPES / "llama3-8b" / "nlu.yaml")])
    assert llama.training.padding_free
    expected = "padding_free" if padding.flash_varlen_available("flash_attention_2") else "padded"
    assert padding.plan_batching(FAMILIES["chat"], llama.training, llama.model) == expected
    if expected == "padded":
        assert not llama.training.padding_free
        assert llama.training.train_sampling_strategy == "group_by_length"


def _biogpt_logits(model, collator, examples):
    batch = collator([{"input_ids": e["input_ids"], "labels": e["labels"]} for e in examples])
    with torch.no_grad():
        return model(**{k: v for k, v in batch.items() if k != "labels"}).logits


def test_biogpt_examples_in_one_batch_cannot_see_each_other(tiny_models, embedded_build):
    """The recipe's padded batches isolate examples; a padding-free batch would not (why it is
    refused for BioGPT): its attention ignores position ids."""
    from transformers import AutoModelForCausalLM
    from trl.trainer.sft_trainer import DataCollatorForLanguageModeling

    tok = tokenizer_of(tiny_models, "tiny-biogpt")
    model = AutoModelForCausalLM.from_pretrained(tiny_models / "tiny-biogpt").eval()
    data = encoding.encode(FAMILIES["biogpt"], TASKS["nlu"], rows(embedded_build, "nlu", "train"), tok,
                    Budget(512, 64)).dataset
    a, b1, b2 = data[0], data[1], data[2]
    assert len(b1["input_ids"]) != len(b2["input_ids"])
    padded = DataCollatorForLanguageModeling(pad_token_id=tok.pad_token_id)
    n = len(a["input_ids"])
    with_b1 = _biogpt_logits(model, padded, [a, b1])[0, :n]
    with_b2 = _biogpt_logits(model, padded, [a, b2])[0, :n]
    alone = _biogpt_logits(model, padded, [a])[0, :n]
    torch.testing.assert_close(with_b1, alone, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(with_b2, alone, atol=1e-5, rtol=1e-5)

    flat = DataCollatorForLanguageModeling(pad_token_id=tok.pad_token_id, padding_free=True)
    second = _biogpt_logits(model, flat, [b1, a])[0, len(b1["input_ids"]):]
    assert not torch.allclose(second, alone, atol=1e-3), "packed BioGPT examples leak"


# --- training runs -------------------------------------------------------------------------------
class Interrupted(Exception):
    pass


def test_on_cpu_the_fused_lm_head_scores_only_labelled_positions_for_the_same_loss_and_grads(
        monkeypatch):
    """labelled_positions_only: TRL's fused head projects the labelled positions alone (a prompt
    carries no label), and the loss and every gradient are the ones of scoring every position."""
    import trl.trainer.utils as trl_utils
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=300, hidden_size=32, intermediate_size=64,
                                         num_hidden_layers=2, num_attention_heads=4,
                                         num_key_value_heads=2))
    trl_utils.add_fused_lm_head(model, outputs=("log_probs", "entropy", "is_top1"))
    ids = torch.randint(0, 300, (3, 12))
    labels = ids.clone()
    labels[:, :8] = -100   # an 8-token prompt before a 4-token completion
    labels[2, 10:] = -100  # and padding in the last row
    scored, kernel = [], trl_utils._ChunkedLogProbFunction

    class Counting:
        @staticmethod
        def apply(hidden, *rest):
            scored.append(len(hidden))
            return kernel.apply(hidden, *rest)

    monkeypatch.setattr(trl_utils, "_ChunkedLogProbFunction", Counting)

    def loss_and_grads():
        model.zero_grad()
        out = model(input_ids=ids, labels=labels, fused_lm_head=True)
        out.loss.backward()
        return out.loss.detach(), [p.grad.clone() for p in model.parameters()]

    every_position = loss_and_grads()
    decides = trl_utils._use_triton
    with trl_patch.labelled_positions_only(torch.device("cpu")):
        labelled_only = loss_and_grads()
    assert trl_utils._use_triton is decides  # the patch lasts the forward only
    assert scored == [3 * 11, int((labels[:, 1:] != -100).sum())] == [33, 10]
    assert torch.allclose(every_position[0], labelled_only[0], atol=1e-6)
    assert all(torch.allclose(a, b, atol=1e-6)
               for a, b in zip(every_position[1], labelled_only[1], strict=True))


@pytest.mark.slow
def test_interrupted_run_resumes_to_the_same_global_step(tiny_models, embedded_build, tmp_path):
    from transformers import TrainerCallback

    class Steps(TrainerCallback):
        def __init__(self, stop_at=None):
            self.seen, self.stop_at = [], stop_at

        def on_step_end(self, args, state, control, **kwargs):
            self.seen.append(state.global_step)
            if state.global_step == self.stop_at:
                raise Interrupted

    common = ["--max_steps=5", "--save_steps=2", "--save_total_limit=3", "--logging_steps=1"]
    whole = tmp_path / "whole"
    train_cmd.main(train_args("tiny-llama/nlu.yaml", embedded_build, tiny_models / "tiny-llama", whole,
                              *common))
    cut = tmp_path / "cut"
    argv = train_args("tiny-llama/nlu.yaml", embedded_build, tiny_models / "tiny-llama", cut,
                      *common)
    with pytest.raises(Interrupted):
        train_cmd.main(argv, callbacks=[Steps(stop_at=3)])
    assert (cut / "checkpoints" / "checkpoint-2").is_dir() and not (cut / "run_info.json").exists()
    resumed = Steps()
    train_cmd.main(argv, callbacks=[resumed])
    assert resumed.seen == [3, 4, 5], "steps 1-2 come from checkpoint-2"
    assert run_info(cut)["global_step"] == run_info(whole)["global_step"] == 5


@pytest.mark.slow
def test_two_process_ddp_run_completes(tiny_models, embedded_build, tmp_path):
    out = tmp_path / "ddp"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(PROJECT)}
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "torchrun"), "--nproc_per_node", "2",
         "--standalone", "-m", "meditod_hub.commands.train",
         *train_args("tiny-llama/nlu.yaml", embedded_build, tiny_models / "tiny-llama", out,
                     "--max_steps=2", "--save_strategy=no")],
        cwd=PROJECT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    info = run_info(out)
    assert info["hardware"].startswith("2 x ")
    assert info["global_step"] == 2
    finished = [line for line in proc.stdout.splitlines() if line.startswith("tiny-llama/nlu: ")]
    assert [line.split(" steps")[0] for line in finished] == ["tiny-llama/nlu: 2"] * 2, \
        "both ranks ran to the end"


@pytest.mark.slow
@pytest.mark.parametrize("recipe,model,targets", [
    ("tiny-llama/nlu.yaml", "tiny-llama", "q_proj k_proj v_proj o_proj gate_proj up_proj down_proj"),
    ("tiny-t5/pol.yaml", "tiny-t5", "q k v o wi_0 wi_1 wo"),
])
def test_qlora_4bit_path_trains_the_adapter_on_cpu(tiny_models, embedded_build, tmp_path, recipe,
                                                   model, targets):
    out = tmp_path / "qlora"
    train_cmd.main(train_args(recipe, embedded_build, tiny_models / model, out, "--max_steps=2",
                              "--use_peft=true", "--load_in_4bit=true", "--use_bnb_nested_quant=true",
                              "--lora_r=8", "--lora_alpha=16", "--learning_rate=1e-2",
                              "--save_strategy=no", "--logging_steps=1", "--lora_target_modules",
                              *targets.split()))
    info = run_info(out)
    assert info["adapter"] is True and info["quantization"] == "nf4"
    config = json.loads((out / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == str(tiny_models / model)
    weights = load_file(out / "adapter_model.safetensors")
    lora_b = [w for name, w in weights.items() if "lora_B" in name]
    assert lora_b and any(w.abs().sum() > 0 for w in lora_b), "LoRA B starts at zero"
    assert not (out / "model.safetensors").exists()


@pytest.mark.slow
@pytest.mark.parametrize("recipe,model,family", [
    ("tiny-llama/pol.yaml", "tiny-biogpt", "biogpt"),
    ("tiny-t5/nlg.yaml", "tiny-pptod", "pptod"),
])
def test_biogpt_and_pptod_families_train_through_the_same_entry_point(
        tiny_models, embedded_build, tmp_path, recipe, model, family):
    out = tmp_path / family
    train_cmd.main(train_args(recipe, embedded_build, tiny_models / model, out, f"--family={family}",
                              "--max_steps=3", "--save_strategy=no", "--logging_steps=1"))
    info = run_info(out)
    assert info["family"] == family and info["global_step"] == 3
    assert info["train_examples"] + info["skipped_examples"] == len(rows(embedded_build, "nlu", "train"))
    assert (out / "model.safetensors").is_file() and (out / "tokenizer.json").is_file()


SELECTION = ["--eval_strategy=steps", "--eval_steps=2", "--save_steps=2", "--save_total_limit=4",
             "--load_best_model_at_end=true", "--metric_for_best_model=f1",
             "--greater_is_better=true", "--eval_max_examples=4", "--max_new_tokens=8"]


@pytest.mark.slow
@pytest.mark.parametrize("recipe,model", [("tiny-llama/nlu.yaml", "tiny-llama"),
                                          ("tiny-t5/pol.yaml", "tiny-t5")])
def test_validation_generates_and_scores_f1(tiny_models, embedded_build, tmp_path, recipe, model):
    out = tmp_path / "validate"
    train_cmd.main(train_args(recipe, embedded_build, tiny_models / model, out, "--max_steps=2",
                              *SELECTION))
    state = json.loads((out / "checkpoints" / "trainer_state.json").read_text())
    [evaluation] = [e for e in state["log_history"] if "eval_f1" in e]
    assert 0.0 <= evaluation["eval_f1"] <= 1.0
    assert 0 <= evaluation["eval_parse_failures"] <= 4  # counted, never a crash
    assert "eval_loss" in evaluation


@pytest.mark.slow
def test_the_checkpoint_with_the_best_validation_f1_is_the_saved_model(
        tiny_models, embedded_build, tmp_path, monkeypatch):
    scripted = iter([0.2, 0.7, 0.4])
    monkeypatch.setattr(validation.ValidationScorer, "__call__",
                        lambda self, model, accelerator: {"f1": next(scripted)})
    out = tmp_path / "select"
    train_cmd.main(train_args("tiny-llama/nlu.yaml", embedded_build, tiny_models / "tiny-llama", out,
                              "--max_steps=6", *SELECTION))
    state = json.loads((out / "checkpoints" / "trainer_state.json").read_text())
    assert [e["eval_f1"] for e in state["log_history"] if "eval_f1" in e] == [0.2, 0.7, 0.4]
    assert state["best_model_checkpoint"].endswith("checkpoint-4")
    saved = load_file(out / "model.safetensors")
    best = load_file(out / "checkpoints" / "checkpoint-4" / "model.safetensors")
    last = load_file(out / "checkpoints" / "checkpoint-6" / "model.safetensors")
    assert all(torch.equal(saved[k], best[k]) for k in best)
    assert not all(torch.equal(saved[k], last[k]) for k in last)


@pytest.mark.slow
@pytest.mark.parametrize("fixture", ["tiny_runs", "tiny_t5_runs"])
def test_tiny_model_memorises_the_training_split(request, embedded_build, tmp_path, fixture):
    """Loss at least halves and train-split NLU F1 > 0.9 on its recipe (`<model>/nlu.yaml`): the
    whole path works and learns. The session's runs (`tiny_runs`, `tiny_t5_runs`: that recipe
    on the same data and base)."""
    from meditod_hub.commands.evaluate import main as evaluate
    from meditod_hub.commands.predict import main as predict

    run = request.getfixturevalue(fixture) / "nlu"
    assert run_info(run)["skipped_examples"] == 0
    state = json.loads((run / "checkpoints" / "trainer_state.json").read_text())
    losses = [e["loss"] for e in state["log_history"] if "loss" in e]
    assert len(losses) > 1 and math.isfinite(losses[-1]) and losses[-1] <= losses[0] / 2
    predictions = tmp_path / "eval" / "train" / "predictions.jsonl"
    predict(["--model_path", str(run), "--task", "nlu", "--data", str(embedded_build),
             "--split", "train", "--out", str(predictions)])
    results = tmp_path / "eval" / "train" / "results.json"
    evaluate(["--task", "nlu", "--data", str(embedded_build), "--split", "train",
              "--predictions", str(predictions), "--out", str(results)])
    assert json.loads(results.read_text())["f1"] > 0.9
