"""Helpers the tests share: invented releases, runs and results, scripted assistants, training
arguments, and the failure sweep's case runner and its tally. Test modules import from here
(`from helpers import ...`), never from each other. No MediTOD text: every dialogue here is
invented.

`run_case` runs one command in process the way a user would meet it and classifies the outcome:
clear (non-zero exit, one `error:` line that is not an "unexpected" failure; a release's
problems may follow, one line each), traceback, silent (exit 0 on a bad input), or data lost or
exposed (a protected file changed, or a secret appeared in the output or in a written file).
Every case lands in `SWEEP`, which conftest prints as the sweep table.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from datasets import load_dataset

from meditod_hub.apps.assistant import Assistant
from meditod_hub.data.state import fold_states
from meditod_hub.data.tasks import TASK_NAMES
from meditod_hub.errors import run_main
from meditod_hub.models.records import Prediction

PROJECT = Path(__file__).resolve().parent.parent
RECIPES = PROJECT / "recipes"


# --- releases ----------------------------------------------------------------------------------
def invented_dialogue(*, symptom="wheezing") -> dict:
    """A tiny invented dialogue (not MediTOD text) with consistent states."""
    utterances = [
        {"speaker": "doctor", "uttr_id": 0, "text": "Hello, what is the matter?", "keywords": [],
         "actions": [{"action": "nod_prompt_salutations"}]},
        {"speaker": "patient", "uttr_id": 1, "text": "I keep wheezing at night.", "keywords": [],
         "nlu": [{"intent": "inform", "slots": {"positive_symptom": [
             {"value": symptom, "location": ["chest"], "onset": "a week ago"}]}}]},
        {"speaker": "doctor", "uttr_id": 2, "text": "Any fever?", "keywords": [],
         "actions": [{"action": "inquire", "symptom": [
             {"value": "fever", "checks": [{"type": "onset", "values": ["recent"]}]}]}]},
        {"speaker": "patient", "uttr_id": 3, "text": "No fever.", "keywords": [],
         "nlu": [{"intent": "inform", "slots": {"negative_symptom": [{"value": "fever"}]}}]},
        {"speaker": "doctor", "uttr_id": 4, "text": "Thanks, we will run tests.", "keywords": [],
         "actions": [{"action": "chit-chat"}]},
    ]
    patients = [u for u in utterances if u["speaker"] == "patient"]
    for utt, state in zip(patients, fold_states(u["nlu"] for u in patients)):
        utt["dialog_state"] = state
    return {"utterances": utterances}


def write_release(folder: Path, dialogs: dict | None = None, splits: dict | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    dialogs = dialogs if dialogs is not None else {str(n): invented_dialogue() for n in (1, 2, 3)}
    splits = splits if splits is not None else {"train": ["1"], "valid": ["2"], "test": ["3"]}
    (folder / "dialogs.json").write_text(json.dumps(dialogs, indent=1))
    for name, ids in splits.items():
        (folder / f"{name}_ids.json").write_text(json.dumps(ids))
    return folder


# --- runs and results ---------------------------------------------------------------------------
NLU_RESULTS = {
    "precision": 0.61, "recall": 0.52, "f1": 0.5614,
    "medical": {"precision": 0.7, "recall": 0.6, "f1": 0.6462, "tp": 6, "fp": 3, "fn": 4},
    "non_medical": {"precision": 0.3, "recall": 0.25, "f1": 0.2727, "tp": 1, "fp": 2, "fn": 3},
    "joint_accuracy": 0.4, "examples": 10, "parse_failures": 1, "judge": {"name": "exact"},
}
POL_RESULTS = {**NLU_RESULTS, "precision_at_k": {"1": 0.1, "4": 0.3, "8": 0.35, "inf": 0.5},
               "precision_at_k_mode": "exact"}
NLG_RESULTS = {"bleu2": 21.5, "bleu4": 9.25, "rouge1": 0.41, "rougeL": 0.39,
               "sacrebleu": {"score": 12.5, "signature": "nrefs:1|case:mixed|tok:13a"},
               "bertscore": None, "examples": 10, "parse_failures": 0}
RESULTS = {"nlu": NLU_RESULTS, "pol": POL_RESULTS, "nlg": NLG_RESULTS}


def write_run(path: Path, task: str = "nlu", model: str = "llama3-8b", family: str = "chat",
              splits: dict[str, dict] | None = None, **info) -> Path:
    """A run directory as training + evaluation leave it (weights are the caller's business)."""
    (path / "eval").mkdir(parents=True, exist_ok=True)
    run_info = {"model": model, "task": task, "family": family,
                "base_model": "meta-llama/Meta-Llama-3-8B-Instruct", "adapter": True,
                "quantization": "nf4", "global_step": 120, "train_runtime_s": 5400.0,
                "hardware": "1x test accelerator", "framework_versions": {"torch": "2.13.0"},
                "train_examples": 100, "truncated_examples": 2, "skipped_examples": 0,
                "dataset": str(path / "no-such-build"), "seed": 42, **info}
    (path / "run_info.json").write_text(json.dumps(run_info))
    (path / "recipe.yaml").write_text("# Trainer arguments\nlearning_rate: 1.0e-4\nlora_r: 32\nseed: 42\n")
    for split, results in (splits if splits is not None else {"test": RESULTS[task]}).items():
        (path / "eval" / split).mkdir(exist_ok=True)
        (path / "eval" / split / "results.json").write_text(
            json.dumps({"task": task, "split": split, **results}))
    return path


# --- published runs, the local Hub and the command line -----------------------------------------
PUBLISH_REPO = "local-tester/meditod-tiny-nlu"
HUB_DATASET = "local-tester/meditod"
STRANGER = "someone-else"  # a Hub user whose private repos every test token gets 404 for
CLIENT_TIMEOUT = 300  # guards against a hanging client, far above any normal run
TINY_WORDS = ["<unk>", "<pad>", "</s>", "doctor", "patient", "cough", "fever", "since", "when", "yes",
              "no"]


def tiny_llama_base(path: Path) -> Path:
    """A random 2-layer Llama with a word-level tokenizer: a local base model for adapters."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(TINY_WORDS)}, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>",
                                        pad_token="<pad>", eos_token="</s>")
    config = LlamaConfig(vocab_size=len(TINY_WORDS), hidden_size=32, intermediate_size=64,
                         num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                         pad_token_id=1, eos_token_id=2, bos_token_id=2)
    LlamaForCausalLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def make_run(folder: Path, base: Path, seed: int = 0, results: dict = NLU_RESULTS,
             task: str = "nlu") -> Path:
    """A finished, evaluated tiny LoRA run: adapter, tokenizer, recipe, run info, results."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(seed)
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(base),
                           LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"],
                                      init_lora_weights=False))
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(base).save_pretrained(folder)
    write_run(folder, task=task, model="tiny-llama", base_model=str(base), quantization=None,
              splits={"test": results, "test_ood": results})
    (folder / "eval" / "test" / "results.png").write_bytes(b"\x89PNG\r\n\x1a\n chart")
    (folder / "eval" / "test" / "predictions.jsonl").write_text('{"id": "d-1", "prediction": []}\n')
    (folder / "checkpoints" / "checkpoint-1").mkdir(parents=True)
    (folder / "checkpoints" / "checkpoint-1" / "optimizer.pt").write_bytes(b"state")
    return folder


