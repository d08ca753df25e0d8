"""NLG scores: normalisation, hand-computed BLEU/ROUGE, seeded bootstrap, sacreBLEU, BERTScore
with a tiny random-weight BERT built here (tokenizer trained offline), and gold on the sample.

No network, CPU only.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from meditod_hub.data.metrics import bleu, nlg_scores, normalise, rouge, sacrebleu_score
from meditod_hub.data.release import read_release
from meditod_hub.data.tasks import view_rows
from meditod_hub.errors import UsageError

HYP, REF = "The cat sat on the mat.", "the cat sat on a mat ."


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    """A 2-layer, 16-wide BERT with a WordPiece tokenizer trained on a few invented lines."""
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import BertConfig, BertModel, BertTokenizerFast

    out = tmp_path_factory.mktemp("tiny-bert")
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok.train_from_iterator([HYP, REF, "how long have you had the cough ?", "any fever or chills ?"],
                            trainers.WordPieceTrainer(vocab_size=120, special_tokens=specials))
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[(t, tok.token_to_id(t)) for t in ("[CLS]", "[SEP]")])
    BertTokenizerFast(tokenizer_object=tok, model_max_length=64).save_pretrained(out)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=tok.get_vocab_size(), hidden_size=16, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=32, max_position_embeddings=64)
    BertModel(config).save_pretrained(out)
    return str(out)


def test_normalise():
    assert normalise(" Hello,\tWorld!  How's it?") == "hello , world ! how ' s it ?"


def test_bleu_hand_computed():
    # 7 tokens each (the full stop is one): unigrams 6/7 (`the` clipped), bigrams 4/6,
    # trigrams 2/5, 4-grams 1/4, equal lengths so no brevity penalty
    scores = bleu([HYP], [REF])
    assert scores["bleu2"] == pytest.approx(100 * math.sqrt(6 / 7 * 4 / 6))
    assert scores["bleu4"] == pytest.approx(100 * (6 / 7 * 4 / 6 * 2 / 5 * 1 / 4) ** 0.25)


def test_rouge_hand_computed_seeded_and_leaves_numpy_alone():
    assert rouge([HYP], [REF]) == pytest.approx({"rouge1": 5 / 6, "rougeL": 5 / 6})
    hyps, refs = [HYP, "any fever", "no"], [REF, "any chills", "no"]
    np.random.seed(1)
    expected_draw = np.random.rand()
    np.random.seed(1)
    first = rouge(hyps, refs, seed=3)
    assert np.random.rand() == expected_draw
    assert rouge(hyps, refs, seed=3) == first


def test_sacrebleu_reports_its_signature():
    result = sacrebleu_score([REF], [REF])
    assert result["score"] == pytest.approx(100)
    assert result["signature"].startswith("nrefs:1|case:mixed")


def test_bertscore_is_null_unless_configured_and_needs_a_layer():
    assert nlg_scores([HYP], [REF])["bertscore"] is None
    with pytest.raises(UsageError, match="not a model folder"):
        nlg_scores([HYP], [REF], bertscore_model="/some/local/model", bertscore_layer=1)
    with pytest.raises(UsageError, match="give its --bertscore_layer"):
        nlg_scores([HYP], [REF], bertscore_model="org/model")


def test_bertscore_with_a_tiny_local_model(tiny_bert):
    same = nlg_scores([HYP, REF], [HYP, REF], bertscore_model=tiny_bert, bertscore_layer=2)
    assert same["bertscore"]["f1"] == pytest.approx(1.0, abs=1e-5)
    assert same["bertscore"] | {"f1": None} == {"f1": None, "model": tiny_bert, "layer": 2,
                                                "rescaled": False}
    other = nlg_scores([HYP], ["any fever or chills ?"], bertscore_model=tiny_bert, bertscore_layer=2)
    assert other["bertscore"]["f1"] < 0.999


def test_gold_responses_score_full_marks_on_the_sample(sample_release):
    release = read_release(sample_release)
    refs = [r["response"] for d in release.splits["test"]
            for r in view_rows("nlg", d, release.dialogues[d])]
    scores = nlg_scores(refs, refs)
    assert (scores["bleu2"], scores["rouge1"], scores["rougeL"]) == (100.0, 1.0, 1.0)
    assert scores["sacrebleu"]["score"] == pytest.approx(100)
    # NLTK counts each reply shorter than n tokens as one unmatched n-gram (see metrics.nlg)
    tokens = [normalise(r).split() for r in refs]
    precisions = []
    for n in range(1, 5):
        ngrams = sum(max(0, len(t) - n + 1) for t in tokens)
        precisions.append(ngrams / (ngrams + sum(len(t) < n for t in tokens)))
    assert scores["bleu4"] == pytest.approx(100 * math.exp(sum(map(math.log, precisions)) / 4))
    assert 99 < scores["bleu4"] <= 100
