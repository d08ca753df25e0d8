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

.PHONY: setup demo test data infos bench train predict eval push push-data published clean \
	tiny-runs eval-cascade chat app space screenshot

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
	if [ -f runs/tiny-llama/nlg/run_info.json ]; then $(PY) bench/bench_assistant.py; \
	else echo "bench_assistant skipped: run make tiny-runs first"; fi

## train: train MODEL (a recipes/ folder) on TASK, or nlu, pol, nlg in turn; run dir OUT/TASK (OUT default
## runs/MODEL); GPUS=N launches accelerate (ACCELERATE_CONFIG=recipes/accelerate/fsdp_qlora.yaml|zero3.yaml
## to shard); ARGS="--key=value ..." overrides any recipe key
train: setup
	DATA=$(DATA) OUT=$(OUT) GPUS=$(GPUS) ARGS='$(ARGS)' PYTHON=$(PY) scripts/train.sh $(MODEL) $(TASK)

## predict: greedy batched predictions of MODEL_PATH (run dir, adapter or Hub id) for TASK on SPLIT
predict: setup
	$(PY) -m meditod_hub.predict --model_path $(MODEL_PATH) --task $(TASK) --data $(DATA) \
		--split $(SPLIT) --out $(or $(OUT),$(MODEL_PATH)/eval/$(SPLIT)/predictions.jsonl)

## eval: score PREDICTIONS (JSON lines) for TASK on SPLIT of the built DATA; writes OUT (+ .md, .png)
eval: setup
	$(PY) -m meditod_hub.evaluate_cli --task $(TASK) --data $(DATA) --split $(SPLIT) \
		--predictions $(PREDICTIONS) --out $(OUT) --judge $(or $(JUDGE),exact)

## push: publish a trained, evaluated RUN as REPO (LoRA adapter + card + results; private unless PUBLIC=1;
## MERGED=1 merges the adapter into a 16-bit base; CASCADE=runs/cascade/<name>/<split> adds the
## cascaded table of an eval-cascade that ran this run). Needs a write token (HF_TOKEN or `hf auth login`).
push: setup
	$(PY) -m meditod_hub.publish --run $(RUN) --repo $(REPO) $(if $(PUBLIC),--public) $(if $(MERGED),--merged) \
		$(if $(CASCADE),--cascade "$(CASCADE)")

## tiny-runs: the tiny offline models of chat, app and space: runs/tiny-llama/{nlu,pol,nlg}, trained on
## the embedded synthetic sample (build, tiny models, three recipes; a few CPU minutes)
tiny-runs: setup
	$(PY) meditod.py build --source data/sample --out "$(DATA)"
	$(PY) -m meditod_hub.tiny --data "$(DATA)" --out build/tiny-models --models tiny-llama
	DATA=$(DATA) PYTHON=$(PY) scripts/train.sh tiny-llama

## eval-cascade: NLU -> predicted state -> POL -> NLG on SPLIT of DATA, beside gold inputs, with the
## attribution of the drop; NLU/POL/NLG are run folders or Hub ids. Writes OUT (default
## runs/cascade/<model>/<split>): results.json, results.md, results.png, predictions/
eval-cascade: setup
	$(PY) -m meditod_hub.cli eval-cascade --nlu "$(NLU)" --pol "$(POL)" --nlg "$(NLG)" --data "$(DATA)" \
		--split "$(SPLIT)" $(if $(OUT),--out "$(OUT)") $(ARGS)

## chat: talk to the NLU/POL/NLG models as the patient (default: the tiny runs); ARGS=--show_state
chat: setup
	$(PY) -m meditod_hub.cli chat --nlu "$(or $(NLU),runs/tiny-llama/nlu)" --pol "$(or $(POL),runs/tiny-llama/pol)" \
		--nlg "$(or $(NLG),runs/tiny-llama/nlg)" $(ARGS)

## app: the Gradio chat app on http://127.0.0.1:7860 (models: MEDITOD_NLU/POL/NLG, default the tiny runs)
app: setup
	$(PY) app.py

## space: upload the app as the Hub Space REPO, private unless PUBLIC=1; NLU/POL/NLG: Hub ids or run
## folders (default: the tiny runs, uploaded with it)
space: setup
	$(PY) -m meditod_hub.cli space --repo "$(REPO)" $(if $(NLU),--nlu "$(NLU)") $(if $(POL),--pol "$(POL)") \
		$(if $(NLG),--nlg "$(NLG)") $(if $(PUBLIC),--public)

## screenshot: rerun the browser test and keep its screenshot as docs/assistant.png (the README's)
screenshot: setup
	MEDITOD_SCREENSHOT=docs/assistant.png $(PY) -m pytest tests/test_app.py -k browser -q

## published: the README table of published (model, task) repos and their headline metric
published: setup
	$(PY) -m meditod_hub.publish --table runs/

## push-data: upload the built ./$(DATA) as REPO (private, gated unless synthetic; PUBLIC=1 for --public)
push-data: setup
	$(PY) meditod.py push --folder $(DATA) --repo $(REPO) $(if $(PUBLIC),--public)

clean:
	rm -rf .cache runs out $(DATA)
