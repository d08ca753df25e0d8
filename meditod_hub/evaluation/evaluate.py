"""Score a predictions file against a built MediTOD dataset.

    meditod evaluate --task nlu --data meditod --split test \\
        --predictions runs/llama3-nlu/predictions.jsonl --out runs/llama3-nlu/results.json
    # non-medical values judged by an OpenAI-compatible endpoint, judgements cached on disk
    meditod evaluate --task pol ... --judge llm --judge_url http://127.0.0.1:8000/v1 \\
        --judge_model gpt-3.5-turbo-0125
    # NLG with the paper's BERTScore (roberta-large must already be in the local HF cache)
    meditod evaluate --task nlg ... --bertscore_model roberta-large

Writes `--out` (JSON) and, beside it and named after its stem, a Markdown table and a chart
(`results.json` -> `results.md`, `results.png`; `nlu-test.json` -> `nlu-test.md`, ...), so
several evaluations can share a folder. Scores come from the task spec (`tasks.Task.score`);
predictions follow `records`. Logs carry figures only, never dialogue text or labels.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from meditod_hub.arguments import parse_args
from meditod_hub.data.tasks import TASK_NAMES, get_task
from meditod_hub.errors import run_main
from meditod_hub.evaluation.metrics.judges import JUDGE_TIMEOUT_S, JUDGES, make_judge
from meditod_hub.evaluation.metrics.nlg import bertscore_setting
from meditod_hub.evaluation.metrics.precision_at_k import MODES as PAK_MODES
from meditod_hub.evaluation.records import Results, align, decoding_constrained, read_predictions, side_files
from meditod_hub.files import output_path


@dataclass
class EvaluateArguments:
    task: str = field(metadata={"help": "nlu, pol or nlg", "choices": list(TASK_NAMES)})
    predictions: Path = field(metadata={"help": "JSON lines {id, prediction, raw, parse_ok}"})
    out: Path = field(metadata={"help": "results JSON; its .md and .png go beside it"})
    data: str = field(default="meditod", metadata={"help": "built dataset folder or Hub id"})
    split: str = field(default="test", metadata={"help": "train, validation, test or test_ood"})
    judge: str = field(default="exact", metadata={"help": "non-medical value judge (NLU/POL)",
                                                  "choices": list(JUDGES)})
    judge_url: str | None = field(default=None, metadata={
        "help": "llm: OpenAI-compatible base URL, e.g. .../v1"})
    judge_model: str | None = field(default=None, metadata={
        "help": "llm: model name; embedding: local model folder (default: bundled all-MiniLM-L6-v2)"})
    judge_cache: str = field(default=".cache/llm_judge.sqlite", metadata={
        "help": "llm: SQLite cache of judgements"})
    judge_api_key_env: str | None = field(default=None, metadata={
        "help": "llm: environment variable holding the judge endpoint's key (default: only "
                "api.openai.com, Azure and the Hub's router get their own; others none)"})
    judge_timeout: float = field(default=JUDGE_TIMEOUT_S, metadata={
        "above": 0, "help": "llm: seconds for the whole judging, retries included (judgements "
                            "so far stay cached)"})
    judge_threshold: float = field(default=0.8, metadata={"min": 0, "max": 1,
        "help": "embedding: cosine similarity that counts as a match"})
    judge_workers: int = field(default=4, metadata={"min": 1, "help": "llm: parallel requests"})
    pak_mode: str = field(default="exact", metadata={
        "help": "POL Precision@K: authors' set equality (exact, exact_medical) or the paper's "
                "looser prose reading (medical_present)", "choices": list(PAK_MODES)})
    bertscore_model: str | None = field(default=None, metadata={
        "help": "NLG: model name or local folder (paper: roberta-large); null without it"})
    bertscore_layer: int | None = field(default=None, metadata={"min": 0,
        "help": "NLG: layer (roberta-large: 17)"})
    seed: int = field(default=0, metadata={"min": 0, "max": 2**32 - 1, "help": "ROUGE bootstrap seed"})
    chart: bool = field(default=True, metadata={"help": "write the PNG chart"})


def evaluate(args: EvaluateArguments) -> Results:
    from meditod_hub.data.dataset import load_split

    task = get_task(args.task)
    judge = make_judge(args.judge, model=args.judge_model, base_url=args.judge_url,
                       cache=args.judge_cache, api_key_env=args.judge_api_key_env,
                       threshold=args.judge_threshold, workers=args.judge_workers,
                       timeout=args.judge_timeout)
    gold_rows = load_split(args.data, task.name, args.split)
    predictions = align([row["id"] for row in gold_rows], read_predictions(args.predictions),
                        args.predictions)
    scores = task.score(gold_rows, [p.label for p in predictions], judge=judge,
                        pak_mode=args.pak_mode, bertscore_model=args.bertscore_model,
                        bertscore_layer=args.bertscore_layer, seed=args.seed)
    scores["constrained"] = decoding_constrained(predictions, args.predictions)
    return Results(task.name, args.split, scores)


def main(argv: list[str]) -> int:
    (args,) = parse_args((EvaluateArguments,), argv, "meditod evaluate", __doc__.split("\n\n")[0])
    for path in (args.out, *side_files(args.out)):
        output_path(path, purpose="evaluate", inputs=[args.predictions, args.judge_cache],
                    input_folders=[args.data])
    if args.bertscore_model and not get_task(args.task).structured:
        bertscore_setting(args.bertscore_model, args.bertscore_layer)
    results = evaluate(args)
    results.write(args.out, chart=args.chart, purpose="evaluate")
    task = get_task(args.task)
    headline = task.headline_metric
    print(f"{headline.name} {format(results.value(headline.key), headline.fmt)}; "
          f"{results.scores['parse_failures']} parse failures -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
