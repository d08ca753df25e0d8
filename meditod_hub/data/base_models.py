"""The one registry of base models: who each model the kit trains or compares with is.

A model's identity used to be spread over the model cards' table (name, link, licence,
citation), `paper_results` (how the paper names it, its family), `models.tiny` (which tiny
stand-in plays it) and the few-shot runner; each now reads it here, so adding a model is one
entry. Keyed by the kit's name for the model: its recipe folder (`recipes/<key>/`) and its row
in `paper_results` (the paper's numbers stay there: they are results, not identity; in-context
rows are `in-context-<key>`). `family` is the `models.families` name (a string: families sit on
the floor above), `gpt` for the OpenAI models, which no recipe trains. The card facts (name,
link, licence, citation) are set for the models a recipe trains, the ones a model card can name
as its base. On the data floor (`meditod_hub.layers`): `paper_results` reads it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class BaseModel:
    key: str  # recipe folder and `paper_results` key
    family: str
    served: str | None = None  # its Hub id, or the id an OpenAI-compatible endpoint serves it as
    paper_name: str | None = None  # how the paper names it; None: not one of the paper's
    tiny: str | None = None  # the `models.tiny` stand-in that plays it on a CPU
    name: str | None = None  # the card facts, for models a recipe trains
    link: str | None = None
    license: str | None = None
    citation: str | None = None


# In the order `meditod tiny` builds the stand-ins (each first named here).
BASE_MODELS: dict[str, BaseModel] = {m.key: m for m in (
    BaseModel("llama3-8b", "chat", "meta-llama/Meta-Llama-3-8B-Instruct", "Llama3 8B", "tiny-llama",
              "Meta-Llama-3-8B-Instruct",
              "https://huggingface.co/meta-llama/Meta-Llama-3-8B-Instruct", "llama3",
              """@article{dubey2024llama3,
  title   = {The Llama 3 Herd of Models},
  author  = {Dubey, Abhimanyu and Jauhri, Abhinav and Pandey, Abhinav and others},
  journal = {arXiv preprint arXiv:2407.21783},
  year    = {2024}
}"""),
    BaseModel("openbiollm-8b", "chat", "aaditya/Llama3-OpenBioLLM-8B", "OpenBioLLM 8B",
              "tiny-llama", "Llama3-OpenBioLLM-8B",
              "https://huggingface.co/aaditya/Llama3-OpenBioLLM-8B", "llama3",
              """@misc{pal2024openbiollms,
  title        = {OpenBioLLMs: Advancing Open-Source Large Language Models for Healthcare and Life Sciences},
  author       = {Pal, Ankit and Sankarasubbu, Malaikannan},
  year         = {2024},
  howpublished = {\\url{https://huggingface.co/aaditya/Llama3-OpenBioLLM-8B}}
}"""),
    BaseModel("biogpt", "biogpt", "microsoft/biogpt", "BioGPT", "tiny-biogpt", "BioGPT",
              "https://huggingface.co/microsoft/biogpt", "mit", """@article{luo2022biogpt,
  title   = {{BioGPT}: Generative Pre-trained Transformer for Biomedical Text Generation and Mining},
  author  = {Luo, Renqian and Sun, Liai and Xia, Yingce and Qin, Tao and Zhang, Sheng and Poon, Hoifung and Liu, Tie-Yan},
  journal = {Briefings in Bioinformatics},
  volume  = {23},
  number  = {6},
  pages   = {bbac409},
  year    = {2022}
}"""),
    BaseModel("flan-t5-base", "flan-t5", "google/flan-t5-base", "Flan-T5 (base)", "tiny-t5",
              "Flan-T5 base", "https://huggingface.co/google/flan-t5-base", "apache-2.0",
              """@article{chung2022scaling,
  title   = {Scaling Instruction-Finetuned Language Models},
  author  = {Chung, Hyung Won and Hou, Le and Longpre, Shayne and others},
  journal = {arXiv preprint arXiv:2210.11416},
  year    = {2022}
}"""),
    # not on the Hub: the recipes read build/pptod-base
    BaseModel("pptod-base", "pptod", None, "PPTOD (base)", "tiny-pptod", "PPTOD base",
              "https://github.com/awslabs/pptod", "apache-2.0", """@inproceedings{su2022pptod,
  title     = {Multi-Task Pre-Training for Plug-and-Play Task-Oriented Dialogue System},
  author    = {Su, Yixuan and Shu, Lei and Mansimov, Elman and Gupta, Arshit and Cai, Deng and Lai, Yi-An and Zhang, Yi},
  booktitle = {Proceedings of the 60th Annual Meeting of the Association for Computational Linguistics},
  pages     = {4661--4676},
  year      = {2022}
}"""),
    # the real small model `meditod pretrained` converts offline (not one of the paper's)
    BaseModel("smollm2-135m", "chat", "HuggingFaceTB/SmolLM2-135M-Instruct", None, "tiny-llama",
              "SmolLM2-135M-Instruct", "https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct",
              "apache-2.0", """@misc{allal2025smollm2,
  title         = {SmolLM2: When Smol Goes Big -- Data-Centric Training of a Small Language Model},
  author        = {Allal, Loubna Ben and Lozhkov, Anton and Bakouch, Elie and others},
  year          = {2025},
  eprint        = {2502.02737},
  archivePrefix = {arXiv}
}"""),
    # the paper's in-context baselines, which no recipe trains
    BaseModel("openbiollm-70b", "chat", "aaditya/Llama3-OpenBioLLM-70B", "OpenBioLLM 70B"),
    BaseModel("llama3-70b", "chat", "meta-llama/Meta-Llama-3-70B-Instruct", "Llama3 70B"),
    BaseModel("chatgpt", "gpt", "gpt-3.5-turbo-0125", "ChatGPT"),
    BaseModel("gpt-4", "gpt", "gpt-4-1106-preview", "GPT-4"),
    BaseModel("gpt-4-turbo", "gpt", "gpt-4-turbo-2024-04-09", "GPT-4-Turbo"),
)}


def carded(base_model: str) -> BaseModel | None:
    """The model with card facts a run's `base_model` (a Hub id or local folder) names, by its
    last part: the Hub id's (`Meta-Llama-3-8B-Instruct`) or the key (`build/pptod-base`)."""
    name = Path(base_model).name
    return next((m for m in BASE_MODELS.values() if m.citation
                 and name in (m.key, Path(m.served or m.key).name)), None)
