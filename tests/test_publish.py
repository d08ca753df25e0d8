"""Publishing runs to a local Hub test server and downloading them back. Offline, CPU.

Clients run as subprocesses with `hub_server.client_env` (huggingface_hub reads HF_ENDPOINT at
import). Runs are a tiny random Llama with a LoRA adapter built here (seconds), with invented
metric values: publishing is about files, revisions and errors, not about the numbers.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import NLU_RESULTS, make_run, offline_env, publish
from helpers import PUBLISH_REPO as REPO
from hub_server import READ_TOKEN, WRITE_TOKEN, silent_endpoint, unused_endpoint

PROJECT_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def tiny_run(tmp_path, tiny_base) -> Path:
    return make_run(tmp_path / "run", tiny_base)


def head(hub, branch: str = "main"):
    repo = hub.repo("model", REPO)
    return repo.commits[repo.branches[branch]]


# --- pushing ------------------------------------------------------------------------------------

def test_dry_run_lists_files_and_prints_the_card_without_network(tmp_path, tiny_run):
    done = publish(offline_env(tmp_path), "--run", str(tiny_run), "--repo", REPO, "--dry-run")
    assert done.returncode == 0, done.stderr
    listing, card = done.stdout.split("\n\n", 1)
    assert "adapter_model.safetensors" in listing and "eval/test/results.json" in listing
    assert "predictions.jsonl" not in listing and "checkpoint" not in listing
    assert card.startswith("---\n") and "model-index:" in card
    written = publish(offline_env(tmp_path), "--run", str(tiny_run), "--repo", REPO, "--dry-run",
                      "--card-dir", str(tmp_path / "card"))
    assert written.returncode == 0, written.stderr
    assert written.stdout.strip().endswith(f"model card written to {tmp_path / 'card' / 'README.md'}")
    assert (tmp_path / "card" / "README.md").read_text().strip() == card.strip()
    assert (tmp_path / "card" / "eval" / "test" / "results.png").is_file()


CARD_BACK = """
import json, sys
from huggingface_hub import ModelCard
card = ModelCard.load(sys.argv[1])
print(json.dumps({"meditod": card.data.to_dict()["meditod"],
                  "results": {f"{r.dataset_split} {r.metric_config}": r.metric_value
                              for r in card.data.eval_results}}))
