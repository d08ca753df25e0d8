"""Every recipe parses into the trainer's own dataclasses and states the paper's setup.

No network, no training: recipes are parsed exactly as `meditod train` parses them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from meditod_hub.commands.train import parse_recipe
from meditod_hub.data import paper_results
from meditod_hub.errors import UsageError

RECIPES = Path(__file__).resolve().parent.parent / "recipes"
PAPER_MODELS = ("flan-t5-base", "biogpt", "pptod-base", "llama3-8b", "openbiollm-8b")
FULL_VARIANTS = ("flan-t5-base-full", "biogpt-full", "pptod-base-full")
TASKS = ("nlu", "pol", "nlg")
ALL = sorted(p for p in RECIPES.glob("*/*.yaml") if p.parent.name != "accelerate")

BASES = {"llama3-8b": "meta-llama/Meta-Llama-3-8B-Instruct",
         "openbiollm-8b": "aaditya/Llama3-OpenBioLLM-8B", "flan-t5-base": "google/flan-t5-base",
         "biogpt": "microsoft/biogpt", "pptod-base": "build/pptod-base"}
LLAMA_PROJECTIONS = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}
T5_PROJECTIONS = {"q", "k", "v", "o", "wi_0", "wi_1", "wo"}


def parse(path: Path):
    return parse_recipe([str(path)])


@pytest.fixture(scope="module")
def parsed():
    return {(p.parent.name, p.stem): parse(p) for p in ALL}


def test_the_fifteen_paper_recipes_and_the_tiny_ones_exist():
    names = {(p.parent.name, p.stem) for p in ALL}
    for model in PAPER_MODELS + FULL_VARIANTS:
        assert {(model, t) for t in TASKS} <= names, model
    assert {("tiny-llama", t) for t in TASKS} | {("tiny-t5", t) for t in TASKS} <= names
    assert {("tiny-llama-lora", t) for t in TASKS} <= names
    assert {("smollm2-135m", t) for t in TASKS} | {("smollm2-135m-multitask", "multitask")} <= names
    assert {(f"{m}-multitask", "multitask") for m in ("llama3-8b", "openbiollm-8b",
                                                      "tiny-llama")} <= names
    for model in PAPER_MODELS + FULL_VARIANTS + ("tiny-llama", "tiny-t5", "tiny-llama-lora",
                                                 "llama3-8b-multitask", "openbiollm-8b-multitask",
                                                 "tiny-llama-multitask", "smollm2-135m",
                                                 "smollm2-135m-multitask"):
        readme = RECIPES / model / "README.md"
        assert readme.is_file(), readme
        text = readme.read_text()
        assert f"recipes/{model}/" in text or f"meditod train {model}" in text, \
            f"{readme} lacks the exact command"


@pytest.mark.parametrize("path", ALL, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_recipe_resolves_and_names_its_own_run(path, parsed):
    recipe = parsed[path.parent.name, path.stem]
    keys = set(yaml.safe_load(path.read_text()))
    assert keys == set(recipe.resolved), "every key is a field of one of the three dataclasses"
    assert recipe.script.task == path.stem
    assert recipe.script.model == path.parent.name
    assert Path(recipe.training.output_dir) == Path("runs") / path.parent.name / path.stem
    if recipe.training.eval_strategy == "no":
        assert path.parent.name.startswith(("tiny-", "smollm2-")), \
            "only the CPU recipes skip validation"
    elif recipe.script.task == "nlg":
        assert recipe.training.metric_for_best_model == "loss"
        assert recipe.training.greater_is_better is False
    else:
        assert recipe.training.metric_for_best_model == "f1"
        assert recipe.training.greater_is_better is True


@pytest.mark.parametrize("path", ALL, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_header_states_hardware_wall_clock_batch_and_paper_row(path, parsed):
    header = path.read_text().split("\n\n")[0]
    for word in ("Hardware:", "Wall-clock", "Effective batch:", "Paper row:"):
        assert word in header, f"{path}: header lacks {word!r}"
    recipe = parsed[path.parent.name, path.stem]
    if recipe.script.effective_batch_size:
        assert f"= {recipe.script.effective_batch_size}" in header
    paper_model = path.parent.name.removesuffix("-full")
    if paper_model in PAPER_MODELS:
        row = paper_results.paper_row(paper_model, path.stem, "test")
        assert row, paper_model
        for metric, value in row.items():  # the main tables' numbers (the appendix's precision
            if metric.endswith(("precision", "recall")):  # and recall need not be quoted)
                continue
            assert f"{value}" in header, f"{path}: paper {metric} {value} not quoted"


@pytest.mark.parametrize("model", ["llama3-8b", "openbiollm-8b"])
def test_8b_recipes_are_the_papers_qlora(model, parsed):
    for task, max_length in zip(TASKS, (1024, 2048, 768)):
        r = parsed[model, task]
        assert r.model.model_name_or_path == BASES[model]
        assert (r.model.load_in_4bit, r.model.bnb_4bit_quant_type, r.model.dtype) == (
            True, "nf4", "bfloat16")
        assert r.model.use_peft and (r.model.lora_r, r.model.lora_alpha) == (32, 32)
        assert r.model.lora_dropout == 0.05
        assert set(r.model.lora_target_modules) == LLAMA_PROJECTIONS
        assert r.training.learning_rate == 1e-4
        assert r.training.lr_scheduler_type.value == "cosine"
        assert r.training.warmup_steps == 0.1
        assert r.training.num_train_epochs == 10
        assert r.training.max_length == max_length
        assert r.script.effective_batch_size == 16
        assert r.training.bf16


@pytest.mark.parametrize("model", ["flan-t5-base", "biogpt", "pptod-base"])
def test_small_models_keep_the_papers_lr_and_batch_in_both_variants(model, parsed):
    lr, batch = (1e-3, 64) if model == "pptod-base" else (1e-4, 16)
    for task in TASKS:
        qlora, full = parsed[model, task], parsed[f"{model}-full", task]
        for r in (qlora, full):
            assert r.model.model_name_or_path == BASES[model]
            assert r.training.learning_rate == lr
            assert r.script.effective_batch_size == batch
        assert qlora.model.use_peft and qlora.model.load_in_4bit
        assert qlora.model.bnb_4bit_quant_type == "nf4"
        if model != "biogpt":
            assert set(qlora.model.lora_target_modules) == T5_PROJECTIONS
            assert qlora.model.lora_task_type == "SEQ_2_SEQ_LM"
        assert not full.model.use_peft and not full.model.load_in_4bit
        assert full.model.dtype == "float32" and not full.training.bf16  # upstream: fp32


def test_upstream_schedules_of_flan_t5_and_biogpt(parsed):
    for task in TASKS:
        assert parsed["flan-t5-base-full", task].training.lr_scheduler_type.value == "constant"
        assert parsed["flan-t5-base-full", task].training.num_train_epochs == 20
        biogpt = parsed["biogpt-full", task]
        assert biogpt.training.lr_scheduler_type.value == "linear"
        assert biogpt.training.warmup_steps == 0.1
        # upstream 512; POL raises it to what BioGPT's positions allow, as the state joins the input
        assert biogpt.training.max_length == (1024 if task == "pol" else 512)
        assert not biogpt.training.padding_free
        flan = parsed["flan-t5-base-full", task].script.max_source_length
        assert flan == (1024 if task == "pol" else 512)


def test_effective_batch_arithmetic_holds_for_one_and_two_processes(parsed):
    for (model, task), r in parsed.items():
        target = r.script.effective_batch_size
        if not target:
            continue
        for processes in (1, 2):
            per_step = r.training.per_device_train_batch_size * processes
            assert target % per_step == 0, f"{model}/{task}: {target} vs {per_step} per step"


def test_tiny_recipes_train_all_weights_without_gpu_defaults(parsed):
    """All weights, except `tiny-llama-lora` (the adapter path of one base, on CPU)."""
    for (model, _task), r in parsed.items():
        if model.startswith("tiny-"):
            assert r.model.use_peft == model.endswith("-lora") and not r.model.load_in_4bit
            assert not r.training.bf16 and not r.training.gradient_checkpointing
            base = model.removesuffix("-lora").removesuffix("-multitask")
            assert r.model.model_name_or_path == f"build/tiny-models/{base}"


# The tiny multi-task run, a memorising check, sees every task's rows each epoch: it memorises
# the three in fewer epochs than a single-task run (its recipe's header has the figures).
FEWER_EPOCHS = {"tiny-llama"}


@pytest.mark.parametrize("model", ["llama3-8b", "openbiollm-8b", "tiny-llama"])
def test_multitask_recipes_are_the_single_task_recipe_on_all_three_tasks(model, parsed):
    """The same model, LoRA and schedule as the model's POL recipe (the largest budget)."""
    multi, pol = parsed[f"{model}-multitask", "multitask"], parsed[model, "pol"]
    assert multi.script.task == "multitask"
    allowed = {"output_dir", "logging_dir"} | ({"num_train_epochs"} if model in FEWER_EPOCHS
                                               else set())
    for ours, theirs in ((vars(multi.model), vars(pol.model)),
                         (multi.training.to_dict(), pol.training.to_dict())):
        differ = {k for k in ours if ours[k] != theirs.get(k)} - allowed
        assert not differ, f"{model}-multitask differs from {model}/pol in {sorted(differ)}"
    assert multi.training.num_train_epochs <= pol.training.num_train_epochs


