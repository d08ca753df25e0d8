"""Metric time at paper scale: NLU + POL scoring and BLEU + ROUGE on ~1,800 synthetic turns.

    .venv/bin/python bench/bench_metrics.py            # seed 0, test + validation dialogues
    .venv/bin/python bench/bench_metrics.py --authors_metrics /path/to/MediTOD/metrics

Gold rows come from the synthetic corpus (`meditod_hub.data.synthetic`, paper-shaped; its test and
validation splits give ~1,800 rows per task). Predictions are the gold labels perturbed
deterministically (dropped items, changed values, flipped polarity, the next turn's actions,
unparsed outputs, reworded replies), so every code path of the scorers runs.
Targets on 2 cores: NLU + POL (F1, joint accuracy, Precision@K) under 1 s, BLEU + ROUGE under
3 s. Baselines in the same process: a json round trip of the same labels and a plain
set-intersection loop over pre-unrolled tuples (NLU/POL), or a token-overlap loop (NLG); the
ratios compare across machines better than the seconds do. `--authors_metrics` (the `metrics/`
folder of a dair-iitd/MediTOD checkout) adds the authors' exact NLU scorer on the same labels
as a third baseline for our NLU scorer alone; their file is loaded with its one syntax error
(a missing comma) fixed and its `utils` import (torch, openai) stubbed, neither used by it.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import sys
import time
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from meditod_hub.data.metrics import (  # noqa: E402
    bleu,
    nlu_f1,
    nlu_tuples,
    pol_f1,
    pol_precision_at_k,
    pol_tuples,
    rouge,
)
from meditod_hub.data.synthetic import PAPER_DIALOGUES, generate_dialogues, split_ids  # noqa: E402
from meditod_hub.data.tasks import view_rows  # noqa: E402

SPLITS = ("test", "validation")
TARGETS = {"NLU + POL": 1.0, "BLEU + ROUGE": 3.0}


def best_of(repeats: int, function, *args) -> float:
    """Best wall-clock seconds of a few runs (a shared machine only ever adds time)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function(*args)
        times.append(time.perf_counter() - start)
    return min(times)


def perturb_nlu(rng: random.Random, items: list) -> list | None:
    roll = rng.random()
    if roll < 0.05:
        return None  # did not parse
    out = copy.deepcopy(items)
    for item in out:
        for key in list(item.get("slots", {})):
            entries = item["slots"][key]
            if roll < 0.25 and entries:
                entries.pop(rng.randrange(len(entries)))
            elif roll < 0.45:
                for entry in entries:
                    for attr, value in entry.items():
                        if attr != "value" and isinstance(value, str):
                            entry[attr] = value + " or so"
            elif roll < 0.55 and key.startswith("positive_"):
                item["slots"]["negative_" + key.removeprefix("positive_")] = item["slots"].pop(key)
    return out


def perturb_pol(rng: random.Random, rows: list[dict], index: int) -> list | None:
    roll = rng.random()
    if roll < 0.05:
        return None
    same_dialogue = index + 1 < len(rows) and rows[index + 1]["dialogue_id"] == rows[index]["dialogue_id"]
    if roll < 0.35 and same_dialogue:
        return rows[index + 1]["actions"]
    actions = copy.deepcopy(rows[index]["actions"])
    if roll < 0.5 and len(actions) > 1:
        actions.pop()
    return actions


def perturb_text(rng: random.Random, text: str) -> str:
    words = text.split()
    kept = [w for w in words if rng.random() > 0.2] or words[:1]
    if rng.random() < 0.3:
        rng.shuffle(kept)
    return " ".join(kept)


def set_baseline(gold: list, pred: list) -> None:
    """Plain micro TP/FP/FN over pre-unrolled tuple sets: the floor for any F1."""
    tp = fp = fn = 0
    for g, p in zip(gold, pred):
        tp, fp, fn = tp + len(g & p), fp + len(p - g), fn + len(g - p)


def token_baseline(hyps: list[str], refs: list[str]) -> None:
    for h, r in zip(hyps, refs):
        len(set(h.lower().split()) & set(r.lower().split()))


def json_round_trip(*objects) -> None:
    json.loads(json.dumps(objects))


