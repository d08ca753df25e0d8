"""The MediTOD paper's reported numbers (arXiv 2410.14204), kept as data so model cards, the
results tables, the leaderboard and docs/evaluation.md can set a run beside them. The one place they
live: tests/test_paper_results.py checks every number against the paper's tables.

Keys follow results.json (`meditod_hub.models.records.Results`), nested fields joined with dots
(`medical.f1`, `precision_at_k.4`), so a run's results and a paper row compare key by key.
Models are the paper's supervised rows by their key in the model registry (`base_models`: the
recipe's name, `recipes/<model>/`, which also says how the paper names each); the
in-context baselines are kept under `in-context-<model>` names (the registry's `served`
says which model each is; five retrieved exemplars, greedy). In-domain (`test`, respiratory): the
appendix tables (precision, recall and F1 overall, medical and non-medical; POL also P@K) and
the NLG table. Out-of-domain (`test_ood`, musculoskeletal): F1 overall, medical and
non-medical (NLU, POL) and the NLG scores, for the two supervised 8B models, ChatGPT and
GPT-4-Turbo. Units as in the paper: F1, precision and ROUGE in [0, 1]; BLEU x100 (NLTK corpus
BLEU); BERTScore is unrescaled roberta-large F1. A metric the paper does not report is absent.
Rows are kept in the paper's order (supervised, then in-context). On the data floor
(`meditod_hub.layers`): the dataset card shows the headline table, so `meditod build` reads it.
"""

from __future__ import annotations

from meditod_hub.data.base_models import BASE_MODELS, BaseModel
from meditod_hub.data.release import EVAL_SPLITS, OOD_SPLIT
from meditod_hub.data.tasks import TASK_NAMES, TASKS, Metric

SOURCE = ("MediTOD paper (arXiv 2410.14204): in-domain NLU, POL (P/R/F1, P@K) and NLG tables, and "
          "its out-of-domain (musculoskeletal) results")
IN_CONTEXT = "in-context-"

_PRF = tuple(f"{prefix}{stat}" for prefix in ("", "medical.", "non_medical.")
             for stat in ("precision", "recall", "f1"))
_PAK = ("precision_at_k.1", "precision_at_k.4", "precision_at_k.8", "precision_at_k.inf")
_F1 = ("f1", "medical.f1", "non_medical.f1")
_NLG = ("bleu2", "bleu4", "rouge1", "rougeL", "bertscore.f1")

