"""Model-format time at paper scale: render, parse and fit every example of the synthetic corpus.

    .venv/bin/python bench/bench_formats.py            # 233 dialogues (paper Table 3), seed 0

Rows are the `nlu` and `nlg` views of `meditod_hub.data.synthetic` (paper-shaped, ~11k rows each).
Per family (flan-t5, biogpt, pptod, chat), over all three tasks: render (input + target) and
parse (every target). Then fit: Flan-T5 NLU inputs, whole context, into 512 tokens with a
word-level tokenizer trained here. Baselines in the same process: json dumps + loads of the same
labels (render, parse) and one plain tokenizer call on the joined text with the tokenizer's own
left truncation (fit); the ratios compare across machines better than the seconds do.
Target on 2 cores: one family's render + parse under 5 s CPU (a training run formats one
family), so data preparation never waits.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from meditod_hub.data.synthetic import PAPER_DIALOGUES, generate_dialogues  # noqa: E402
from meditod_hub.data.tasks import (
    TASKS,  # noqa: E402
    view_rows,  # noqa: E402
)
from meditod_hub.models.families import FAMILIES  # noqa: E402
from meditod_hub.models.formats.fit import fit_to_budget  # noqa: E402

TARGET_SECONDS = 5.0
MAX_LENGTH = 512
TASK_ROWS = {"nlu": "nlu", "pol": "nlg", "nlg": "nlg"}  # nlg rows carry the pol columns too
LABEL = {"nlu": "nlu", "pol": "actions"}


def cpu_seconds(function, *args) -> tuple[float, object]:
    """CPU seconds: on a shared machine the steadier figure."""
    start = time.process_time()
    result = function(*args)
    return time.process_time() - start, result


def render(family: str, rows: dict) -> list:
    """(task, source texts, target) of every example, as the family renders them."""
    out = []
    for task, config in TASK_ROWS.items():
        for row in rows[config]:
            *source, target = FAMILIES[family].texts(TASKS[task], row)
            out.append((task, source, target))
    return out


def parse(family: str, rendered: list) -> int:
    """Parse failures of every rendered target (the chat family's targets are its answers)."""
    return sum(not FAMILIES[family].parse(task, target).ok for task, _, target in rendered)


def json_baseline(rows: dict) -> None:
    for task, column in LABEL.items():
        for row in rows[TASK_ROWS[task]]:
            json.loads(json.dumps(row[column]))


def word_tokenizer(parts: list) -> PreTrainedTokenizerFast:
    backend = Tokenizer(models.WordLevel(unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.train_from_iterator((p.body for p in parts), trainers.WordLevelTrainer(
        special_tokens=["<pad>", "</s>", "<unk>"]))
    backend.post_processor = processors.TemplateProcessing(
        single="$A </s>", special_tokens=[("</s>", backend.token_to_id("</s>"))])
    return PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="</s>", pad_token="<pad>",
                                   unk_token="<unk>", truncation_side="left")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dialogues", type=int, default=PAPER_DIALOGUES)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true",
                        help="a small run that checks the bench works (CI); its figures mean nothing")
    args = parser.parse_args(argv)
    if args.quick:
        args.dialogues = 12

    dialogues = generate_dialogues(args.seed, args.dialogues)
    rows = {config: [row for did, d in dialogues.items() for row in view_rows(config, did, d)]
            for config in ("nlu", "nlg")}
    json_s, _ = cpu_seconds(json_baseline, rows)
    print(f"synthetic corpus: {args.dialogues} dialogues, {len(rows['nlu'])} nlu rows, "
          f"{len(rows['nlg'])} pol/nlg rows")
    print(f"json dumps+loads baseline (the same labels): {json_s:.2f} s CPU")
    slowest, flan_nlu = 0.0, []
    for family in FAMILIES:
        render_s, rendered = cpu_seconds(render, family, rows)
        parse_s, failures = cpu_seconds(parse, family, rendered)
        slowest = max(slowest, render_s + parse_s)
        print(f"  {family:<8} render {render_s:5.2f} s ({render_s / json_s:4.1f}x), "
              f"parse {parse_s:5.2f} s ({parse_s / json_s:4.1f}x), {len(rendered)} examples, "
              f"{failures} parse failures")
        if family == "flan-t5":
            flan_nlu = [FAMILIES[family].source_parts(TASKS["nlu"], row) for row in rows["nlu"]]

    tokenizer = word_tokenizer(flan_nlu)
    fit_s, fitted = cpu_seconds(lambda: [fit_to_budget(tokenizer, p, MAX_LENGTH, str(n))
                                         for n, p in enumerate(flan_nlu)])
    plain_s, _ = cpu_seconds(lambda: [tokenizer(f"{p.prefix} {p.body}", truncation=True,
                                                max_length=MAX_LENGTH) for p in flan_nlu])
    truncated = sum(f.truncated for f in fitted)
    print(f"fit {len(flan_nlu)} Flan-T5 NLU inputs into {MAX_LENGTH}: {fit_s:.2f} s CPU "
          f"({fit_s / plain_s:.1f}x one plain tokenizer call, {plain_s:.2f} s); "
          f"{truncated} truncated")
    verdict = "met" if slowest < TARGET_SECONDS else "MISSED"
    print(f"target: one family's render + parse under {TARGET_SECONDS:.0f} s CPU: {verdict} "
          f"(slowest {slowest:.2f} s)")


if __name__ == "__main__":
    main()
