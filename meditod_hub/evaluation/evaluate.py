"""Score a predictions file against a built MediTOD dataset.

    meditod evaluate --task nlu --split test \\
        --predictions runs/llama3-8b/nlu/eval/test/predictions.jsonl
    # non-medical values judged by an OpenAI-compatible endpoint, judgements cached on disk
    meditod evaluate --task pol ... --judge llm --judge_url http://127.0.0.1:8000/v1 \\
        --judge_model gpt-3.5-turbo-0125
    # NLG with the paper's BERTScore (roberta-large must already be in the local HF cache)
    meditod evaluate --task nlg ... --bertscore_model roberta-large

Writes the results beside the predictions (or in the folder `--out`, as Make's OUT), named
after them so that no setting overwrites another: `predictions.jsonl` -> `results.json`,
`.md`, `.png`; `predictions-constrained.jsonl` -> `results-constrained.json`, ...; a `--out`
ending in `.json` names the file. The data defaults to the dataset the predictions' run was
trained on (said on stderr; another `--data` is allowed and said too), and results.json records
what it is (`provenance`). Scores come from the task (`tasks.Task.score`); predictions
follow `records`. Logs carry figures only, never dialogue text or labels.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from meditod_hub.data import proof
from meditod_hub.data.dataset import load_split
from meditod_hub.data.metrics.judges import JUDGE_TIMEOUT_S, JUDGES, make_judge
from meditod_hub.data.metrics.precision_at_k import MODES as PAK_MODES
from meditod_hub.data.tasks import TASK_NAMES, Task
from meditod_hub.models.records import (
    Results,
    align,
    decoding_constrained,
    read_predictions,
)
from meditod_hub.models.runs import run_of, run_settings


@dataclass
class EvaluateArguments:
    task: str = field(metadata={"help": "nlu, pol or nlg", "choices": list(TASK_NAMES)})
    predictions: Path = field(metadata={"help": "JSON lines {id, prediction, raw, parse_ok}"})
    out: Path | None = field(default=None, metadata={
        "help": "folder for the results, named after the predictions (predictions-constrained"
                ".jsonl -> results-constrained.json, .md, .png); a path ending in .json names the "
                "file (default: the predictions' folder)"})
    data: str | None = field(default=None, metadata={
        "help": "built dataset folder or Hub id (default: the one the predictions' run was "
                "trained on, else ./meditod)"})
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


def evaluate(args: EvaluateArguments, task: Task) -> Results:
    """`task`: args.task, resolved by the command."""
    judge = make_judge(args.judge, model=args.judge_model, base_url=args.judge_url,
                       cache=args.judge_cache, api_key_env=args.judge_api_key_env,
                       threshold=args.judge_threshold, workers=args.judge_workers,
                       timeout=args.judge_timeout)
    gold_rows = load_split(args.data, task.name, args.split)
    predictions = align([row["id"] for row in gold_rows], read_predictions(args.predictions, task),
                        args.predictions)
    scores = task.score(gold_rows, [p.label for p in predictions], judge=judge,
                        pak_mode=args.pak_mode, bertscore_model=args.bertscore_model,
                        bertscore_layer=args.bertscore_layer, seed=args.seed)
    scores["constrained"] = decoding_constrained(predictions, args.predictions)
    return Results(task.name, args.split, scores, **proof.record(args.data))


def system_of(predictions: Path) -> str:
    """How the chart names the model: its run's model, else the predictions file's name."""
    run = run_of(predictions)
    model = run_settings(run)[0].get("model") if run else None
    return str(model) if model else predictions.stem
