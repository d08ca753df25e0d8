"""The MediTOD paper's reported numbers (arXiv 2410.14204, tables transcribed in
`spec/paper-results.md`), kept as data so model cards and the README can set a run beside them.

Keys follow the evaluation results JSON (`meditod_hub.evaluate_cli`), nested fields joined with
dots (`medical.f1`, `precision_at_k.4`), so a run's flattened results and a paper row compare key
by key. Models are the recipe names (`recipes/<model>/`); the paper's in-context baselines are
kept under `in-context-*` names. Splits: `test` (respiratory, in-domain) and `test_ood`
(musculoskeletal); the paper reports OOD only for the two 8B models, partly (NLU/POL: F1 only).
Units as in the paper: F1, precision and ROUGE in [0, 1]; BLEU x100 (NLTK corpus BLEU);
BERTScore is unrescaled roberta-large F1. A metric the paper does not report is absent.
"""

from __future__ import annotations

SOURCE = ("MediTOD paper (arXiv 2410.14204): in-domain NLU, POL (F1, P@K) and NLG tables, and its "
          "out-of-domain (musculoskeletal) results")

_NLU_KEYS = ("precision", "recall", "f1", "medical.f1", "non_medical.f1")
_POL_KEYS = ("f1", "medical.f1", "non_medical.f1",
             "precision_at_k.1", "precision_at_k.4", "precision_at_k.8", "precision_at_k.inf")
_NLG_KEYS = ("bleu2", "bleu4", "rouge1", "rougeL", "bertscore.f1")

_NLU_TEST = {
    "pptod-base": (0.7205, 0.6528, 0.6849, 0.7268, 0.5141),
    "flan-t5-base": (0.7049, 0.6733, 0.6887, 0.7354, 0.5062),
    "biogpt": (0.5968, 0.6217, 0.6090, 0.6612, 0.4187),
    "openbiollm-8b": (0.6774, 0.6689, 0.6731, 0.7294, 0.4791),
    "llama3-8b": (0.7230, 0.7050, 0.7139, 0.7603, 0.5397),
    "in-context-gpt-4-turbo": (0.6861, 0.6434, 0.6641, 0.6999, 0.5329),
}
_POL_TEST = {
    "pptod-base": (0.2099, 0.2101, 0.2069, 0.1528, 0.2839, 0.3261, 0.3592),
    "flan-t5-base": (0.1999, 0.2033, 0.1495, 0.1152, 0.2041, 0.2383, 0.2645),
    "biogpt": (0.1870, 0.1853, 0.2156, 0.1345, 0.2509, 0.2999, 0.3478),
    "openbiollm-8b": (0.2085, 0.2172, 0.1190, 0.1608, 0.2953, 0.3375, 0.3740),
    "llama3-8b": (0.2389, 0.2392, 0.2329, 0.1881, 0.3181, 0.3820, 0.4162),
    "in-context-gpt-4-turbo": (0.1296, 0.1346, 0.0172, 0.0855, 0.1357, 0.1699, 0.203),
}
_NLG_TEST = {
    "pptod-base": (18.2, 8.2, 0.300, 0.286, 0.881),
    "flan-t5-base": (27.2, 15.3, 0.492, 0.466, 0.907),
    "biogpt": (24.3, 13.1, 0.462, 0.438, 0.901),
    "openbiollm-8b": (28.8, 16.0, 0.488, 0.462, 0.908),
    "llama3-8b": (31.4, 17.5, 0.492, 0.459, 0.908),
    "in-context-openbiollm-70b": (21.5, 10.5, 0.361, 0.325, 0.889),
}
_OOD = {
    ("llama3-8b", "nlu"): {"f1": 0.524, "medical.f1": 0.5391, "non_medical.f1": 0.4431},
    ("openbiollm-8b", "nlu"): {"f1": 0.4747},
    ("openbiollm-8b", "pol"): {"f1": 0.2473},
    ("llama3-8b", "pol"): {"f1": 0.2236},
    ("llama3-8b", "nlg"): dict(zip(_NLG_KEYS, (26.7, 13.9, 0.469, 0.429, 0.904))),
    ("openbiollm-8b", "nlg"): dict(zip(_NLG_KEYS, (25.1, 13.9, 0.486, 0.449, 0.907))),
}

# (model, task, split) -> {metric key: value}
RESULTS: dict[tuple[str, str, str], dict[str, float]] = {
    **{(m, "nlu", "test"): dict(zip(_NLU_KEYS, v)) for m, v in _NLU_TEST.items()},
    **{(m, "pol", "test"): dict(zip(_POL_KEYS, v)) for m, v in _POL_TEST.items()},
    **{(m, "nlg", "test"): dict(zip(_NLG_KEYS, v)) for m, v in _NLG_TEST.items()},
    **{(m, task, "test_ood"): v for (m, task), v in _OOD.items()},
}


def paper_row(model: str, task: str, split: str) -> dict[str, float]:
    """The paper's numbers for one model, task and split ({} when the paper has none)."""
    return RESULTS.get((model, task, split), {})
