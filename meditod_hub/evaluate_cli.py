"""Score a predictions file against a built MediTOD dataset folder.

    python -m meditod_hub.evaluate_cli --task nlu --data meditod --split test \\
        --predictions runs/llama3-nlu/predictions.jsonl --out runs/llama3-nlu/results.json
    # non-medical values judged by an OpenAI-compatible endpoint, judgements cached on disk
    python -m meditod_hub.evaluate_cli --task pol ... --judge llm \\
        --judge-url http://127.0.0.1:8000/v1 --judge-model gpt-3.5-turbo-0125
    # NLG with the paper's BERTScore (roberta-large must already be in the local HF cache)
    python -m meditod_hub.evaluate_cli --task nlg ... --bertscore-model roberta-large

Writes `--out` (JSON) and, beside it, `results.md` and `results.png` (F1 per slot type).
Gold comes from `datasets.load_dataset(<data>, <task>, split=<split>)`; predictions follow
`meditod_hub.metrics.predictions`. Logs carry figures only, never dialogue text or labels.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .metrics import (JUDGES, PAK_MODES, JudgeError, MalformedLabel, Prediction,
                      PredictionsError, align, make_judge, nlg_scores, nlu_f1, pol_f1,
                      pol_precision_at_k, read_predictions)
from .metrics.report import write_chart, write_markdown

TASKS = ("nlu", "pol", "nlg")
GOLD_COLUMN = {"nlu": "nlu", "pol": "actions", "nlg": "response"}


def load_gold(data: str | Path, task: str, split: str) -> list[dict]:
    """The gold rows of one task config and split of a built dataset folder."""
    from datasets import disable_progress_bars, load_dataset

    disable_progress_bars()
    return list(load_dataset(str(data), task, split=split))


def evaluate(task: str, gold_rows: list[dict], predictions: list[Prediction], judge=None,
             pak_mode: str = "exact", bertscore_model: str | None = None,
             bertscore_layer: int | None = None, seed: int = 0) -> dict:
    """All scores of one task; `predictions` are aligned with `gold_rows`."""
    gold = [row[GOLD_COLUMN[task]] for row in gold_rows]
    labels = [p.label for p in predictions]
    if task == "nlg":
        texts = [label if isinstance(label, str) else "" for label in labels]
        return {**nlg_scores(texts, gold, bertscore_model, bertscore_layer, seed),
                "examples": len(gold), "parse_failures": sum(not isinstance(x, str) for x in labels)}
    score = nlu_f1 if task == "nlu" else pol_f1
    results = score(gold, labels, judge, ids=[row["id"] for row in gold_rows]).as_dict()
    if task == "pol":
        dialogue_ids = [row["dialogue_id"] for row in gold_rows]
        results["precision_at_k"] = pol_precision_at_k(gold, labels, dialogue_ids, mode=pak_mode)
        results["precision_at_k_mode"] = pak_mode
    return results


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m meditod_hub.evaluate_cli",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=TASKS, required=True)
    parser.add_argument("--data", required=True, help="built dataset folder (meditod.py build)")
    parser.add_argument("--split", default="test")
    parser.add_argument("--predictions", required=True, help="JSON lines {id, prediction}")
    parser.add_argument("--out", required=True, help="results JSON; .md and .png go beside it")
    judge = parser.add_argument_group("non-medical value judge (NLU/POL)")
    judge.add_argument("--judge", choices=JUDGES, default="exact")
    judge.add_argument("--judge-url", help="llm: OpenAI-compatible base URL, e.g. .../v1")
    judge.add_argument("--judge-model", help="llm: model name; embedding: local model folder "
                                             "(default: the bundled all-MiniLM-L6-v2)")
    judge.add_argument("--judge-cache", default=".cache/llm_judge.sqlite",
                       help="llm: SQLite cache of judgements")
    judge.add_argument("--judge-api-key-env", default="OPENAI_API_KEY",
                       help="llm: environment variable holding the API key (optional)")
    judge.add_argument("--judge-threshold", type=float, default=0.8,
                       help="embedding: cosine similarity that counts as a match")
    judge.add_argument("--judge-workers", type=int, default=4, help="llm: parallel requests")
    parser.add_argument("--pak-mode", choices=PAK_MODES, default="exact",
                        help="POL Precision@K: authors' set equality (exact, exact_medical) or "
                             "the paper's looser prose reading (medical_present)")
    parser.add_argument("--bertscore-model", help="NLG: model name or local folder (paper: "
                                                  "roberta-large); BERTScore is null without it")
    parser.add_argument("--bertscore-layer", type=int, help="NLG: layer (roberta-large: 17)")
    parser.add_argument("--seed", type=int, default=0, help="ROUGE bootstrap seed")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    out = Path(args.out)
    try:
        judge = make_judge(args.judge, model=args.judge_model, base_url=args.judge_url,
                           cache=args.judge_cache, api_key_env=args.judge_api_key_env,
                           threshold=args.judge_threshold, workers=args.judge_workers)
        gold_rows = load_gold(args.data, args.task, args.split)
        predictions = align([row["id"] for row in gold_rows], read_predictions(args.predictions),
                            args.predictions)
        results = evaluate(args.task, gold_rows, predictions, judge, args.pak_mode,
                           args.bertscore_model, args.bertscore_layer, args.seed)
    except (PredictionsError, MalformedLabel, JudgeError, ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    results = {"task": args.task, "split": args.split, **results}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    write_markdown(results, out.parent / "results.md")
    write_chart(results, out.parent / "results.png")
    headline = ("bleu4", "rougeL") if args.task == "nlg" else ("f1", "joint_accuracy")
    print(" ".join(f"{k}={results[k]:.4f}" for k in headline) + f" -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
