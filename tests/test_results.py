"""`meditod results`: the paper's tables beside local runs and the Hub's published models.

Hub side against the local Hub-compatible server (tests/hub_server.py; clients in subprocesses,
huggingface_hub reads HF_ENDPOINT at import): three tiny runs published with `meditod publish`,
plus cards without a model-index, with a malformed one, and a private repo of another user.
Local side: a trained, predicted and evaluated tiny run, through `make results`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import HUB_DATASET, RESULTS, STRANGER, add_foreign_models, meditod, publish_tiny_runs, write_run

from meditod_hub.commands import results as results_cmd
from meditod_hub.data import paper_results
from meditod_hub.errors import run_main
from meditod_hub.evaluation import results as R
from meditod_hub.files import RECORD

PROJECT = Path(__file__).resolve().parent.parent
def test_hub_models_appear_beside_the_papers_rows_and_unreadable_ones_are_listed(tmp_path,
                                                                                  tiny_base):  # noqa: F811
    from hub_server import WRITE_TOKEN, HubServer

    with HubServer(strangers=(STRANGER,)) as hub:
        repos = publish_tiny_runs(hub, tmp_path, tiny_base)
        add_foreign_models(hub)
        out = tmp_path / "out"
        done = meditod(hub.client_env(tmp_path), "results", "--hub_dataset", HUB_DATASET,
                       "--hub_models", f"{STRANGER}/hidden", "--out", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    assert WRITE_TOKEN not in done.stdout + done.stderr
    report = json.loads((out / "results.json").read_text())
    rows = [r for t in report["tables"] for r in t["rows"]]
    hub_rows = {(r["system"], r["task"], r["split"]): r for r in rows if r["source"] == "hub"}
    assert set(hub_rows) == {(repos[t], t, s) for t in repos for s in ("test", "test_ood")}
    nlu = hub_rows[(repos["nlu"], "nlu", "test")]
    assert nlu["scores"]["f1"] == RESULTS["nlu"]["f1"]
    assert nlu["scores"]["medical.f1"] == RESULTS["nlu"]["medical"]["f1"]
    assert hub_rows[(repos["pol"], "pol", "test")]["scores"]["precision_at_k.4"] == 0.3
    assert hub_rows[(repos["nlg"], "nlg", "test")]["scores"]["bleu4"] == RESULTS["nlg"]["bleu4"]
    assert nlu["link"] == f"{hub.url}/{repos['nlu']}" and nlu["family"] == "chat"
    assert nlu["setting"] == "supervised" and nlu["constrained"] is False
    paper = [r for r in rows if r["source"] == "paper"]
    assert len(paper) == 48 and {r["setting"] for r in paper} == {"supervised", "in-context"}
    unread = {u["repo"]: u["reason"] for u in report["unread"]}
    assert unread == {"other/no-index": "no model-index in its card",
                      "other/bad-index": unread["other/bad-index"],
                      f"{STRANGER}/hidden": "not visible to this token (private, or deleted)"}
    assert unread["other/bad-index"].startswith("malformed model-index")
    # the tables, side by side: the paper's Llama3 8B and the published tiny run
    text = (out / "results.md").read_text()
    assert text == done.stdout.rstrip("\n") + "\n"
    nlu_table = text.split("## NLU, test (")[1].split("## ")[0]
    assert "| Llama3 8B | MediTOD | supervised | paper | no | chat | 0.7230 | 0.7050 | 0.7139 |" \
        in nlu_table
    assert f"| [{repos['nlu']}]({hub.url}/{repos['nlu']}) | MediTOD | supervised | hub | no | chat |" \
        in nlu_table and "| 0.5614 |" in nlu_table
    assert "- [other/no-index](" in text and f"- [{STRANGER}/hidden](" in text
    lines = (out / "results.csv").read_text().splitlines()
    assert len(lines) == 1 + len(rows) + 3
    for task in ("nlu", "pol", "nlg"):
        assert (out / f"{task}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_dead_hub_is_one_line_and_writes_nothing(tmp_path):
    from hub_server import unused_endpoint

    with unused_endpoint() as url:
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("HF_")},
               "HF_ENDPOINT": url, "HF_HOME": str(tmp_path / "hf")}
        done = meditod(env, "results", "--hub_dataset", HUB_DATASET, "--timeout", "5",
                       "--out", str(tmp_path / "out"))
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert last.startswith(f"error: list the Hub models trained on {HUB_DATASET}: not done within "
                           "--timeout 5 s"), last
    assert not (tmp_path / "out").exists()


def test_local_results_are_found_and_placed_by_what_surrounds_them(tmp_path):
    runs = tmp_path / "runs"
    write_run(runs / "tiny-llama" / "nlu", task="nlu", model="tiny-llama",
              splits={"test": {**RESULTS["nlu"], "constrained": True}})
    fewshot = runs / "fewshot" / "gpt-4-turbo-2024-04-09" / "pol"
    fewshot.mkdir(parents=True)
    (fewshot / "results.json").write_text(json.dumps({"task": "pol", "split": "test",
                                                      **RESULTS["pol"]}))
    (fewshot / "fewshot_info.json").write_text(json.dumps({
        "model": "gpt-4-turbo-2024-04-09", "shots": 3, "paper_row": "in-context-gpt-4-turbo"}))
    cascade = runs / "cascade" / "tiny-llama" / "test"
    cascade.mkdir(parents=True)
    (cascade / "results.json").write_text(json.dumps({
        "split": "test", "models": {t: {"label": f"tiny-{t}"} for t in ("nlu", "pol", "nlg")},
        "nlu": RESULTS["nlu"], **{t: {"gold_input": RESULTS[t], "cascaded": {
            **RESULTS[t], "f1": 0.1, "bleu4": 1.5}} for t in ("pol", "nlg")}}))
    (runs / "broken").mkdir()
    (runs / "broken" / "results.json").write_text("{not json")
    rows, skipped = R.local_rows([runs])
    by = {(r.system, r.task, r.setting): r for r in rows}
    assert set(by) == {("tiny-llama", "nlu", "supervised"), ("gpt-4-turbo-2024-04-09", "pol",
                                                              "in-context"),
                       ("tiny-pol", "pol", "cascaded"), ("tiny-nlg", "nlg", "cascaded")}
    assert by["tiny-llama", "nlu", "supervised"].constrained is True
    assert by["tiny-llama", "nlu", "supervised"].scores["non_medical.f1"] == 0.2727
    shot = by["gpt-4-turbo-2024-04-09", "pol", "in-context"]
    assert (shot.family, shot.note, shot.constrained) == ("gpt", "3 retrieved exemplars", False)
    assert by["tiny-pol", "pol", "cascaded"].scores["f1"] == 0.1
    assert by["tiny-nlg", "nlg", "cascaded"].scores["bleu4"] == 1.5
    assert len(skipped) == 1 and str(runs / "broken" / "results.json") in skipped[0]
    with pytest.raises(R.UsageError, match="no such folder"):
        R.local_rows([tmp_path / "nowhere"])


def test_a_run_with_a_damaged_run_info_is_skipped_and_named(tmp_path, capsys):
    """(before: listed under the run folder's name, "nlu", with no warning)"""
    runs = tmp_path / "runs"
    write_run(runs / "tiny-llama" / "nlu", model="tiny-llama")
    broken = write_run(runs / "other" / "nlu", model="other")
    (broken / "run_info.json").write_text('{"model": "oth')
    assert run_main(results_cmd.main, ["--runs", str(runs), "--out", str(tmp_path / "out")]) == 0
    captured = capsys.readouterr()
    [skipped] = [line for line in captured.err.splitlines() if line.startswith("skipped: ")]
    assert skipped.startswith(f"skipped: {broken / 'run_info.json'}: invalid JSON at line 1")
    assert skipped.endswith(f"its results {broken / 'eval' / 'test' / 'results.json'} are not "
                            "listed until it is fixed")
    assert "| tiny-llama |" in captured.out and "| nlu |" not in captured.out
    assert "1 local and 0 Hub rows" in captured.err


def test_a_runs_folder_with_no_results_file_is_said_never_a_silent_empty_table(tmp_path, capsys):
    """Before: `0 local and 0 Hub rows` and nothing else, for a mistyped or unevaluated folder."""
    (tmp_path / "runs" / "unevaluated").mkdir(parents=True)
    assert run_main(results_cmd.main, ["--runs", str(tmp_path / "runs"), "--out",
                                       str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert f"skipped: --runs {tmp_path / 'runs'}: no results file under it" in err, err


@pytest.mark.usefixtures("one_thread")
def test_make_results_prints_a_trained_runs_f1_beside_the_papers_rows(tiny_runs, embedded_build,
                                                                     tmp_path):
    from meditod_hub.commands import evaluate, predict

    run = tmp_path / "runs" / "tiny-llama" / "nlu"
    shutil.copytree(tiny_runs / "nlu", run, ignore=shutil.ignore_patterns("checkpoints", "eval"))
    common = ["--data", str(embedded_build), "--split", "test"]
    predictions = run / "eval" / "test" / "predictions.jsonl"
    assert predict.main(["--model_path", str(run), "--task", "nlu", *common,
                         "--out", str(predictions)]) == 0
    assert evaluate.main(["--task", "nlu", *common, "--predictions", str(predictions),
                          "--out", str(run / "eval" / "test" / "results.json")]) == 0
    f1 = json.loads((run / "eval" / "test" / "results.json").read_text())["f1"]
    constrained = predictions.with_name("predictions-constrained.jsonl")  # a second setting
    constrained.write_text("".join(json.dumps({**json.loads(line), "constrained": True}) + "\n"
                                   for line in predictions.read_text().splitlines()))
    assert evaluate.main(["--task", "nlu", "--predictions", str(constrained)]) == 0
    out = tmp_path / "out"
    done = subprocess.run(["make", "-s", "-o", "setup", "results", f"RUNS={tmp_path / 'runs'}",
                           f"OUT={out}"], cwd=PROJECT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    table = done.stdout.split("## NLU, test (")[1].split("## ")[0]
    lines = [line for line in table.splitlines() if line.startswith("| ")][1:]  # less the header
    assert len(lines) == 12  # the paper's 5 supervised and 7 in-context rows only
    assert [line.split(" | ")[2] for line in lines[5:12]] == ["in-context"] * 7
    # before: the synthetic-sample run sat under "NLU, test (respiratory, in-domain)" beside
    # the paper's rows, with no dataset column; now it has a table of its own that says what it is
    own = done.stdout.split("## NLU, test split of synthetic sample (embedded), 10 dialogues: not "
                            "MediTOD, not comparable with the paper's rows")[1].split("## ")[0]
    lines = [line for line in own.splitlines() if line.startswith("| ")][1:]
    assert [line.split(" | ")[:5] for line in lines] == [
        ["| tiny-llama", "synthetic sample (embedded), 10 dialogues", "supervised", "local", c]
        for c in ("yes", "no")]  # the constrained results beside, not over, the free ones
    assert f" {f1:.4f} |" in lines[1]
    assert {p.name for p in out.iterdir()} == {"results.md", "results.csv", "results.json",
                                               "nlu.png", "pol.png", "nlg.png", RECORD}


def test_the_evaluation_page_and_dataset_card_show_the_generated_headline_table(
        embedded_release, embedded_build, tmp_path):
    """A MediTOD build's card shows the paper's table; a synthetic build's card does not."""
    import shutil

    from meditod_hub.data.build import BuildArguments, build

    table = paper_results.headline_markdown()
    page = (PROJECT / "docs" / "evaluation.md").read_text()
    generated = page.split("tests/test_results.py checks this copy -->\n")[1]
    assert generated.split("\n<!-- end of generated table -->")[0] == table
    shutil.copytree(embedded_release, tmp_path / "release")  # renamed: no longer the sample
    build(BuildArguments(source=tmp_path / "release", out=tmp_path / "built", name="Renamed"))
    assert table in (tmp_path / "built" / "README.md").read_text()
    assert table not in (embedded_build / "README.md").read_text()
    assert "| Llama3 8B | supervised | 0.7139 | 0.2389 | 17.50 | 0.5240 | 0.2236 | 13.90 |" in table
    assert table.count("| in-context |") == 7