def offline_env(tmp_path: Path) -> dict:
    """No token and an endpoint where nothing listens: any request would fail."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_"))},
            "HF_ENDPOINT": "http://127.0.0.1:9", "HF_HOME": str(tmp_path / "hf")}


def meditod(env: dict | None, *args: str, timeout: float = CLIENT_TIMEOUT
            ) -> subprocess.CompletedProcess:
    """`meditod ARGS` in a subprocess (huggingface_hub reads HF_ENDPOINT at import)."""
    return subprocess.run([sys.executable, "-m", "meditod_hub.cli", *args], cwd=PROJECT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def publish(env: dict, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return meditod(env, "publish", *args, timeout=timeout)


def push(env: dict, folder, repo: str, *flags: str, guard: float = CLIENT_TIMEOUT):
    """`python meditod.py push`: the dataset script, as the README runs it."""
    command = [sys.executable, str(PROJECT / "meditod.py"), "push", "--folder", str(folder),
               "--repo", repo, *flags]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=guard)


def card(front_matter: str) -> dict[str, bytes]:
    return {"README.md": f"---\n{front_matter}---\n\n# A model\n".encode()}


def publish_tiny_runs(hub, tmp_path: Path, base: Path) -> dict[str, str]:
    """One tiny LoRA run per task, declaring HUB_DATASET, published public with `meditod publish`."""
    env = hub.client_env(tmp_path)
    repos = {}
    for task in ("nlu", "pol", "nlg"):
        run = make_run(tmp_path / "published" / task, base, results=RESULTS[task], task=task)
        info = json.loads((run / "run_info.json").read_text())
        (run / "run_info.json").write_text(json.dumps({**info, "dataset": HUB_DATASET}))
        repos[task] = f"local-tester/meditod-tiny-{task}"
        done = meditod(env, "publish", "--run", str(run), "--repo", repos[task], "--public")
        assert done.returncode == 0, done.stderr[-2000:]
    return repos


def add_foreign_models(hub) -> None:
    """Cards the kit did not write: no model-index, a malformed one, and a private repo of
    another user (every token gets 404 for it)."""
    with hub.lock:
        for repo_id, meta, private in (
                ("other/no-index", f"datasets:\n- {HUB_DATASET}\n", False),
                ("other/bad-index", f"datasets:\n- {HUB_DATASET}\nmodel-index:\n- name: x\n"
                                    "  results:\n  - task: {type: text-generation}\n", False),
                (f"{STRANGER}/hidden", f"datasets:\n- {HUB_DATASET}\n", True)):
            repo = hub.create_repo("model", repo_id, private=private)
            hub.commit(repo, "main", "card", "", card(meta), {})


# --- the browser ---------------------------------------------------------------------------------
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def browser_or_skip() -> None:
    """Debian's chromium and playwright, or a skip (a failure under CI=true)."""
    import pytest

    problem = None
    if not CHROMIUM.exists():
        problem = f"no browser at {CHROMIUM} (apt-get install chromium)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            problem = "the playwright package is missing (pip install -e '.[test]')"
    if problem and os.environ.get("CI") == "true":
        pytest.fail(f"{problem}: CI must run the browser test")
    if problem:
        pytest.skip(problem)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_group(proc: subprocess.Popen, sig: int = signal.SIGTERM, grace: float = 30) -> None:
    """Stop a process started with `start_new_session=True` and all it started: `sig` to the
    group, SIGKILL after `grace` seconds, then SIGKILL to what it left running in the group."""
    for step in (sig, signal.SIGKILL):
        try:
            os.killpg(proc.pid, step)
        except ProcessLookupError:  # the group is gone: nothing left to stop
            break
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace)
    proc.wait()


