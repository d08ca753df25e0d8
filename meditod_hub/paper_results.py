"""The MediTOD paper's reported numbers (arXiv 2410.14204), kept as data so model cards and the
README can set a run beside them.

Keys follow results.json (`meditod_hub.records.Results`), nested fields joined with dots
(`medical.f1`, `precision_at_k.4`), so a run's results and a paper row compare key by key.
Models are the paper's supervised rows by the name of their recipe (`recipes/<model>/`); the
in-context baselines are kept under `in-context-<model>` names (chatgpt = gpt-3.5-turbo-0125,
gpt-4 = gpt-4-1106-preview, gpt-4-turbo = gpt-4-turbo-2024-04-09, llama3-8b/70b and
openbiollm-8b/70b; five retrieved exemplars, greedy), every one the paper's NLU, POL and NLG
tables report, in-domain and OOD. Splits: `test` (respiratory, in-domain) and `test_ood`
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
_NLU_IN_CONTEXT = {  # overall P and R from the appendix table (tab:nlu_results_ext)
    "openbiollm-8b": (0.6654, 0.5557, 0.6056, 0.6431, 0.4416),
    "openbiollm-70b": (0.5977, 0.6208, 0.6090, 0.6499, 0.4664),
    "llama3-8b": (0.5208, 0.5296, 0.5251, 0.5611, 0.4048),
    "llama3-70b": (0.5497, 0.5996, 0.5736, 0.6150, 0.4422),
    "chatgpt": (0.5843, 0.6017, 0.5929, 0.6337, 0.4425),
    "gpt-4": (0.6451, 0.6254, 0.6351, 0.6715, 0.5043),
}
_POL_TEST = {
    "pptod-base": (0.2099, 0.2101, 0.2069, 0.1528, 0.2839, 0.3261, 0.3592),
    "flan-t5-base": (0.1999, 0.2033, 0.1495, 0.1152, 0.2041, 0.2383, 0.2645),
    "biogpt": (0.1870, 0.1853, 0.2156, 0.1345, 0.2509, 0.2999, 0.3478),
    "openbiollm-8b": (0.2085, 0.2172, 0.1190, 0.1608, 0.2953, 0.3375, 0.3740),
    "llama3-8b": (0.2389, 0.2392, 0.2329, 0.1881, 0.3181, 0.3820, 0.4162),
    "in-context-gpt-4-turbo": (0.1296, 0.1346, 0.0172, 0.0855, 0.1357, 0.1699, 0.203),
    "in-context-openbiollm-8b": (0.1052, 0.1086, 0.0336, 0.0593, 0.1220, 0.1505, 0.1938),
    "in-context-openbiollm-70b": (0.1214, 0.1273, 0.0247, 0.0855, 0.1357, 0.1619, 0.1950),
    "in-context-llama3-8b": (0.1072, 0.1116, 0.0160, 0.0616, 0.1117, 0.1357, 0.1847),
    "in-context-llama3-70b": (0.1000, 0.1042, 0.0154, 0.0604, 0.1220, 0.1505, 0.1779),
    "in-context-chatgpt": (0.1099, 0.1124, 0.0536, 0.0832, 0.1448, 0.1790, 0.2201),
    "in-context-gpt-4": (0.0904, 0.0937, 0.0167, 0.0410, 0.0798, 0.1106, 0.1893),
}
_NLG_TEST = {
    "pptod-base": (18.2, 8.2, 0.300, 0.286, 0.881),
    "flan-t5-base": (27.2, 15.3, 0.492, 0.466, 0.907),
    "biogpt": (24.3, 13.1, 0.462, 0.438, 0.901),
    "openbiollm-8b": (28.8, 16.0, 0.488, 0.462, 0.908),
    "llama3-8b": (31.4, 17.5, 0.492, 0.459, 0.908),
    "in-context-openbiollm-70b": (21.5, 10.5, 0.361, 0.325, 0.889),
    "in-context-openbiollm-8b": (19.4, 8.6, 0.318, 0.295, 0.885),
    "in-context-llama3-8b": (18.3, 7.6, 0.302, 0.270, 0.880),
    "in-context-llama3-70b": (18.9, 8.1, 0.310, 0.274, 0.881),
    "in-context-chatgpt": (20.4, 8.7, 0.335, 0.298, 0.890),
    "in-context-gpt-4": (16.1, 6.3, 0.300, 0.260, 0.870),
    "in-context-gpt-4-turbo": (19.3, 8.1, 0.327, 0.289, 0.889),
}
_OOD = {
    ("llama3-8b", "nlu"): {"f1": 0.524, "medical.f1": 0.5391, "non_medical.f1": 0.4431},
    ("openbiollm-8b", "nlu"): {"f1": 0.4747},
    ("openbiollm-8b", "pol"): {"f1": 0.2473},
    ("llama3-8b", "pol"): {"f1": 0.2236},
    ("llama3-8b", "nlg"): dict(zip(_NLG_KEYS, (26.7, 13.9, 0.469, 0.429, 0.904))),
    ("openbiollm-8b", "nlg"): dict(zip(_NLG_KEYS, (25.1, 13.9, 0.486, 0.449, 0.907))),
    ("in-context-chatgpt", "nlu"): {"f1": 0.3637, "medical.f1": 0.3953, "non_medical.f1": 0.2141},
    ("in-context-gpt-4-turbo", "nlu"): {"f1": 0.4481, "medical.f1": 0.476,
                                        "non_medical.f1": 0.3176},
    ("in-context-chatgpt", "pol"): {"f1": 0.0836, "medical.f1": 0.0841, "non_medical.f1": 0.0702},
    ("in-context-gpt-4-turbo", "pol"): {"f1": 0.1252, "medical.f1": 0.1276,
                                        "non_medical.f1": 0.0722},
    # sic: the paper prints ChatGPT's OOD BLEU-4 as 7.029
    ("in-context-chatgpt", "nlg"): dict(zip(_NLG_KEYS, (17.8, 7.029, 0.340, 0.297, 0.893))),
    ("in-context-gpt-4-turbo", "nlg"): dict(zip(_NLG_KEYS, (18.9, 7.0, 0.342, 0.295, 0.892))),
}

# (model, task, split) -> {metric key: value}
RESULTS: dict[tuple[str, str, str], dict[str, float]] = {
    **{(m, "nlu", "test"): dict(zip(_NLU_KEYS, v)) for m, v in _NLU_TEST.items()},
    **{(f"in-context-{m}", "nlu", "test"): dict(zip(_NLU_KEYS, v))
       for m, v in _NLU_IN_CONTEXT.items()},
    **{(m, "pol", "test"): dict(zip(_POL_KEYS, v)) for m, v in _POL_TEST.items()},
    **{(m, "nlg", "test"): dict(zip(_NLG_KEYS, v)) for m, v in _NLG_TEST.items()},
    **{(m, task, "test_ood"): v for (m, task), v in _OOD.items()},
}


def paper_row(model: str, task: str, split: str) -> dict[str, float]:
    """The paper's numbers for one model, task and split ({} when the paper has none)."""
    return RESULTS.get((model, task, split), {})
