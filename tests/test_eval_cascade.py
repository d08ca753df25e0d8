"""Cascaded evaluation: scheduling, both columns, the attribution, the reports and the card.

Offline, CPU. Scripted backends pin what each column must hold; the tiny trained runs run the
real command on the embedded synthetic sample.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from chat_server import ChatServer
from datasets import load_dataset
from helpers import run_case, scripted_assistant, served_runs

from meditod_hub.commands.eval_cascade import main as eval_cascade
from meditod_hub.evaluation.eval_cascade import EvalCascadeArguments, card_section, evaluate_cascade
from meditod_hub.files import RECORD
from meditod_hub.models.cascade import pipeline_arguments, stages
from meditod_hub.models.runs import RunError

pytestmark = pytest.mark.usefixtures("one_thread")

SCRIPTED = pipeline_arguments(stages())(nlu="scripted/nlu", pol="scripted/pol", nlg="scripted/nlg")


def gold(data, task, split="train"):
    return {r["id"]: r for r in load_dataset(str(data), task, split=split)}


def oracle(data, forget_nlu: bool):
    """Gold answers, except: NLU answers nothing when `forget_nlu`; POL is right only when it
    sees the gold state; NLG is right only with the gold actions."""
    nlu, nlg = gold(data, "nlu"), gold(data, "nlg")

    def answer(task, row):
        if task == "nlu":
            return ([] if forget_nlu else nlu[row["id"]]["nlu"]), True
        right = nlg[row["id"]]
        if task == "pol":
            return (right["actions"] if row["state"] == right["state"] else []), True
        return (right["response"] if row["actions"] == right["actions"] else "Hm."), True
    return answer


def run(tmp_path, data, forget_nlu):
    assistant, backend = scripted_assistant(oracle(data, forget_nlu))
    args = EvalCascadeArguments(data=str(data), split="train", out=str(tmp_path / "out"))
    return evaluate_cascade(SCRIPTED, args, assistant), backend


def test_gold_nlu_makes_both_columns_equal_and_generates_each_row_once(embedded_build, tmp_path):
    results, backend = run(tmp_path, embedded_build, forget_nlu=False)
    pol_rows = len(gold(embedded_build, "pol"))
    assert [task for task, _ in backend.seen].count("pol") == pol_rows  # no duplicate inputs
    assert [task for task, _ in backend.seen].count("nlg") == pol_rows
    for task in ("pol", "nlg"):
        assert results[task]["gold_input"] == results[task]["cascaded"]
    assert results["pol"]["cascaded"]["f1"] == 1.0 and results["nlu"]["f1"] == 1.0
    assert results["attribution"]["pol_rows_state_differs"] == 0
    assert results["attribution"]["nlg_rows_actions_differ"] == 0


def test_a_forgetful_nlu_is_blamed_for_the_pol_and_nlg_drop(embedded_build, tmp_path):
    results, _ = run(tmp_path, embedded_build, forget_nlu=True)
    pol = gold(embedded_build, "pol")
    differs = sum(r["state"] != {} for r in pol.values())
    a = results["attribution"]
    assert a["pol_rows"] == len(pol) and a["pol_rows_state_differs"] == differs > 0
    assert a["pol_errors_gold_input"] == 0
    wrong = sum(r["state"] != {} and r["actions"] != [] for r in pol.values())
    assert a["pol_errors_cascaded"] == a["pol_errors_cascaded_state_differs"] == wrong
    assert a["nlg_rows_actions_differ"] == wrong
    assert results["pol"]["gold_input"]["f1"] == 1.0 > results["pol"]["cascaded"]["f1"]
    assert results["nlg"]["gold_input"]["bleu4"] > results["nlg"]["cascaded"]["bleu4"]

    out = Path(results["out"])
    md = (out / "results.md").read_text()
    assert "| module | metric | gold input | cascaded |" in md
    assert f"- POL: {wrong}/{wrong} (100.0%) of the cascaded POL errors" in md
    assert f"- NLG: {wrong}/{len(pol)} " in md
    assert (out / "results.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((out / "results.json").read_text())["attribution"] == a
    counts = {p.name: len(p.read_text().splitlines()) for p in (out / "predictions").iterdir()
              if p.name != RECORD}  # the output guard's record of what eval-cascade wrote
    assert counts == {"nlu.jsonl": len(gold(embedded_build, "nlu")),
                      **{f"{t}.{c}.jsonl": len(pol) for t in ("pol", "nlg")
                         for c in ("gold_input", "cascaded")}}
    assert not list(out.rglob("*.partial"))


def test_an_endpoint_that_never_answers_stops_at_the_timeout(embedded_build, tmp_path, capsys):
    with ChatServer(faults=["hang"] * 50) as server:
        start = time.monotonic()
        outcome = run_case("eval-cascade at a server that never answers", eval_cascade,
                           [*served_runs(tmp_path / "runs"), "--endpoint", server.url,
                            "--timeout", "2", "--data", embedded_build, "--split", "train",
                            "--limit", "1", "--out", tmp_path / "out"], capsys)
        seconds = time.monotonic() - start
    assert outcome.code == 1 and outcome.kind == "clear" and seconds < 60, (seconds, outcome)
    assert "not done within --timeout 2 s" in outcome.err


@pytest.fixture(scope="module")
def cascade_out(tiny_runs, embedded_build, tmp_path_factory) -> Path:  # noqa: F811
    out = tmp_path_factory.mktemp("cascade") / "train"
    assert eval_cascade(["--nlu", str(tiny_runs / "nlu"), "--pol", str(tiny_runs / "pol"),
                         "--nlg", str(tiny_runs / "nlg"), "--data", str(embedded_build),
                         "--split", "train", "--limit", "2", "--out", str(out)]) == 0
    return out


def test_the_command_on_the_tiny_runs_writes_both_columns(cascade_out):
    results = json.loads((cascade_out / "results.json").read_text())
    assert results["dialogues"] == 2
    for task in ("pol", "nlg"):
        assert set(results[task]) == {"gold_input", "cascaded"}
        assert results[task]["cascaded"]["examples"] == results["attribution"][f"{task}_rows"] > 0
    assert results["nlu"]["f1"] > 0.5, "the first lines of memorised dialogues parse"
    assert all(m["run_info_sha256"] for m in results["models"].values())
    assert str(cascade_out.parent) not in (cascade_out / "results.json").read_text()


def test_the_card_of_a_run_in_the_cascade_gets_its_table(cascade_out, tiny_runs, tmp_path):
    from helpers import POL_RESULTS

    from meditod_hub.publishing.publish import dry_run

    run = tmp_path / "pol"
    shutil.copytree(tiny_runs / "pol", run, ignore=shutil.ignore_patterns("checkpoints"))
    (run / "eval" / "test").mkdir(parents=True)
    (run / "eval" / "test" / "results.json").write_text(
        json.dumps({"task": "pol", "split": "test", **POL_RESULTS}))
    listing = dry_run(run, "org/meditod-tiny-llama-pol", cascade=cascade_out)
    assert "eval/cascade/results.json" in listing and "eval/cascade/results.png" in listing
    card = listing[listing.index("---"):]
    assert "### In a cascade" in card and "| module | metric | gold input | cascaded |" in card
    assert "| POL | Overall F1 |" in card and "| NLG | ROUGE-L |" in card
    assert "- POL: " in card and "- NLG: " in card

    with pytest.raises(RunError, match="is not the run"):
        card_section(cascade_out, tiny_runs / "nlg", "pol")
    with pytest.raises(RunError, match="not a cascaded evaluation"):
        card_section(tmp_path, run, "pol")