"""


def test_push_uploads_one_private_commit_with_card_adapter_results(tmp_path, tiny_run, hub_server):
    done = publish(hub_server.client_env(tmp_path), "--run", str(tiny_run), "--repo", REPO)
    assert done.returncode == 0, done.stderr
    repo = hub_server.repo("model", REPO)
    assert repo.private
    commit = head(hub_server)
    assert set(commit.files) == {
        ".gitattributes", "README.md", "adapter_config.json", "adapter_model.safetensors",
        "tokenizer.json", "tokenizer_config.json", "recipe.yaml", "run_info.json",
        "eval/test/results.json", "eval/test/results.png", "eval/test_ood/results.json",
        "meditod_upload.json"}
    assert repo.history(commit)[1].title == "initial commit"  # one commit for the whole run
    record = json.loads((tiny_run / "published.json").read_text())
    assert record["on_main"] and record["new_commit"] and record["revision"].startswith("run-")
    assert repo.branches[record["revision"]] == repo.branches["main"] == record["commit"]
    loaded = subprocess.run([sys.executable, "-c", CARD_BACK, REPO], env=hub_server.client_env(tmp_path),
                            capture_output=True, text=True, timeout=60)
    assert loaded.returncode == 0, loaded.stderr
    card = json.loads(loaded.stdout)
    assert card["results"]["test f1"] == NLU_RESULTS["f1"]
    assert card["results"]["test_ood medical.f1"] == NLU_RESULTS["medical"]["f1"]
    assert len(card["results"]) == 2 * 10  # every nlu metric, both splits
    assert card["meditod"]["run_id"] == record["run_id"]
    uploaded = b"".join(hub_server.blobs[f.sha256] for f in commit.files.values())
    assert WRITE_TOKEN.encode() not in uploaded
    assert WRITE_TOKEN not in done.stdout + done.stderr


def test_public_flag_creates_a_public_repo(tmp_path, tiny_run, hub_server):
    done = publish(hub_server.client_env(tmp_path), "--run", str(tiny_run), "--repo", REPO, "--public")
    assert done.returncode == 0, done.stderr
    assert not hub_server.repo("model", REPO).private


def test_same_run_twice_makes_no_new_commit(tmp_path, tiny_run, hub_server):
    env = hub_server.client_env(tmp_path)
    assert publish(env, "--run", str(tiny_run), "--repo", REPO).returncode == 0
    repo = hub_server.repo("model", REPO)
    before = (len(repo.commits), dict(repo.branches))
    again = publish(env, "--run", str(tiny_run), "--repo", REPO)
    assert again.returncode == 0, again.stderr
    assert "already published, no new commit" in again.stdout
    assert (len(repo.commits), dict(repo.branches)) == before


def test_new_run_goes_to_its_own_branch_and_main_stays(tmp_path, tiny_run, tiny_base, hub_server):
    env = hub_server.client_env(tmp_path)
    assert publish(env, "--run", str(tiny_run), "--repo", REPO).returncode == 0
    first = json.loads((tiny_run / "published.json").read_text())
    better = {**NLU_RESULTS, "f1": 0.75}
    second_run = make_run(tmp_path / "second", tiny_base, seed=1, results=better)
    shutil.rmtree(second_run / "eval" / "test_ood")
    done = publish(env, "--run", str(second_run), "--repo", REPO)
    assert done.returncode == 0, done.stderr
    second = json.loads((second_run / "published.json").read_text())
    repo = hub_server.repo("model", REPO)
    assert second["revision"] != first["revision"] and not second["on_main"]
    assert repo.branches["main"] == first["commit"] == repo.branches[first["revision"]]
    files = head(hub_server, second["revision"]).files
    assert "eval/test_ood/results.json" not in files  # the first run's leftovers are deleted
    adapter = "adapter_model.safetensors"
    assert files[adapter].sha256 != head(hub_server).files[adapter].sha256
    table = publish(env, "--table", str(tmp_path))
    assert f"| tiny-llama | nlu | [{REPO}]" in table.stdout
    assert f"/tree/{second['revision']}) (`{second['revision']}`) | Overall F1 | 0.7500 |" in table.stdout
    assert "(`main`) | Overall F1 | 0.5614 | 0.5614 |" in table.stdout


def test_push_without_results_is_refused_before_any_request(tmp_path, tiny_run, hub_server):
    shutil.rmtree(tiny_run / "eval")
    done = publish(hub_server.client_env(tmp_path), "--run", str(tiny_run), "--repo", REPO)
    assert done.returncode == 1
    assert "no evaluation results" in done.stderr and "Traceback" not in done.stderr
    assert hub_server.requests == []


def test_repo_with_other_content_is_refused(tmp_path, tiny_run, hub_server):
    foreign = hub_server.create_repo("model", REPO, private=False)
    hub_server.commit(foreign, "main", "someone else's model", "",
                      {"README.md": b"---\nlicense: mit\n---\n# Another model\n"}, {})
    done = publish(hub_server.client_env(tmp_path), "--run", str(tiny_run), "--repo", REPO)
    assert done.returncode == 1
    assert "not a MediTOD model" in done.stderr and "choose another --repo" in done.stderr
    assert len(foreign.commits) == 2


def test_repo_of_another_task_is_refused(tmp_path, tiny_run, tiny_base, hub_server):
    env = hub_server.client_env(tmp_path)
    assert publish(env, "--run", str(tiny_run), "--repo", REPO).returncode == 0
    pol_run = make_run(tmp_path / "pol", tiny_base, results={**NLU_RESULTS, "precision_at_k": {}},
                       task="pol")
    done = publish(env, "--run", str(pol_run), "--repo", REPO)
    assert done.returncode == 1 and "a MediTOD tiny-llama nlu model" in done.stderr


# --- failures of the endpoint and the token -----------------------------------------------------

def test_endpoint_down_fails_fast_with_a_clear_message(tmp_path, tiny_run, hub_server):
    with unused_endpoint() as url:
        env = {**hub_server.client_env(tmp_path), "HF_ENDPOINT": url}
        start = time.monotonic()
        done = publish(env, "--run", str(tiny_run), "--repo", REPO, "--timeout", "5", timeout=60)
    assert done.returncode == 1
    assert "cannot connect" in done.stderr and "Traceback" not in done.stderr
    assert time.monotonic() - start < 30  # generous: a hang would hit the 60 s limit above


def test_endpoint_that_never_answers_times_out(tmp_path, tiny_run, hub_server):
    with silent_endpoint() as url:
        env = {**hub_server.client_env(tmp_path), "HF_ENDPOINT": url}
        done = publish(env, "--run", str(tiny_run), "--repo", REPO, "--timeout", "1", timeout=60)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "did not answer in time" in done.stderr or "not done within --timeout 1 s" in done.stderr


def test_missing_token_is_refused_before_any_request(tmp_path, tiny_run, hub_server):
    done = publish(hub_server.client_env(tmp_path, token=None), "--run", str(tiny_run), "--repo", REPO)
    assert done.returncode == 1 and "no Hugging Face token" in done.stderr
    assert hub_server.requests == []


def test_read_only_token_is_refused_and_never_printed(tmp_path, tiny_run, hub_server):
    done = publish(hub_server.client_env(tmp_path, token=READ_TOKEN), "--run", str(tiny_run),
                   "--repo", REPO)
    assert done.returncode == 1 and "read-only" in done.stderr
    assert READ_TOKEN not in done.stdout + done.stderr
    assert ("model", REPO) not in hub_server.repos


@pytest.mark.parametrize("token", ["any Hub token", "the user's own token"])
def test_a_token_in_full_weights_metadata_is_never_uploaded(token, tmp_path, tiny_run, tiny_base,
                                                            hub_server):
    """Binary files are scanned too: a token in model.safetensors' header stops the push."""
    from safetensors.torch import load_file, save_file

    secret = "hf_" + "ZyXwVuTsRqPoNmLkJiHgFeDcBa98765432" if token == "any Hub token" else WRITE_TOKEN
    for name in ("adapter_config.json", "adapter_model.safetensors"):
        (tiny_run / name).unlink()
    shutil.copy(tiny_base / "config.json", tiny_run / "config.json")
    save_file(load_file(tiny_base / "model.safetensors"), tiny_run / "model.safetensors",
              metadata={"format": "pt", "note": f"pushed with {secret}"})
    info = json.loads((tiny_run / "run_info.json").read_text())
    (tiny_run / "run_info.json").write_text(json.dumps({**info, "adapter": False}))
    done = publish(hub_server.client_env(tmp_path), "--run", str(tiny_run), "--repo", REPO)
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "model.safetensors contains a Hugging Face token" in done.stderr
    assert secret not in done.stdout + done.stderr
    assert ("model", REPO) not in hub_server.repos