# --- training ---------------------------------------------------------------------------------
def train_args(recipe: str, data: Path, model: Path, out: Path, *overrides: str) -> list[str]:
    return [str(RECIPES / recipe), f"--dataset_name={data}", f"--model_name_or_path={model}",
            f"--output_dir={out}", *overrides]


# --- the assistant ------------------------------------------------------------------------------
class Scripted:
    """Scripted predictors: every task answers `answer(task, row) -> (prediction, parse_ok)`;
    `seen` keeps each (task, row) in the order the predictors were asked."""

    def __init__(self, answer):
        self.answer, self.seen = answer, []

    def answers(self, task, rows):
        self.seen += [(task, row) for row in rows]
        out = []
        for row in rows:
            prediction, ok = self.answer(task, row)
            out.append(Prediction(row["id"], prediction, ok, json.dumps(prediction),
                                  None if ok else "scripted failure"))
        return out


class ScriptedPredictor:
    """One task's predictor over a `Scripted` answer (what `predictor.Predictor.predict` is)."""

    def __init__(self, script: Scripted, task: str):
        self.script, self.task = script, task

    def predict(self, rows, stream=None):
        records = self.script.answers(self.task, rows)
        if stream:  # the whole answer as one piece, as a streamed output ends
            stream(records[0].raw)
        return records


def scripted_assistant(answer, **kwargs) -> tuple[Assistant, Scripted]:
    script = Scripted(answer)
    return Assistant({task: ScriptedPredictor(script, task) for task in TASK_NAMES},
                     **kwargs), script


