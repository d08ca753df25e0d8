# MediTOD Hub kit. `make demo` runs the whole pipeline on the embedded synthetic sample (CPU);
# `make test` runs the offline test suite. Every target that needs Python depends on `setup`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Installed first and explicitly: letting pip resolve torch pulls a multi-GB CUDA build.
TORCH ?= torch==2.13.0
STAMP := $(VENV)/.installed

SOURCE ?= data/sample
DATA ?= meditod
GPUS ?= 1
SPLIT ?= test
PYTEST_ARGS ?=

.PHONY: setup demo test data infos bench train predict fewshot eval push push-data published clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "$(TORCH)"
	$(PY) -m pip install -q -e '.[test]'
	touch $@

## data: build SOURCE (a release folder; default the embedded sample) into ./$(DATA)
data: setup
	$(PY) meditod.py build --source $(SOURCE) $(if $(OOD_SOURCE),--ood-source $(OOD_SOURCE)) --out $(DATA)

## infos: regenerate the top-level dataset_infos.json from the embedded sample
infos: setup
	$(PY) meditod.py build --source data/sample --out .cache/infos/meditod
	cp .cache/infos/meditod/dataset_infos.json dataset_infos.json

## demo: the whole pipeline on the embedded synthetic sample, on CPU: build, tiny models, train
## NLU/POL/NLG, predict and evaluate (train split: memorised; test: the pipeline runs), model card
demo: setup
	$(PY) meditod.py build --source data/sample --out $(DATA)
	$(PY) -m meditod_hub.tiny --data $(DATA) --out build/tiny-models
	set -e; for t in nlu pol nlg; do r=runs/tiny-llama/$$t; DATA=$(DATA) PYTHON=$(PY) scripts/train.sh tiny-llama $$t; \
	  for s in train test; do $(PY) -m meditod_hub.predict --model_path $$r --task $$t --data $(DATA) --split $$s --out $$r/eval/$$s/predictions.jsonl; \
	  $(PY) -m meditod_hub.evaluate_cli --task $$t --data $(DATA) --split $$s --predictions $$r/eval/$$s/predictions.jsonl --out $$r/eval/$$s/results.json; done; done
	for t in nlu pol nlg; do for s in train test; do echo; echo "== tiny-llama, $$t, $$s split =="; \
	  cat runs/tiny-llama/$$t/eval/$$s/results.md; done; done
	$(PY) -m meditod_hub.publish --run runs/tiny-llama/nlu --repo local/meditod-tiny-llama-nlu --dry-run --card-dir out/model-card

test: setup
	$(PY) -m pytest $(PYTEST_ARGS)

bench: setup
	$(PY) bench/bench_build.py
	$(PY) bench/bench_metrics.py
	$(PY) bench/bench_formats.py
	$(PY) bench/bench_train.py
	$(PY) bench/bench_fewshot.py

## train: train MODEL (a recipes/ folder) on TASK, or nlu, pol, nlg in turn; run dir OUT/TASK (OUT default
## runs/MODEL); GPUS=N launches accelerate (ACCELERATE_CONFIG=recipes/accelerate/fsdp_qlora.yaml|zero3.yaml
## to shard); ARGS="--key=value ..." overrides any recipe key
train: setup
	DATA=$(DATA) OUT=$(OUT) GPUS=$(GPUS) ARGS='$(ARGS)' PYTHON=$(PY) scripts/train.sh $(MODEL) $(TASK)

## predict: greedy batched predictions of MODEL_PATH (run dir, adapter or Hub id) for TASK on SPLIT;
## ENDPOINT=<base url> [SERVED_MODEL=<name>] sends the same prompts to a server (vLLM, TGI, transformers serve)
predict: setup
	$(PY) -m meditod_hub.predict --model_path $(MODEL_PATH) --task $(TASK) --data $(DATA) \
		--split $(SPLIT) --out $(or $(OUT),$(MODEL_PATH)/eval/$(SPLIT)/predictions.jsonl) \
		$(if $(ENDPOINT),--endpoint "$(ENDPOINT)" --served_model "$(or $(SERVED_MODEL),$(MODEL_PATH))")

## fewshot: the paper's in-context baseline: MODEL as served at ENDPOINT on TASK (nlu|pol|nlg) of SPLIT,
## SHOTS retrieved exemplars (RETRIEVER); DRY_RUN=1 writes OUT/requests.jsonl and the cost estimate only
fewshot: setup
	$(PY) -m meditod_hub.cli fewshot --model "$(MODEL)" --task "$(TASK)" --data "$(DATA)" \
		--split "$(SPLIT)" --endpoint "$(or $(ENDPOINT),http://127.0.0.1:8000/v1)" \
		--shots "$(or $(SHOTS),5)" --out "$(or $(OUT),runs/fewshot/$(MODEL)/$(TASK))" \
		--retriever "$(or $(RETRIEVER),BAAI/bge-large-en-v1.5)" $(if $(filter 1 true yes,$(DRY_RUN)),--dry_run) $(ARGS)

## eval: score PREDICTIONS (JSON lines) for TASK on SPLIT of the built DATA; writes OUT (+ .md, .png)
eval: setup
	$(PY) -m meditod_hub.evaluate_cli --task $(TASK) --data $(DATA) --split $(SPLIT) \
		--predictions $(PREDICTIONS) --out $(OUT) --judge $(or $(JUDGE),exact)

## push: publish a trained, evaluated RUN as REPO (LoRA adapter + card + results; private unless PUBLIC=1;
## MERGED=1 merges the adapter into a 16-bit base). Needs a write token (HF_TOKEN or `hf auth login`).
push: setup
	$(PY) -m meditod_hub.publish --run $(RUN) --repo $(REPO) $(if $(PUBLIC),--public) $(if $(MERGED),--merged)

## published: the README table of published (model, task) repos and their headline metric
published: setup
	$(PY) -m meditod_hub.publish --table runs/

## push-data: upload the built ./$(DATA) as REPO (private, gated unless synthetic; PUBLIC=1 for --public)
push-data: setup
	$(PY) meditod.py push --folder $(DATA) --repo $(REPO) $(if $(PUBLIC),--public)

clean:
	rm -rf .cache runs out $(DATA)