# tab:nlu_results_ext: overall P R F1 | medical P R F1 | non-medical P R F1
_NLU_TEST = {
    "pptod-base": (0.7205, 0.6528, 0.6849, 0.7513, 0.7039, 0.7268, 0.5827, 0.4599, 0.5141),
    "flan-t5-base": (0.7049, 0.6733, 0.6887, 0.7468, 0.7244, 0.7354, 0.5347, 0.4807, 0.5062),
    "biogpt": (0.5968, 0.6217, 0.6090, 0.6526, 0.6701, 0.6612, 0.4000, 0.4392, 0.4187),
    "openbiollm-8b": (0.6774, 0.6689, 0.6731, 0.7488, 0.7110, 0.7294, 0.4514, 0.5104, 0.4791),
    "llama3-8b": (0.7230, 0.7050, 0.7139, 0.7704, 0.7504, 0.7603, 0.5455, 0.5341, 0.5397),
    "in-context-openbiollm-8b": (0.6654, 0.5557, 0.6056, 0.6826, 0.6079, 0.6431, 0.5735, 0.3591,
                                 0.4416),
    "in-context-openbiollm-70b": (0.5977, 0.6208, 0.6090, 0.6476, 0.6522, 0.6499, 0.4348, 0.5030,
                                  0.4664),
    "in-context-llama3-8b": (0.5208, 0.5296, 0.5251, 0.5714, 0.5512, 0.5611, 0.3692, 0.4481,
                             0.4048),
    "in-context-llama3-70b": (0.5497, 0.5996, 0.5736, 0.6109, 0.6191, 0.6150, 0.3812, 0.5266,
                              0.4422),
    "in-context-chatgpt": (0.5843, 0.6017, 0.5929, 0.6273, 0.6402, 0.6337, 0.4290, 0.4570, 0.4425),
    "in-context-gpt-4": (0.6451, 0.6254, 0.6351, 0.6896, 0.6543, 0.6715, 0.4929, 0.5163, 0.5043),
    "in-context-gpt-4-turbo": (0.6861, 0.6434, 0.6641, 0.7279, 0.6740, 0.6999, 0.5378, 0.5282,
                               0.5329),
}
# tab:pol_results_ext: as NLU, then P@1, P@4, P@8, P@inf
_POL_TEST = {
    "pptod-base": (0.2243, 0.1973, 0.2099, 0.2240, 0.1978, 0.2101, 0.2308, 0.1875, 0.2069,
                   0.1528, 0.2839, 0.3261, 0.3592),
    "flan-t5-base": (0.1756, 0.2322, 0.1999, 0.1797, 0.2341, 0.2033, 0.1194, 0.2000, 0.1495,
                     0.1152, 0.2041, 0.2383, 0.2645),
    "biogpt": (0.1831, 0.1911, 0.1870, 0.1816, 0.1891, 0.1853, 0.2069, 0.2250, 0.2156,
               0.1345, 0.2509, 0.2999, 0.3478),
    "openbiollm-8b": (0.2132, 0.2041, 0.2085, 0.2308, 0.2051, 0.2172, 0.0872, 0.1875, 0.1190,
                      0.1608, 0.2953, 0.3375, 0.3740),
    "llama3-8b": (0.2460, 0.2322, 0.2389, 0.2454, 0.2333, 0.2392, 0.2576, 0.2125, 0.2329,
                  0.1881, 0.3181, 0.3820, 0.4162),
    "in-context-openbiollm-8b": (0.1156, 0.0966, 0.1052, 0.1177, 0.1007, 0.1086, 0.0513, 0.0250,
                                 0.0336, 0.0593, 0.1220, 0.1505, 0.1938),
    "in-context-openbiollm-70b": (0.1275, 0.1158, 0.1214, 0.1344, 0.1210, 0.1273, 0.0244, 0.0250,
                                  0.0247, 0.0855, 0.1357, 0.1619, 0.1950),
    "in-context-llama3-8b": (0.1164, 0.0993, 0.1072, 0.1199, 0.1043, 0.1116, 0.0222, 0.0125,
                             0.0160, 0.0616, 0.1117, 0.1357, 0.1847),
    "in-context-llama3-70b": (0.1088, 0.0925, 0.1000, 0.1125, 0.0971, 0.1042, 0.0200, 0.0125,
                              0.0154, 0.0604, 0.1220, 0.1505, 0.1779),
    "in-context-chatgpt": (0.1191, 0.1021, 0.1099, 0.1198, 0.1058, 0.1124, 0.0938, 0.0375,
                           0.0536, 0.0832, 0.1448, 0.1790, 0.2201),
    "in-context-gpt-4": (0.0948, 0.0863, 0.0904, 0.0970, 0.0906, 0.0937, 0.0250, 0.0125, 0.0167,
                         0.0410, 0.0798, 0.1106, 0.1893),
    "in-context-gpt-4-turbo": (0.1384, 0.1219, 0.1296, 0.1416, 0.1283, 0.1346, 0.0278, 0.0125,
                               0.0172, 0.0855, 0.1357, 0.1699, 0.203),
}
# tab:nlg_results: BLEU-2, BLEU-4, ROUGE-1, ROUGE-L, BERTScore
_NLG_TEST = {
    "pptod-base": (18.2, 8.2, 0.300, 0.286, 0.881),
    "flan-t5-base": (27.2, 15.3, 0.492, 0.466, 0.907),
    "biogpt": (24.3, 13.1, 0.462, 0.438, 0.901),
    "openbiollm-8b": (28.8, 16.0, 0.488, 0.462, 0.908),
    "llama3-8b": (31.4, 17.5, 0.492, 0.459, 0.908),
    "in-context-openbiollm-8b": (19.4, 8.6, 0.318, 0.295, 0.885),
    "in-context-openbiollm-70b": (21.5, 10.5, 0.361, 0.325, 0.889),
    "in-context-llama3-8b": (18.3, 7.6, 0.302, 0.270, 0.880),
    "in-context-llama3-70b": (18.9, 8.1, 0.310, 0.274, 0.881),
    "in-context-chatgpt": (20.4, 8.7, 0.335, 0.298, 0.890),
    "in-context-gpt-4": (16.1, 6.3, 0.300, 0.260, 0.870),
    "in-context-gpt-4-turbo": (19.3, 8.1, 0.327, 0.289, 0.889),
}
# tab:ood_nlu, tab:ood_pol: F1 overall, medical, non-medical
_NLU_OOD = {
    "openbiollm-8b": (0.4747, 0.5027, 0.3512),
    "llama3-8b": (0.524, 0.5391, 0.4431),
    "in-context-chatgpt": (0.3637, 0.3953, 0.2141),
    "in-context-gpt-4-turbo": (0.4481, 0.476, 0.3176),
}
_POL_OOD = {
    "openbiollm-8b": (0.2473, 0.2518, 0.1877),
    "llama3-8b": (0.2236, 0.2233, 0.2294),
    "in-context-chatgpt": (0.0836, 0.0841, 0.0702),
    "in-context-gpt-4-turbo": (0.1252, 0.1276, 0.0722),
}
# tab:ood_nlg (sic: the paper prints ChatGPT's OOD BLEU-4 as 7.029)
_NLG_OOD = {
    "openbiollm-8b": (25.1, 13.9, 0.486, 0.449, 0.907),
    "llama3-8b": (26.7, 13.9, 0.469, 0.429, 0.904),
    "in-context-chatgpt": (17.8, 7.029, 0.340, 0.297, 0.893),
    "in-context-gpt-4-turbo": (18.9, 7.0, 0.342, 0.295, 0.892),
}
# each task's tables (in the registry's order: NLU, POL, NLG) on the test, then the OOD split
_BY_TASK = (((_PRF, _NLU_TEST), (_F1, _NLU_OOD)),
            ((_PRF + _PAK, _POL_TEST), (_F1, _POL_OOD)),
            ((_NLG, _NLG_TEST), (_NLG, _NLG_OOD)))
