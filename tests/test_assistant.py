"""The assistant: NLU -> state -> POL -> NLG per turn, its rows, its failure paths, its models.

Offline, CPU. Scripted backends (answers chosen by the test) pin the pipeline's logic; tiny
models trained here on the embedded synthetic sample (`tiny_runs`, shared with the chat, app
and cascade tests) run it for real. No MediTOD text: only the project's synthetic sample.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import INPUT_COLUMNS, rows, scripted_assistant, weights_digest

from meditod_hub.apps.assistant import MAX_PATIENT_CHARS
from meditod_hub.data.tasks import FEATURES
from meditod_hub.errors import UsageError
from meditod_hub.models.predictor import ModelSpec, load_predictor

pytestmark = pytest.mark.usefixtures("one_thread")
TASKS = ("nlu", "pol", "nlg")
SYMPTOM = [{"intent": "inform", "slots": {"positive_symptom": [{"value": "cough"}]}}]



def gold_answers(data, split="train"):
    by_id = {task: {r["id"]: r for r in rows(data, task, split)} for task in TASKS}
    column = {"nlu": "nlu", "pol": "actions", "nlg": "response"}
    return lambda task, row: (by_id[task][row["id"]][column[task]], True)


# --- rows: built exactly like the dataset's ---------------------------------------------------
def test_a_replayed_dialogue_gives_the_models_the_datasets_rows(embedded_build):
    """Gold answers from every module: each row a model sees equals the dataset's row on every
    input column (so the formats build the same model input), and the state is the gold one."""
    assistant, backend = scripted_assistant(gold_answers(embedded_build))
    dialogue = [r for r in rows(embedded_build, "dialogues", "train") if r["dialogue_id"] == "9001"][0]
    utterances = dialogue["utterances"]
    conversation = assistant.new_conversation("9001", opening=utterances[0]["text"])
    turns = [assistant.respond(conversation, u["text"]) for u in utterances
             if u["speaker"] == "patient"]
    gold = {task: [r for r in rows(embedded_build, task, "train") if r["dialogue_id"] == "9001"]
            for task in TASKS}
    for task in TASKS:
        seen = [row for t, row in backend.seen if t == task]
        assert len(seen) == len(gold[task]) > 3
        for mine, theirs in zip(seen, gold[task]):
            assert {k: mine[k] for k in INPUT_COLUMNS[task]} == \
                   {k: theirs[k] for k in INPUT_COLUMNS[task]}, (task, theirs["id"])
            assert set(INPUT_COLUMNS[task]) <= set(FEATURES[task])
    assert [t.state for t in turns] == [r["state"] for r in gold["pol"]]
    assert [t.reply for t in turns] == [r["response"] for r in gold["nlg"]]
    assert all(t.nlu.used and t.pol.used and t.nlg.used and not t.notes for t in turns)


# --- failure paths: reported on the turn, never an exception ------------------------------------
def test_an_nlu_output_that_does_not_parse_leaves_the_state_unchanged():
    answers = iter([(SYMPTOM, True), ([], False), ([{"intent": 7}], True)])

    def answer(task, row):
        if task == "nlu":
            return next(answers)
        return ([{"action": "inquire"}], True) if task == "pol" else ("Since when?", True)

    assistant, _ = scripted_assistant(answer)
    conversation = assistant.new_conversation()
    first = assistant.respond(conversation, "I cough.")
    assert first.state == {"positive_symptom": [{"value": "cough"}]} and first.state_changed
    for text in ("garbled", "malformed"):  # did not parse; parsed but unusable (label_errors)
        turn = assistant.respond(conversation, text)
        assert turn.state == first.state and not turn.state_changed
        assert not turn.nlu.used
        assert any(n.startswith("NLU output unusable") and "state is unchanged" in n
                   for n in turn.notes)
        assert turn.reply == "Since when?"
    assert conversation.earlier_labels[f"chat-{conversation.utterances[3]['uttr_id']}"] is None


def test_unusable_actions_reach_nlg_as_none_and_an_empty_reply_is_said_so():
    def answer(task, row):
        if task == "nlu":
            return [], True
        if task == "pol":
            return [{"action": "inquire", "symptom": "not a list"}], True
        return ("", False) if not row["actions"] else ("unexpected", True)

    assistant, backend = scripted_assistant(answer)
    turn = assistant.respond(assistant.new_conversation(), "hello")
    assert turn.actions == [] and not turn.pol.used
    assert [row["actions"] for task, row in backend.seen if task == "nlg"] == [[]]
    assert turn.reply == "(no reply: the NLG model's output was empty)" and not turn.nlg.used
    assert any("POL output unusable" in n for n in turn.notes)
    assert any("NLG output did not parse" in n for n in turn.notes)


def test_a_huge_line_is_cut_and_reported_and_odd_lines_are_answered():
    assistant, backend = scripted_assistant(
        lambda task, row: ([], True) if task != "nlg" else ("Go on.", True))
    conversation = assistant.new_conversation()
    for text in ("", "x" * 20_000, "Tengo tos desde hace una semana", "🤒🤧😷", "咳嗽三天了"):
        turn = assistant.respond(conversation, text)
        assert turn.reply == "Go on."
        assert len(turn.patient_text) == min(len(text), MAX_PATIENT_CHARS)
        assert turn.cut_chars == max(0, len(text) - MAX_PATIENT_CHARS)
        assert bool(turn.cut_chars) == any("was cut" in n for n in turn.notes)
    longest = max(len(row.get("patient_text") or "") for _, row in backend.seen)
    assert longest == MAX_PATIENT_CHARS


def test_conversations_in_one_batch_stay_apart():
    def answer(task, row):
        if task == "nlu":
            return [{"intent": "inform", "slots": {"positive_symptom": [
                {"value": row["patient_text"]}]}}], True
        return ([{"action": "chit-chat"}], True) if task == "pol" else (row["context"][-1]["text"],
                                                                       True)

    assistant, backend = scripted_assistant(answer)
    a, b = assistant.new_conversation("a"), assistant.new_conversation("b")
    assistant.respond_many([a, b], ["fever", "rash"])
    turns = assistant.respond_many([a, b], ["chills", "itch"])
    assert [len([1 for t, _ in backend.seen if t == task]) for task in TASKS] == [4, 4, 4]
    assert [e["value"] for e in turns[0].state["positive_symptom"]] == ["fever", "chills"]
    assert [e["value"] for e in turns[1].state["positive_symptom"]] == ["rash", "itch"]
    assert [t.reply for t in turns] == ["chills", "itch"]
    with pytest.raises(ValueError, match="one patient line"):
        assistant.respond_many([a, a], ["x", "y"])


# --- sources: run folders, model folders, Hub ids at a revision, endpoints ------------------------
def test_sources_that_cannot_work_are_refused_in_one_line(tiny_models, tiny_runs, tmp_path):  # noqa: F811
    with pytest.raises(UsageError, match="is a URL: give the run folder or Hub id as the model"):
        load_predictor(ModelSpec("http://127.0.0.1:9/v1"), "nlu")
    with pytest.raises(UsageError, match="has no run_info.json: pass --family .* --nlu_family"):
        load_predictor(ModelSpec(str(tiny_models / "tiny-llama")), "nlu")
    with pytest.raises(UsageError, match="trained for pol, not nlu"):
        load_predictor(ModelSpec(str(tiny_runs / "pol")), "nlu")
    with pytest.raises(UsageError, match="revision only applies to Hub ids"):
        load_predictor(ModelSpec(str(tiny_runs / "nlu"), revision="main"), "nlu")
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError, match="is a file"):
        load_predictor(ModelSpec(str(tmp_path / "file")), "nlu")


HUB_CLIENT = """
import json, sys
from meditod_hub.errors import MeditodError
from meditod_hub.models.predictor import ModelSpec, load_predictor
from helpers import weights_digest
for repo, revision, family in json.loads(sys.argv[1]):
    try:
        backend = load_predictor(ModelSpec(repo, family=family, revision=revision), "nlu")
    except MeditodError as exc:
        print(json.dumps({"error": str(exc)}))
        continue
    print(json.dumps({"folder": backend.folder, "type": type(backend.model).__name__,
                      "weights": weights_digest(backend.model)}))