def test_overrides_win_over_the_recipe_and_are_recorded():
    r = parse_recipe([str(RECIPES / "llama3-8b" / "nlu.yaml"), "--learning_rate=3e-4",
                      "--lora_r", "8"])
    assert r.training.learning_rate == 3e-4 and r.model.lora_r == 8
    assert r.resolved["learning_rate"] == 3e-4 and r.resolved["lora_r"] == 8
    assert "use_cpu" not in r.resolved, "the machine's device is not part of the recipe"


def test_unknown_recipe_key_is_refused(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text((RECIPES / "tiny-llama" / "nlu.yaml").read_text() + "no_such_key: 1\n")
    with pytest.raises(UsageError, match="bad.yaml: unknown setting.s. no_such_key"):
        parse(bad)


def test_accelerate_configs_parse():
    from accelerate.commands.config.config_args import load_config_from_file

    expected = {"single_gpu": ("NO", 1), "ddp": ("MULTI_GPU", 2), "fsdp_qlora": ("FSDP", 2),
                "zero3": ("DEEPSPEED", 2)}
    for name, (kind, processes) in expected.items():
        config = load_config_from_file(str(RECIPES / "accelerate" / f"{name}.yaml"))
        assert (config.distributed_type.value, config.num_processes) == (kind, processes)


@pytest.mark.parametrize("path", ALL, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_the_resolved_recipe_a_run_saves_reproduces_the_run(path, parsed, tmp_path):
    recipe = parsed[path.parent.name, path.stem]
    saved = tmp_path / "recipe.yaml"
    saved.write_text(yaml.safe_dump(recipe.resolved, sort_keys=False))
    again = parse(saved)
    assert again.resolved == recipe.resolved
    assert again.training.to_dict() == recipe.training.to_dict()


def test_smollm2_recipes_are_lora_on_cpu_on_the_converted_base(parsed):
    for task in (*TASKS, "multitask"):
        model = "smollm2-135m" if task in TASKS else "smollm2-135m-multitask"
        r = parsed[model, task]
        assert r.model.model_name_or_path == "build/pretrained/smollm2-135m"
        assert r.script.family == "chat" and r.model.use_peft and not r.model.load_in_4bit
        assert r.model.dtype == "float32" and not r.training.bf16