# --- downloading back ---------------------------------------------------------------------------

LOGITS = """
import json, sys, torch
from peft import AutoPeftModelForCausalLM
from transformers import AutoModelForCausalLM, AutoTokenizer
for source, revision, merged in json.loads(sys.argv[1]):
    auto = AutoModelForCausalLM if merged else AutoPeftModelForCausalLM
    model = auto.from_pretrained(source, revision=revision, dtype=torch.float32)
    ids = AutoTokenizer.from_pretrained(source, revision=revision)("patient cough since when",
                                                                  return_tensors="pt")
    print(json.dumps(model(**ids).logits.flatten().tolist()))
"""


def logits(env: dict, *models: tuple[str, str | None, bool]) -> list[list[float]]:
    """Logits of each (path or repo id, revision, merged) on one input, in one subprocess."""
    done = subprocess.run([sys.executable, "-c", LOGITS, json.dumps(models)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_adapter_downloads_back_by_repo_id_and_revision(tmp_path, tiny_run, hub_server):
    env = hub_server.client_env(tmp_path)
    assert publish(env, "--run", str(tiny_run), "--repo", REPO).returncode == 0
    revision = json.loads((tiny_run / "published.json").read_text())["revision"]
    local, main, branch = logits(env, (str(tiny_run), None, False), (REPO, None, False),
                                 (REPO, revision, False))
    assert main == local and branch == local


def test_merged_push_holds_full_weights_equal_to_the_adapter(tmp_path, tiny_run, tiny_base,
                                                             hub_server):
    env = hub_server.client_env(tmp_path)
    done = publish(env, "--run", str(tiny_run), "--repo", REPO, "--merged")
    assert done.returncode == 0, done.stderr
    files = head(hub_server).files
    assert "model.safetensors" in files and "config.json" in files
    assert "adapter_model.safetensors" not in files
    merged, adapter, base = logits(env, (REPO, None, True), (str(tiny_run), None, False),
                                   (str(tiny_base), None, True))
    assert merged == pytest.approx(adapter, abs=0.05)  # merged in bf16
    assert merged != pytest.approx(base, abs=0.05)  # the adapter did change the weights


def test_full_weights_run_publishes_weights_and_refuses_merged(tmp_path, tiny_run, tiny_base):
    for name in ("adapter_config.json", "adapter_model.safetensors"):
        (tiny_run / name).unlink()
    for name in ("config.json", "model.safetensors"):
        shutil.copy(tiny_base / name, tiny_run / name)
    info = json.loads((tiny_run / "run_info.json").read_text())
    (tiny_run / "run_info.json").write_text(json.dumps({**info, "adapter": False}))
    done = publish(offline_env(tmp_path), "--run", str(tiny_run), "--repo", REPO, "--merged", "--dry-run")
    assert done.returncode == 1 and "--merged needs a LoRA adapter run" in done.stderr
    listing = publish(offline_env(tmp_path), "--run", str(tiny_run), "--repo", REPO, "--dry-run")
    assert "  model.safetensors" in listing.stdout and "  config.json" in listing.stdout
    assert "library_name: transformers" in listing.stdout


# --- end to end: train a tiny run, evaluate, publish, predict from the Hub ----------------------

@pytest.mark.slow
def test_trained_run_predicts_the_same_from_the_hub(tmp_path, hub_server):
    """Tiny Llama + LoRA trained for 2 steps on an invented corpus (meditod_hub.data.synthetic)."""
    from meditod_hub.commands import evaluate, predict, train
    from meditod_hub.data import synthetic
    from meditod_hub.data.build import BuildArguments, build
    from meditod_hub.models import tiny

    data, run = tmp_path / "meditod", tmp_path / "run"
    release = synthetic.generate_release(tmp_path / "release", seed=0, dialogues=4)
    build(BuildArguments(source=release, out=data))
    base = tiny.build_all(data, tmp_path / "models", ["tiny-llama"])["tiny-llama"]
    assert train.main([str(PROJECT_ROOT / "recipes" / "tiny-llama" / "nlu.yaml"),
                       f"--model_name_or_path={base}", f"--dataset_name={data}",
                       f"--output_dir={run}", "--max_steps=2", "--save_strategy=no",
                       "--use_peft=true", "--lora_r=4", "--lora_alpha=8",
                       "--lora_target_modules", "q_proj", "v_proj"]) == 0
    local = run / "eval" / "test" / "predictions.jsonl"
    common = ["--task", "nlu", "--data", str(data), "--split", "test", "--max_new_tokens", "8"]
    assert predict.main(["--model_path", str(run), *common, "--out", str(local)]) == 0
    assert evaluate.main(["--task", "nlu", "--data", str(data), "--split", "test",
                          "--predictions", str(local), "--out", str(local.parent / "results.json")]) == 0

    env = hub_server.client_env(tmp_path)
    done = publish(env, "--run", str(run), "--repo", REPO)
    assert done.returncode == 0, done.stderr
    assert "adapter_model.safetensors" in head(hub_server).files
    # The same 8 rows from the run folder and from the Hub, each in a fresh single-threaded
    # process: a barely trained model has near-tied logits, so thread scheduling must not differ.
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    outputs = {}
    for name, source in (("local", [str(run)]), ("hub", [REPO, "--family", "chat"])):
        outputs[name] = tmp_path / f"{name}-first-8.jsonl"
        done = subprocess.run([sys.executable, "-m", "meditod_hub.commands.predict", "--model_path", *source,
                               *common, "--limit", "8", "--out", str(outputs[name])],
                              env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    same_rows = outputs["local"]
    assert outputs["hub"].read_text() == same_rows.read_text()
    assert len(same_rows.read_text().splitlines()) == 8


def test_merged_refused_for_a_quantised_base(tmp_path, tiny_run, tiny_base):
    from meditod_hub.models.runs import RunError, read_run
    from meditod_hub.publishing.publish import run_files

    quantised = tmp_path / "quantised-base"
    shutil.copytree(tiny_base, quantised)
    config = json.loads((quantised / "config.json").read_text())
    config["quantization_config"] = {"quant_method": "bitsandbytes", "load_in_4bit": True}
    (quantised / "config.json").write_text(json.dumps(config))
    adapter_config = json.loads((tiny_run / "adapter_config.json").read_text())
    adapter_config["base_model_name_or_path"] = str(quantised)
    (tiny_run / "adapter_config.json").write_text(json.dumps(adapter_config))
    with pytest.raises(RunError, match="stored quantised"):
        run_files(read_run(tiny_run), merged=True)
    assert run_files(read_run(tiny_run))  # the adapter itself is still publishable