def authors_nlu_scorer(folder: Path):
    """`compute_precision_recall_f1` of the authors' `nlu_metrics.py`, made importable."""
    path = folder / "nlu_metrics.py"
    if not path.is_file():
        raise SystemExit(f"{path} not found: give the metrics/ folder of a dair-iitd/MediTOD checkout")
    source = path.read_text().replace("default='all'\n", "default='all',\n", 1)
    sys.modules["utils"] = types.SimpleNamespace(PairwiseScorer=None, ChatGPTPairwiseComparator=None)
    namespace: dict = {"__name__": "authors_nlu_metrics"}
    exec(compile(source, str(path), "exec"), namespace)
    return namespace["compute_precision_recall_f1"]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--authors_metrics", type=Path, default=None,
                        help="metrics/ folder of a dair-iitd/MediTOD checkout (optional)")
    parser.add_argument("--quick", action="store_true",
                        help="a small run that checks the bench works (CI); its figures mean nothing")
    args = parser.parse_args(argv)
    size = 12 if args.quick else PAPER_DIALOGUES
    if args.quick:
        args.repeats = 1

    dialogues, ids = generate_dialogues(args.seed, size), split_ids(size)
    chosen = [d for split in SPLITS for d in ids[split]]
    nlu = [r for d in chosen for r in view_rows("nlu", d, dialogues[d])]
    pol = [r for d in chosen for r in view_rows("nlg", d, dialogues[d])]
    rng = random.Random(args.seed)
    nlu_gold, pol_gold = [r["nlu"] for r in nlu], [r["actions"] for r in pol]
    nlu_pred = [perturb_nlu(rng, items) for items in nlu_gold]
    pol_pred = [perturb_pol(rng, pol, i) for i in range(len(pol))]
    dialogue_ids = [r["dialogue_id"] for r in pol]
    refs = [r["response"] for r in pol]
    hyps = [perturb_text(rng, text) for text in refs]

    def score_nlu_pol():
        nlu_f1(nlu_gold, nlu_pred)
        pol_f1(pol_gold, pol_pred)
        pol_precision_at_k(pol_gold, pol_pred, dialogue_ids)

    def score_text():
        bleu(hyps, refs)
        rouge(hyps, refs)

    gold_sets = [nlu_tuples(x).all for x in nlu_gold] + [pol_tuples(x).all for x in pol_gold]
    pred_sets = [nlu_tuples(x).all if x is not None else frozenset() for x in nlu_pred] + \
                [pol_tuples(x).all if x is not None else frozenset() for x in pol_pred]

    print(f"synthetic (seed {args.seed}): {len(chosen)} dialogues of {', '.join(SPLITS)}: "
          f"{len(nlu)} NLU rows, {len(pol)} POL/NLG rows")
    nlu_scores, pol_scores = nlu_f1(nlu_gold, nlu_pred), pol_f1(pol_gold, pol_pred)
    print(f"perturbed predictions: NLU F1 {nlu_scores.total().f1:.3f}, POL F1 "
          f"{pol_scores.total().f1:.3f}, BLEU-4 {bleu(hyps, refs)['bleu4']:.1f}")
    measured = {
        "NLU + POL": (best_of(args.repeats, score_nlu_pol),
                      {"json round trip": best_of(args.repeats, json_round_trip, nlu_gold, nlu_pred,
                                                  pol_gold, pol_pred),
                       "set-intersection loop": best_of(args.repeats, set_baseline, gold_sets,
                                                        pred_sets)}),
        "BLEU + ROUGE": (best_of(args.repeats, score_text),
                         {"json round trip": best_of(args.repeats, json_round_trip, hyps, refs),
                          "token-overlap loop": best_of(args.repeats, token_baseline, hyps, refs)}),
    }
    if args.authors_metrics:
        authors = authors_nlu_scorer(args.authors_metrics)
        measured["NLU alone"] = (best_of(args.repeats, nlu_f1, nlu_gold, nlu_pred),
                                 {"authors' scorer": best_of(args.repeats, authors, nlu_gold, nlu_pred)})
    for name, (seconds, baselines) in measured.items():
        ratios = ", ".join(f"{b} {s * 1000:.1f} ms ({seconds / s:.1f}x)" for b, s in baselines.items())
        target = TARGETS.get(name)
        verdict = "" if target is None else \
            f"; target under {target:.0f} s: {'met' if seconds < target else 'MISSED'}"
        print(f"{name}: {seconds:.3f} s (best of {args.repeats}); baselines: {ratios}{verdict}")


if __name__ == "__main__":
    main()