def echo_assistant() -> Assistant:
    """Every turn: cough understood, fever asked about, a two-line reply."""
    def answer(task, row):
        if task == "nlu":
            return [{"intent": "inform", "slots": {"positive_symptom": [{"value": "cough"}]}}], True
        if task == "pol":
            return [{"action": "inquire", "symptom": [{"value": "fever"}]}], True
        return "Any fever?\nAnd chills?", True
    return scripted_assistant(answer)[0]


def served_runs(folder: Path) -> list[str]:
    """`--nlu/--pol/--nlg` flags naming three runs whose weights a server holds: the runs give
    the family and budgets only (LoRA adapters of a base that is not here)."""
    from meditod_hub.models.runs import write_run_files

    flags = []
    for task in TASK_NAMES:
        write_run_files(folder / task, {"model": "m", "task": task, "family": "chat",
                                        "base_model": "b", "adapter": True}, {})
        (folder / task / "adapter_config.json").write_text(
            json.dumps({"base_model_name_or_path": "b"}))
        flags += [f"--{task}", str(folder / task)]
    return flags


def labels_of(opened: dict) -> list:
    """The labels of a dialogue the portal's API opened: NLU for patients, actions for doctors."""
    return [u["nlu"] if u["speaker"] == "patient" else u["actions"]
            for u in opened["dialogue"]["utterances"]]


def weights_digest(model) -> str:
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode() + tensor.detach().cpu().numpy().tobytes())
    return digest.hexdigest()


def utf8(text: str) -> str:
    """`text` as UTF-8 can carry it (pytest-xdist sends test ids and reports to its controller so):
    a lone surrogate, a failure case's bytes that are not UTF-8, as its escape."""
    return text.encode("utf-8", "backslashreplace").decode()


# --- the failure sweep ----------------------------------------------------------------------
PROGRESS = re.compile(r"\d+%\|")  # a progress bar's line (tqdm), not a message
NOTE = re.compile(r"\(.*\)|[^:]* \.\.\.")  # "(a note.)", "loading the models ...": not messages
SWEEP: list[tuple[str, str]] = []  # (case, outcome), printed by conftest's terminal summary
KINDS = ("clear", "traceback", "silent", "data lost or exposed", "hangs")


def digests(paths: Iterable) -> dict[str, str]:
    """sha256 of every file under `paths` (files or folders; absent ones count as empty)."""
    out = {}
    for root in paths:
        root = Path(root)
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file()) \
            if root.exists() else []
        out.update({str(f): hashlib.sha256(f.read_bytes()).hexdigest() for f in files})
    return out


def _exposed(secrets: Iterable[str], texts: Iterable[str], written: Iterable) -> bool:
    secrets = [s for s in secrets if s]
    if not secrets:
        return False
    if any(s in t for s in secrets for t in texts):
        return True
    for root in written:
        root = Path(root)
        for f in ([root] if root.is_file() else root.rglob("*") if root.is_dir() else []):
            if f.is_file() and any(s.encode() in f.read_bytes() for s in secrets):
                return True
    return False


@dataclass
class Outcome:
    code: int
    err: str
    out: str
    kind: str  # one of KINDS


def classify(code: int, out: str, err: str, changed: bool, exposed: bool) -> str:
    lines = [line for line in err.strip().splitlines()
             if line.strip() and not line.startswith(("warning:", "  "))
             and not PROGRESS.search(line) and not NOTE.fullmatch(line.strip())]
    if changed or exposed:
        return "data lost or exposed"
    if code == 0:
        return "silent"
    if not lines or "Traceback" in err or lines[-1].startswith("error: unexpected") \
            or not lines[-1].startswith("error: ") or len(lines) > 2:
        return "traceback"
    return "clear"


