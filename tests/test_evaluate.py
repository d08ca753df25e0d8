"""`meditod evaluate` on the authors' sample built with `meditod build`, and the local
`evaluate` modules. No network (evaluate loads the modules from local folders).

Predictions files are written to tmp_path only.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from meditod_hub.commands.evaluate import main
from meditod_hub.data.dataset import load_split
from meditod_hub.data.tasks import TASKS
from meditod_hub.errors import run_main

PROJECT_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def gold(sample_build):
    return {task: load_split(sample_build, task, "test") for task in TASKS}


def write_predictions(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def gold_records(rows: list[dict], task: str) -> list[dict]:
    return [{"id": r["id"], "prediction": r[TASKS[task].target_column]} for r in rows]


def run(sample_build, task, predictions, out, *extra):
    return run_main(main, ["--task", task, "--data", str(sample_build), "--split", "test",
                           "--predictions", str(predictions), "--out", str(out), *extra])


@pytest.mark.parametrize("task", ["nlu", "pol"])
def test_gold_predictions_score_one(sample_build, gold, task, tmp_path):
    predictions = write_predictions(tmp_path / "p.jsonl", gold_records(gold[task], task))
    assert run(sample_build, task, predictions, tmp_path / "out" / "results.json") == 0
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    for key in ("precision", "recall", "f1", "joint_accuracy"):
        assert results[key] == 1.0
    for cls in ("medical", "non_medical"):
        assert (results[cls]["precision"], results[cls]["recall"], results[cls]["f1"]) == (1.0, 1.0, 1.0)
    assert (results["examples"], results["parse_failures"]) == (74, 0)
    assert results["judge"] == {"name": "exact"}
    if task == "pol":
        assert results["precision_at_k"] == {"1": 1.0, "4": 1.0, "8": 1.0, "inf": 1.0}
    table = (tmp_path / "out" / "results.md").read_text()
    assert "| symptom | 1.0000" in table
    assert (tmp_path / "out" / "results.png").read_bytes()[:4] == b"\x89PNG"


def test_gold_responses_score_full_marks(sample_build, gold, tmp_path):
    predictions = write_predictions(tmp_path / "p.jsonl", gold_records(gold["nlg"], "nlg"))
    assert run(sample_build, "nlg", predictions, tmp_path / "results.json") == 0
    results = json.loads((tmp_path / "results.json").read_text())
    assert (results["bleu2"], results["rouge1"], results["rougeL"]) == (100.0, 1.0, 1.0)
    assert results["bleu4"] > 99  # NLTK's short-reply quirk, see test_metrics_nlg
    assert results["sacrebleu"]["score"] == pytest.approx(100)
    assert results["bertscore"] is None
    assert (tmp_path / "results.md").exists() and (tmp_path / "results.png").exists()


def test_unparsed_predictions_are_counted(sample_build, gold, tmp_path):
    records = gold_records(gold["nlg"], "nlg")
    records[0] = {**records[0], "parse_ok": False, "raw": "<garbled>"}
    records[1] = {**records[1], "prediction": {"not": "text"}, "parse_ok": False}  # ignored
    assert run(sample_build, "nlg", write_predictions(tmp_path / "p.jsonl", records),
               tmp_path / "results.json") == 0
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["parse_failures"] == 2 and results["bleu2"] < 100

    records = gold_records(gold["pol"], "pol")
    records[3]["parse_ok"] = False
    assert run(sample_build, "pol", write_predictions(tmp_path / "q.jsonl", records),
               tmp_path / "pol.json") == 0
    results = json.loads((tmp_path / "pol.json").read_text())
    assert results["parse_failures"] == 1 and results["recall"] < 1.0 and results["precision"] == 1.0


@pytest.mark.parametrize("change, message", [
    (lambda r: r[1:], "without a prediction: {first}"),
    (lambda r: r + [r[0]], "duplicate ids: {first}"),
    (lambda r: r + [{"id": "999-1", "prediction": []}], "not in the gold split: 999-1"),
])
def test_id_problems_name_the_ids(sample_build, gold, tmp_path, capsys, change, message):
    records = change(gold_records(gold["nlu"], "nlu"))
    assert run(sample_build, "nlu", write_predictions(tmp_path / "p.jsonl", records),
               tmp_path / "results.json") == 1
    assert message.format(first=gold["nlu"][0]["id"]) in capsys.readouterr().err
    assert not (tmp_path / "results.json").exists()


def test_a_broken_line_is_named(sample_build, tmp_path, capsys):
    (tmp_path / "p.jsonl").write_text('{"id": "x", "prediction": []}\n{oops\n', encoding="utf-8")
    assert run(sample_build, "nlu", tmp_path / "p.jsonl", tmp_path / "r.json") == 1
    assert "p.jsonl, line 2: invalid JSON" in capsys.readouterr().err


def test_local_evaluate_modules_load_offline(gold, monkeypatch, tmp_path):
    evaluate = pytest.importorskip("evaluate")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    nlu = evaluate.load(str(PROJECT_ROOT / "metrics" / "meditod_nlu"))
    labels = [r["nlu"] for r in gold["nlu"]]
    assert nlu.compute(predictions=labels, references=labels)["f1"] == 1.0

    pol = evaluate.load(str(PROJECT_ROOT / "metrics" / "meditod_pol"))
    actions = [r["actions"] for r in gold["pol"]]
    ids = [r["dialogue_id"] for r in gold["pol"]]
    shifted = actions[1:] + actions[-1:]
    results = pol.compute(predictions=shifted, references=actions, dialogue_ids=ids)
    assert results["precision_at_k"]["4"] == 1.0 and results["precision_at_k"]["1"] < 0.2
    assert results["judge"] == {"name": "exact"}


def test_each_setting_gets_its_own_results_and_the_runs_own_data(embedded_build, tmp_path, capsys):
    """Before: evaluating predictions-constrained.jsonl replaced results.json in place, and
    `--data` defaulted to ./meditod whatever the run was trained on."""
    from helpers import write_run

    run = write_run(tmp_path / "run", task="nlu", splits={}, dataset=str(embedded_build))
    folder = run / "eval" / "test"
    folder.mkdir(parents=True)
    rows = load_split(embedded_build, "nlu", "test")
    write_predictions(folder / "predictions.jsonl", gold_records(rows, "nlu"))
    write_predictions(folder / "predictions-constrained.jsonl",
                      [{"id": r["id"], "prediction": [], "constrained": True} for r in rows])
    for name in ("predictions.jsonl", "predictions-constrained.jsonl"):
        assert run_main(main, ["--task", "nlu", "--predictions", str(folder / name)]) == 0
    assert f"data: {embedded_build} (what the predictions' run was trained on)" in \
        capsys.readouterr().err
    free = json.loads((folder / "results.json").read_text())
    constrained = json.loads((folder / "results-constrained.json").read_text())
    assert (free["f1"], free["constrained"]) == (1.0, False)
    assert constrained["constrained"] is True and constrained["f1"] < 1.0
    assert {p.name for p in folder.iterdir()} >= {"results-constrained.md", "results-constrained.png"}
    assert free["provenance"]["kind"] == "embedded-sample"
    # another dataset is allowed, and said
    other = tmp_path / "elsewhere"
    assert run_main(main, ["--task", "nlu", "--predictions", str(folder / "predictions.jsonl"),
                           "--data", str(embedded_build), "--out", str(other)]) == 0
    assert (other / "results.json").is_file()


def test_a_chart_names_the_model_the_data_and_the_decoding():
    """Before: "MediTOD NLU (test)" on every chart, free or constrained, synthetic or not, and a
    chart of zero scores had blank axes (now every bar is labelled, an all-slots row first)."""
    from PIL import Image

    from meditod_hub.evaluation.report import chart_png, chart_title

    results = {"task": "nlu", "split": "test", "f1": 0.0, "medical": {"f1": 0.0},
               "non_medical": {"f1": 0.0}, "per_slot": {}, "parse_failures": 7, "examples": 12,
               "constrained": True, "provenance": {"kind": "embedded-sample", "name": "s",
                                                   "dialogues": 10, "utterances": 136}}
    assert chart_title(results, "tiny-llama") == (
        "tiny-llama: NLU, test split",
        "synthetic sample (embedded), 10 dialogues; constrained decoding; 7 of 12 outputs unparsed")
    image = Image.open(io.BytesIO(chart_png(results, TASKS["nlu"], "tiny-llama"))).convert("L")
    width, height = image.size
    # the value labels right of the axis: dark pixels where a blank chart had none
    plot = image.crop((width // 8, height // 3, width // 2, 2 * height // 3))
    assert min(plot.getdata()) < 100
