"""Exemplar retrieval: last-turn keys, CLS + normalise + inner product as the authors computed it,
never the query's own dialogue, pool embeddings cached on disk. The retriever is a tiny
sentence-transformers BERT built offline here (`meditod_hub.models.tiny.build_retriever`)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from datasets import load_dataset

from meditod_hub.evaluation.fewshot.prompts import last_turn
from meditod_hub.evaluation.fewshot.retrieval import ExemplarPool, Retriever


def split_rows(build, task, split):
    return list(load_dataset(str(build), task, split=split))


def authors_scores(model_dir: str, queries: list[str], keys: list[str]) -> np.ndarray:
    """The released prompting code's computation: AutoModel, CLS of the last hidden state,
    L2-normalised, inner product."""
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModel.from_pretrained(model_dir).eval()

    def embed(texts):
        batch = tokenizer(texts, return_tensors="pt", padding=True, truncation=True)
        with torch.no_grad():
            cls = model(**batch)[0][:, 0]
        return torch.nn.functional.normalize(cls, p=2, dim=1).numpy()

    return embed(queries) @ embed(keys).T


@pytest.mark.parametrize("task", ["nlu", "pol"])
def test_top_k_are_the_authors_most_similar_last_turns(tiny_retriever, embedded_build, tmp_path,
                                                       task):
    train, test = split_rows(embedded_build, task, "train"), split_rows(embedded_build, task, "test")
    pool = ExemplarPool(Retriever(tiny_retriever, device="cpu"), task, train, "fp", tmp_path)
    found = pool.search(test, 5)
    scores = authors_scores(tiny_retriever, [last_turn(r) for r in test],
                            [last_turn(r) for r in train])
    for row_scores, picked in zip(scores, found):
        assert len(picked) == 5
        best = np.sort(row_scores)[::-1][:5]
        np.testing.assert_allclose(row_scores[picked], best, atol=1e-5)  # most similar first


def test_a_query_never_retrieves_its_own_dialogue(tiny_retriever, embedded_build, tmp_path):
    train = split_rows(embedded_build, "nlu", "train")
    pool = ExemplarPool(Retriever(tiny_retriever, device="cpu"), "nlu", train, "fp", tmp_path)
    for query, picked in zip(train, pool.search(train, 5)):
        assert picked and all(train[i]["dialogue_id"] != query["dialogue_id"] for i in picked)


def test_the_key_is_the_last_turn_only(tiny_retriever, embedded_build, tmp_path):
    train, test = split_rows(embedded_build, "nlu", "train"), split_rows(embedded_build, "nlu", "test")
    pool = ExemplarPool(Retriever(tiny_retriever, device="cpu"), "nlu", train, "fp", tmp_path)
    query = test[4]
    other_history = {**query, "context": query["context"][:-1][:1] + query["context"][-1:]}
    assert last_turn(other_history) == last_turn(query)
    assert pool.search([other_history], 5) == pool.search([query], 5)


def test_pool_embeddings_are_cached_by_retriever_and_dataset_fingerprint(
        tiny_retriever, embedded_build, tmp_path, monkeypatch):
    train = split_rows(embedded_build, "pol", "train")
    retriever = Retriever(tiny_retriever, device="cpu")
    first = ExemplarPool(retriever, "pol", train, "fingerprint-a", tmp_path)
    assert not first.cache_hit and first.cache_file.is_file()
    encoded = []
    monkeypatch.setattr(retriever, "encode", lambda texts: encoded.append(len(texts)) or
                        first.vectors[:len(texts)])
    again = ExemplarPool(retriever, "pol", train, "fingerprint-a", tmp_path)
    assert again.cache_hit and encoded == [] and np.array_equal(again.vectors, first.vectors)
    changed = ExemplarPool(retriever, "pol", train, "fingerprint-b", tmp_path)
    assert not changed.cache_hit and encoded == [len(train)]
    assert changed.cache_file != first.cache_file
    assert again.describe()["pooling"] == "cls" and again.describe()["key"] == "last turn"