"""


def _load_from_hub(hub_server, tmp_path, *loads) -> list[dict]:
    """Load each (repo, revision, family) in one client process (HF_ENDPOINT is read at import)."""
    result = subprocess.run([sys.executable, "-c", HUB_CLIENT, json.dumps(loads)],
                            env=hub_server.client_env(tmp_path), capture_output=True, text=True,
                            timeout=300, cwd=Path(__file__).parent)
    assert result.returncode == 0, result.stderr[-3000:]
    return [json.loads(line) for line in result.stdout.strip().splitlines()[-len(loads):]]


def test_hub_ids_load_at_their_revision_and_adapters_bring_their_base(
        hub_server, tiny_models, tiny_runs, tmp_path):  # noqa: F811
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    hub = hub_server
    with hub.lock:
        repo = hub.create_repo("model", "org/tiny-nlu", private=True)
    files = lambda folder: {p.name: p.read_bytes() for p in Path(folder).iterdir()  # noqa: E731
                            if p.is_file() and p.name != "training_args.bin"}
    with hub.lock:
        hub.commit(repo, "main", "trained run", "", files(tiny_runs / "nlu"), {})
        repo.branches["v0"] = repo.branches["main"]
        hub.commit(repo, "main", "untrained base", "", files(tiny_models / "tiny-llama"), {})

    base = AutoModelForCausalLM.from_pretrained(tiny_models / "tiny-llama")
    adapter = get_peft_model(base, LoraConfig(r=4, task_type="CAUSAL_LM",
                                              target_modules=["q_proj", "v_proj"]))
    adapter.save_pretrained(tmp_path / "adapter")
    AutoTokenizer.from_pretrained(tiny_models / "tiny-llama").save_pretrained(tmp_path / "adapter")
    with hub.lock:
        adapter_repo = hub.create_repo("model", "org/tiny-adapter", private=True)
        hub.commit(adapter_repo, "main", "adapter", "", files(tmp_path / "adapter"), {})

    at_v0, at_main, adapted, missing = _load_from_hub(
        hub, tmp_path, ("org/tiny-nlu", "v0", None),  # family and task from its run_info.json
        ("org/tiny-nlu", None, "chat"), ("org/tiny-adapter", None, "chat"),
        ("org/tiny-nlu", "no-such", "chat"))
    assert at_v0["folder"].endswith(repo.branches["v0"]) and at_v0["weights"] != at_main["weights"]
    assert at_v0["weights"] == weights_digest(load_predictor(ModelSpec(str(tiny_runs / "nlu")),
                                                             "nlu").model)
    assert adapted["type"].startswith("Peft")
    assert missing["error"].startswith("cannot download org/tiny-nlu at revision no-such")


def test_the_assistant_says_what_each_module_was_trained_on(tmp_path, embedded_build):
    """From each run's data, proven again; a Hub id or a server is never claimed as MediTOD."""
    from helpers import write_run

    from meditod_hub.apps.assistant import trained_on
    from meditod_hub.data import proof
    from meditod_hub.models.predictor import ModelSpec

    runs = {t: write_run(tmp_path / t, task=t, **proof.record(embedded_build))
            for t in ("nlu", "pol", "nlg")}
    assert trained_on({t: ModelSpec(str(r)) for t, r in runs.items()}) == (
        "NLU, POL and NLG trained on the kit's embedded synthetic sample (10 dialogues, 136 "
        "utterances, invented; not MediTOD)")
    mixed = trained_on({"nlu": ModelSpec(str(runs["nlu"])), "pol": ModelSpec("org/pol-model"),
                        "nlg": ModelSpec("x", endpoint="http://127.0.0.1:1/v1",
                                         served_model="nlg")})
    assert mixed.startswith("NLU trained on the kit's embedded synthetic sample") and mixed.endswith(
        "; POL trained on what the card of org/pol-model says; NLG trained on what its server's "
        "model 'nlg' was trained on")
