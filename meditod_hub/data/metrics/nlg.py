"""NLG scores as the authors computed them (docs/format.md, "Metrics"), plus sacreBLEU.

* Normalisation (both sides): strip, tabs to spaces, lowercase, spaces around every
  `string.punctuation` character, whitespace collapsed.
* BLEU-2 / BLEU-4: NLTK `corpus_bleu` on whitespace tokens of the normalised text, one
  reference, no smoothing, x100. NLTK counts a sentence shorter than n as one unmatched n-gram,
  so even gold against itself scores BLEU-4 below 100 when some replies have under 4 tokens
  (99.75 on the authors' sample test split); kept, since the paper's numbers include it.
* ROUGE-1 / ROUGE-L: `rouge_score` (no stemming, its default tokenizer) on the normalised text,
  bootstrap-aggregated mid F-measure, as `evaluate.load("rouge")` does; the bootstrap is seeded
  here (upstream was not), so reruns agree.
* BERTScore: `bert_score` F1 mean on the normalised text, no IDF, no baseline rescaling; the
  paper used roberta-large layer 17, but the model is only loaded when configured (it cannot be
  downloaded offline), else the score is null.
* sacreBLEU (not in the paper): default settings on the raw texts, with its signature, so the
  number can be compared across papers.
"""

from __future__ import annotations

import re
import string
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from meditod_hub.errors import MeditodError, UsageError

PAPER_BERTSCORE_MODEL = "roberta-large"
PAPER_BERTSCORE_LAYER = 17
_PUNCTUATION = re.compile(f"([{re.escape(string.punctuation)}])")


def normalise(text: str) -> str:
    text = _PUNCTUATION.sub(r" \1 ", text.strip().replace("\t", " ").lower())
    return " ".join(text.split())


def _check(hypotheses: Sequence[str], references: Sequence[str]) -> None:
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses for {len(references)} references")


def bleu(hypotheses: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    """BLEU-2 and BLEU-4 (x100) as the authors' NLTK call."""
    # deferred: nltk is slow to import
    from nltk.translate.bleu_score import corpus_bleu

    _check(hypotheses, references)
    hyps = [normalise(h).split() for h in hypotheses]
    refs = [[normalise(r).split()] for r in references]
    with warnings.catch_warnings():
        # "0 counts of n-gram overlaps ... use SmoothingFunction()": a score of 0 is the paper's
        # unsmoothed BLEU, not a fault; smoothing would change the numbers compared with it.
        warnings.filterwarnings("ignore", message=r"\nThe hypothesis contains 0 counts",
                                category=UserWarning)
        bleu2, bleu4 = corpus_bleu(refs, hyps, weights=[(0.5, 0.5), (0.25, 0.25, 0.25, 0.25)])
    return {"bleu2": 100 * bleu2, "bleu4": 100 * bleu4}


def rouge(hypotheses: Sequence[str], references: Sequence[str], seed: int = 0) -> dict[str, float]:
    """ROUGE-1 / ROUGE-L bootstrap mid F-measure (what `evaluate`'s rouge reports)."""
    _check(hypotheses, references)
    # deferred: rouge_score imports nltk (2 s), which only scoring NLG needs
    from rouge_score import rouge_scorer, scoring

    scorer = rouge_scorer.RougeScorer(["rouge1", "rougeL"], use_stemmer=False)
    aggregator = scoring.BootstrapAggregator()
    for hyp, ref in zip(hypotheses, references):
        aggregator.add_scores(scorer.score(normalise(ref), normalise(hyp)))
    # rouge_score resamples with the global NumPy generator: seed it, then put it back.
    saved = np.random.get_state()
    np.random.seed(seed)
    try:
        result = aggregator.aggregate()
    finally:
        np.random.set_state(saved)
    return {name: float(result[name].mid.fmeasure) for name in ("rouge1", "rougeL")}


def sacrebleu_score(hypotheses: Sequence[str], references: Sequence[str]) -> dict:
    # deferred: sacrebleu is slow to import
    import sacrebleu

    _check(hypotheses, references)
    metric = sacrebleu.BLEU()
    return {"score": metric.corpus_score(list(hypotheses), [list(references)]).score,
            "signature": str(metric.get_signature())}


def bertscore(hypotheses: Sequence[str], references: Sequence[str], model: str,
              layer: int, batch_size: int = 64, device: str | None = None) -> dict:
    """Mean BERTScore F1 with a named or local model and the layer to read."""
    # deferred: bert_score is slow to import
    from bert_score import score

    _check(hypotheses, references)
    try:
        _, _, f1 = score([normalise(h) for h in hypotheses], [normalise(r) for r in references],
                         model_type=model, num_layers=layer, idf=False,
                         rescale_with_baseline=False, batch_size=batch_size, device=device)
    except OSError as exc:  # not cached offline, no such Hub model, damaged files

        raise MeditodError(f"BERTScore model {model}: cannot load it ({str(exc).splitlines()[0]}"
                           "): give a local model folder or one in the Hugging Face cache"
                           ) from None
    return {"f1": float(f1.mean()), "model": model, "layer": layer, "rescaled": False}


def nlg_scores(hypotheses: Sequence[str], references: Sequence[str],
               bertscore_model: str | None = None, bertscore_layer: int | None = None,
               seed: int = 0) -> dict:
    """All NLG figures; `bertscore` is None unless a model is given."""
    scores: dict = {**bleu(hypotheses, references), **rouge(hypotheses, references, seed)}
    scores["sacrebleu"] = sacrebleu_score(hypotheses, references)
    scores["bertscore"] = None
    if bertscore_model:
        layer = bertscore_setting(bertscore_model, bertscore_layer)
        scores["bertscore"] = bertscore(hypotheses, references, bertscore_model, layer)
    return scores


def bertscore_setting(model: str, layer: int | None) -> int:
    """The layer to read from `model`, checked before any scoring: a path-like name must be a
    model folder, and a model other than the paper's needs its layer named."""
    path = Path(model)
    if path.exists() or model.startswith((".", "/", "~")) or model.count("/") > 1:
        if not (path / "config.json").is_file():
            raise UsageError(f"--bertscore_model {model}: not a model folder (no config.json); "
                             f"give a local model folder or a Hub name such as "
                             f"{PAPER_BERTSCORE_MODEL}")
    if layer is None and model == PAPER_BERTSCORE_MODEL:
        return PAPER_BERTSCORE_LAYER
    if layer is None:
        raise UsageError(f"--bertscore_model {model}: give its --bertscore_layer (only "
                         f"{PAPER_BERTSCORE_MODEL}'s, {PAPER_BERTSCORE_LAYER}, is known)")
    return layer