_TABLES = {(task, split): tables[n] for n, split in enumerate(("test", OOD_SPLIT))
           for task, tables in zip(TASK_NAMES, _BY_TASK)}

# (model, task, split) -> {metric key: value}, in the paper's row order
RESULTS: dict[tuple[str, str, str], dict[str, float]] = {
    (model, task, split): dict(zip(keys, values))
    for (task, split), (keys, rows) in _TABLES.items() for model, values in rows.items()}


def paper_row(model: str, task: str, split: str) -> dict[str, float]:
    """The paper's numbers for one model, task and split ({} when the paper has none)."""
    return RESULTS.get((model, task, split), {})


def paper_model(key: str) -> BaseModel:
    """The registry's model of a `RESULTS` key (`llama3-8b`, `in-context-gpt-4`)."""
    return BASE_MODELS[key.removeprefix(IN_CONTEXT)]


def setting(key: str) -> str:
    return "in-context" if key.startswith(IN_CONTEXT) else "supervised"


def cell(value: float | None, metric: Metric) -> str:
    """A metric's value in a table, as every table of the kit writes it."""
    return "—" if value is None else format(value, metric.fmt)


def headline_markdown() -> str:
    """The paper's headline table: each task's headline metric per model and split (the dataset
    card and docs/evaluation.md show it; tests/test_results.py keeps that copy equal to it)."""
    tasks = list(TASKS.values())
    heads = [f"{t.name.upper()} {t.headline_metric.name.split(' (')[0]}"
             + ("" if split == "test" else " (OOD)") for split in EVAL_SPLITS for t in tasks]
    lines = ["| model | setting | " + " | ".join(heads) + " |", "|---" * (2 + len(heads)) + "|"]
    for key in dict.fromkeys(model for model, _, _ in RESULTS):
        cells = [cell(paper_row(key, t.name, split).get(t.headline), t.headline_metric)
                 for split in EVAL_SPLITS for t in tasks]
        lines.append(f"| {paper_model(key).paper_name} | {setting(key)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
