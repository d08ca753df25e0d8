"""The model registry (`data.base_models`) agrees with the recipes, the paper's rows and the tiny
stand-ins that read it."""

from __future__ import annotations

from pathlib import Path

import yaml

from meditod_hub.data import paper_results
from meditod_hub.data.base_models import BASE_MODELS, carded
from meditod_hub.models import tiny
from meditod_hub.models.families import FAMILIES

RECIPES = Path(__file__).resolve().parent.parent / "recipes"


def test_every_carded_model_has_recipes_whose_base_it_is():
    for model in (m for m in BASE_MODELS.values() if m.citation):
        recipes = sorted((RECIPES / model.key).glob("*.yaml"))
        assert recipes, model.key
        for path in recipes:
            assert carded(yaml.safe_load(path.read_text())["model_name_or_path"]) is model, path
        assert model.name and model.link and model.license and model.tiny, model.key


def test_paper_rows_are_the_registrys_models_and_families_are_the_kits():
    keys = {key.removeprefix(paper_results.IN_CONTEXT) for key, _, _ in paper_results.RESULTS}
    assert keys == {m.key for m in BASE_MODELS.values() if m.paper_name}
    assert {m.family for m in BASE_MODELS.values()} == set(FAMILIES) | {"gpt"}


def test_tiny_stand_ins_play_their_models_family():
    assert tiny.FAMILY_OF == {"tiny-llama": "chat", "tiny-biogpt": "biogpt", "tiny-t5": "flan-t5",
                              "tiny-pptod": "pptod"}
    for model in BASE_MODELS.values():
        assert model.tiny is None or tiny.FAMILY_OF[model.tiny] == model.family


def test_a_card_finds_its_base_by_hub_id_or_folder():
    assert carded("meta-llama/Meta-Llama-3-8B-Instruct").key == "llama3-8b"
    assert carded("build/pptod-base").key == "pptod-base"
    assert carded("build/pretrained/smollm2-135m").key == "smollm2-135m"
    assert carded("build/tiny-models/tiny-llama") is None
    assert carded("meta-llama/Meta-Llama-3-70B-Instruct") is None  # no recipe trains it
