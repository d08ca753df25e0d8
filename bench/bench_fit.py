"""How many rows each span-grammar family must cut to fit its token budget, before and after
the state joined the budget: the figures in recipes/{biogpt,flan-t5-base,pptod-base}/README.md.

    .venv/bin/python bench/bench_fit.py                 # synthetic paper-scale corpus (+ the
                                                        # authors' sample when ../shared has it)

The real BioGPT and Flan-T5 tokenizers cannot be downloaded here, so lengths are counted with a
lower-bound tokenizer: every word and every punctuation mark is one token (both real tokenizers
split at least that finely), so real counts are at least these. "before" is the rule the kit had:
only the context could be cut, at the authors' 512 tokens, so a row whose state, prefix and
reserve alone overflow was unscorable. "after" is `formats.fit` at the recipe budget.
BioGPT rows reserve the 128 generated tokens (prediction), as upstream did.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tokenizers import Tokenizer, models, pre_tokenizers, processors  # noqa: E402
from transformers import PreTrainedTokenizerFast  # noqa: E402

from meditod_hub.data.build import BuildArguments, build  # noqa: E402
from meditod_hub.data.dataset import load_split  # noqa: E402
from meditod_hub.data.synthetic import PAPER_DIALOGUES, generate_release  # noqa: E402
from meditod_hub.data.tasks import TASKS  # noqa: E402
from meditod_hub.models.families import SPAN_FAMILIES  # noqa: E402
from meditod_hub.models.formats.fit import BudgetError, fit_to_budget, special_ids  # noqa: E402

AUTHORS_SAMPLE = Path(__file__).resolve().parent.parent.parent / "shared" / "meditod-sample"
UPSTREAM_BUDGET = 512
RECIPE_BUDGETS = {("biogpt", "pol"): 1024, ("flan-t5", "pol"): 1024}  # else the family default
RESERVE = {"biogpt": 128}


def lower_bound_tokenizer(template: str) -> PreTrainedTokenizerFast:
    """Words and punctuation marks, one token each (ids do not matter, only counts)."""
    backend = Tokenizer(models.WordLevel({"<unk>": 0, "</s>": 1}, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.post_processor = processors.TemplateProcessing(single=template,
                                                           special_tokens=[("</s>", 1)])
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>", eos_token="</s>")


TOKENIZERS = {"biogpt": lower_bound_tokenizer("</s> $A"), "flan-t5": lower_bound_tokenizer("$A </s>"),
              "pptod": lower_bound_tokenizer("$A </s>")}


def counts(data: Path, family_name: str, task: str) -> dict[str, int]:
    family, tokenizer = SPAN_FAMILIES[family_name], TOKENIZERS[family_name]
    reserve = RESERVE.get(family_name, 0)
    budget = RECIPE_BUDGETS.get((family_name, task), family.default_budget.max_length)
    lead, trail = special_ids(tokenizer)
    rows = [row for split in ("train", "validation", "test") for row in load_split(data, task, split)]
    out = {"rows": len(rows), "budget": budget, "before_unscorable": 0, "cut": 0, "state_cut": 0,
           "unscorable": 0}
    for row in rows:
        parts = family.source_parts(TASKS[task], row)
        fixed = sum(len(tokenizer(t, add_special_tokens=False)["input_ids"])
                    for t in (parts.prefix, parts.head, parts.tail)) + len(lead) + len(trail)
        out["before_unscorable"] += fixed + reserve > UPSTREAM_BUDGET
        try:
            fitted = fit_to_budget(tokenizer, parts, budget, row["id"], reserve)
        except BudgetError:
            out["unscorable"] += 1
            continue
        out["cut"] += fitted.truncated
        out["state_cut"] += fitted.dropped_state > 0
    return out


def report(name: str, data: Path) -> None:
    print(f"\n{name}: rows over budget per family and task (lower-bound token counts)")
    print("| family | task | rows | before: unscorable at 512 | budget | after: cut | of which "
          "state entries dropped | after: unscorable |")
    print("|---|---|---|---|---|---|---|---|")
    for family in SPAN_FAMILIES:
        for task in ("nlu", "pol", "nlg"):
            c = counts(data, family, task)
            print(f"| {family} | {task} | {c['rows']} | {c['before_unscorable']} | {c['budget']} | "
                  f"{c['cut']} | {c['state_cut']} | {c['unscorable']} |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="a small run that checks the bench works (CI); its figures mean nothing")
    dialogues = 12 if parser.parse_args(argv).quick else PAPER_DIALOGUES
    with tempfile.TemporaryDirectory() as tmp:
        if (AUTHORS_SAMPLE / "dialogs.json").exists():
            build(BuildArguments(source=AUTHORS_SAMPLE, out=Path(tmp) / "sample"))
            report("authors' sample (3 dialogues)", Path(tmp) / "sample")
        release = generate_release(Path(tmp) / "release", 0, dialogues)
        build(BuildArguments(source=release, out=Path(tmp) / "synthetic"))
        report(f"synthetic corpus ({dialogues} dialogues"
               f"{', paper scale' if dialogues == PAPER_DIALOGUES else ''})", Path(tmp) / "synthetic")


if __name__ == "__main__":
    main()