def run_case(name: str, main: Callable, argv: list, capsys, protect=(), secrets=(),
             written=(), deadline: float | None = None) -> Outcome:
    """Run one command in process and classify what a user would see. With `deadline`
    (seconds), a command still running then is a hang (its thread is left behind)."""
    before = digests(protect)
    if deadline is None:
        code = run_main(main, [str(a) for a in argv])
    else:
        import threading

        done: dict = {}
        worker = threading.Thread(target=lambda: done.update(
            code=run_main(main, [str(a) for a in argv])), daemon=True)
        worker.start()
        worker.join(deadline)
        if "code" not in done:
            captured = capsys.readouterr()
            SWEEP.append((name, "hangs"))
            return Outcome(-1, captured.err, captured.out, "hangs")
        code = done["code"]
    captured = capsys.readouterr()
    kind = classify(code, captured.out, captured.err, digests(protect) != before,
                    _exposed(secrets, (captured.out, captured.err), written))
    SWEEP.append((name, kind))
    return Outcome(code, captured.err, captured.out, kind)


def record(name: str, kind: str) -> None:
    """A case whose outcome a test established by other means (a subprocess, a browser)."""
    assert kind in KINDS, kind
    SWEEP.append((name, kind))


def expect(outcome: Outcome, *phrases: str, code: int | None = None) -> None:
    assert outcome.kind == "clear", (outcome.kind, outcome.err[-2000:], outcome.out[-500:])
    for phrase in phrases:
        assert phrase in outcome.err, outcome.err[-2000:]
    if code is not None:
        assert outcome.code == code, outcome.err


def sweep_table(sweep: list[tuple[str, str]]) -> list[str]:
    kinds = [kind for _, kind in sweep]
    return ["| cases | clear | tracebacks | silent | data lost or exposed | hangs |",
            "|---|---|---|---|---|---|",
            f"| {len(kinds)} | " + " | ".join(str(kinds.count(k)) for k in KINDS) + " |"]


# The columns the assistant builds for each module's row (its inputs, never a label).
INPUT_COLUMNS = {"nlu": ("id", "dialogue_id", "turn", "uttr_id", "context", "last_doctor_text",
                         "patient_text"),
                 "pol": ("id", "dialogue_id", "turn", "uttr_id", "context", "last_patient_text",
                         "state"),
                 "nlg": ("id", "dialogue_id", "turn", "uttr_id", "context", "last_patient_text",
                         "state", "actions", "action_types")}


# --- the failure sweep's shared inputs (tests/test_failure_*.py) ---------------------------

def command_argument_types(module) -> set[type]:
    """A command module's flag dataclasses: its module-level `*Arguments` dataclasses, and those
    it makes when it parses (`argument_types()`: a pipeline's flags, made from the stages)."""
    made = set(module.argument_types()) if hasattr(module, "argument_types") else set()
    return made | {v for v in vars(module).values() if isinstance(v, type)
                   and dataclasses.is_dataclass(v) and v.__name__.endswith("Arguments")}


def rows(data: Path, task: str, split: str) -> list[dict]:
    """A built dataset's rows of one task (or `dialogues`) and split."""
    return list(load_dataset(str(data), task, split=split))


def run_cli(main: Callable, argv: list[str], capsys) -> tuple[int, str, str]:
    """A command's `main` through `run_main`: its exit code and what it printed."""
    code = run_main(main, argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def dialogs_of(release: Path) -> dict:
    """A release folder's dialogs.json, to damage."""
    return json.loads((release / "dialogs.json").read_text())


def edit_dialogs(release: Path, change) -> None:
    """Rewrite a release's dialogs.json after `change(dialogs)`."""
    dialogs = dialogs_of(release)
    change(dialogs)
    (release / "dialogs.json").write_text(json.dumps(dialogs))


def first_slot(dialogs: dict) -> dict:
    """The first slot entry of dialogue 1's first annotated utterance."""
    return dialogs["1"]["utterances"][1]["nlu"][0]["slots"]["positive_symptom"][0]


def eval_args(data, preds, out, *extra):
    """`meditod evaluate`'s argv for NLU predictions of the test split."""
    return [str(a) for a in ("--task", "nlu", "--data", data, "--split", "test", "--predictions",
                             preds, "--out", out, *extra)]


def evaluated_run(path: Path) -> Path:
    """A run folder with adapter files (not a loadable model): what `publish` checks first."""
    run = write_run(path)
    (run / "adapter_config.json").write_text("{}")
    (run / "adapter_model.safetensors").write_bytes(b"x")
    return run


TINY_NLU_RECIPE = (Path(__file__).resolve().parent.parent / "recipes" / "tiny-llama" / "nlu.yaml").read_text()
