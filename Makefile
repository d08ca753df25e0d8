# MediTOD Hub kit. `make demo` runs the whole pipeline on the embedded synthetic sample (CPU);
# `make test` runs the offline test suite. Every target that needs Python depends on `setup`.
# Every target calls the `meditod` command (meditod_hub/cli.py); paths are quoted, so they may
# hold spaces.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
MEDITOD := $(VENV)/bin/meditod
# Installed first and explicitly: letting pip resolve torch pulls a multi-GB CUDA build. The
# version is pyproject.toml's lower bound (the project's one torch pin).
TORCH ?= torch==$(shell sed -n 's/.*"torch>=\([0-9.]*\)".*/\1/p' pyproject.toml)
STAMP := $(VENV)/.installed

SOURCE ?= data/sample
DATA ?= meditod
GPUS ?= 1
SPLIT ?= test
PYTEST_ARGS ?=

.PHONY: setup demo test lint data infos bench train predict fewshot eval push push-data published \
	annotate agreement tiny-runs eval-cascade chat app space screenshot clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "$(TORCH)"
	$(PY) -m pip install -q -e '.[test]'
	touch $@

## data: build SOURCE (a release folder; default the embedded sample) into ./$(DATA)
data: setup
	"$(MEDITOD)" build --source "$(SOURCE)" $(if $(OOD_SOURCE),--ood_source "$(OOD_SOURCE)") --out "$(DATA)"

## infos: regenerate the top-level dataset_infos.json from the embedded sample
infos: setup
	rm -rf .cache/infos
	"$(MEDITOD)" build --source data/sample --out .cache/infos/meditod
	cp .cache/infos/meditod/dataset_infos.json dataset_infos.json

## demo: the whole pipeline on the embedded synthetic sample, on CPU (scripts/demo_cpu.sh)
demo: setup
	PYTHON="$(PY)" scripts/demo_cpu.sh

test: setup
	$(PY) -m pytest $(PYTEST_ARGS)

## lint: ruff (lint rules and import order, configured in pyproject.toml)
lint: setup
	$(PY) -m ruff check .

bench: setup
	$(PY) bench/bench_build.py
	$(PY) bench/bench_metrics.py
	$(PY) bench/bench_formats.py
	$(PY) bench/bench_train.py
	$(PY) bench/bench_fewshot.py
	if [ -f runs/tiny-llama/nlg/run_info.json ]; then $(PY) bench/bench_assistant.py; \
	else echo "bench_assistant skipped: run make tiny-runs first"; fi

## train: train MODEL (a recipes/ folder) on TASK, or nlu, pol, nlg in turn; run dir OUT/TASK (OUT default
## runs/MODEL); GPUS=N launches accelerate (ACCELERATE_CONFIG=recipes/accelerate/fsdp_qlora.yaml|zero3.yaml
## to shard); ARGS="--key=value ..." overrides any recipe key
train: setup
	@test -n "$(MODEL)" || { echo "make train needs MODEL=<recipes folder>: $$(ls recipes | grep -v accelerate | tr '\n' ' ')" >&2; exit 2; }
	DATA="$(DATA)" OUT="$(OUT)" GPUS="$(GPUS)" ARGS='$(ARGS)' PYTHON="$(PY)" scripts/train.sh "$(MODEL)" $(TASK)

## predict: greedy batched predictions of MODEL_PATH (run dir, adapter or Hub id) for TASK on SPLIT;
## ENDPOINT=<base url> [SERVED_MODEL=<name>] sends the same prompts to a server (vLLM, TGI, transformers serve);
## CONSTRAINED=1 decodes under the CMAS grammar (default off, as in the paper) into predictions-constrained.jsonl
predict: setup
	"$(MEDITOD)" predict --model_path "$(MODEL_PATH)" --task "$(TASK)" --data "$(DATA)" \
		--split "$(SPLIT)" --out "$(or $(OUT),$(MODEL_PATH)/eval/$(SPLIT)/predictions$(if $(filter 1 true yes,$(CONSTRAINED)),-constrained).jsonl)" \
		$(if $(ENDPOINT),--endpoint "$(ENDPOINT)" --served_model "$(or $(SERVED_MODEL),$(MODEL_PATH))") \
		$(if $(filter 1 true yes,$(CONSTRAINED)),--constrained)

## fewshot: the paper's in-context baseline: MODEL as served at ENDPOINT on TASK (nlu|pol|nlg) of SPLIT,
## SHOTS retrieved exemplars (RETRIEVER); DRY_RUN=1 writes OUT/requests.jsonl and the cost estimate only;
## CONSTRAINED=1 has the server decode under the CMAS grammar (ARGS="--server_kind vllm|sglang|tgi|openai|llama.cpp")
fewshot: setup
	"$(MEDITOD)" fewshot --model "$(MODEL)" --task "$(TASK)" --data "$(DATA)" \
		--split "$(SPLIT)" --endpoint "$(or $(ENDPOINT),http://127.0.0.1:8000/v1)" \
		--shots "$(or $(SHOTS),5)" --out "$(or $(OUT),runs/fewshot/$(MODEL)/$(TASK)$(if $(filter 1 true yes,$(CONSTRAINED)),-constrained))" \
		--retriever "$(or $(RETRIEVER),BAAI/bge-large-en-v1.5)" $(if $(filter 1 true yes,$(DRY_RUN)),--dry_run) \
		$(if $(filter 1 true yes,$(CONSTRAINED)),--constrained) $(ARGS)

## eval: score PREDICTIONS (JSON lines) for TASK on SPLIT of the built DATA; writes OUT (+ .md, .png)
eval: setup
	"$(MEDITOD)" evaluate --task "$(TASK)" --data "$(DATA)" --split "$(SPLIT)" \
		--predictions "$(PREDICTIONS)" --out "$(OUT)" --judge "$(or $(JUDGE),exact)"

## annotate: label dialogues in the browser at http://127.0.0.1:PORT (default 7861); SOURCE is a
## release folder (edited in place) or a new folder (default ./annotation, never the embedded sample);
## NLU_MODEL / POL_MODEL (run folders) pre-fill the questionnaire with their predictions
annotate: setup
	"$(MEDITOD)" annotate --source "$(if $(filter file,$(origin SOURCE)),annotation,$(SOURCE))" \
		--port $(or $(PORT),7861) $(if $(NLU_MODEL),--nlu_model "$(NLU_MODEL)") \
		$(if $(POL_MODEL),--pol_model "$(POL_MODEL)")

## agreement: score annotator B's release against annotator A's (A as gold) with the NLU/POL metrics
agreement: setup
	"$(MEDITOD)" agreement --a "$(A)" --b "$(B)" --out "$(or $(OUT),agreement.json)"

## push: publish a trained, evaluated RUN as REPO (LoRA adapter + card + results; private unless PUBLIC=1;
## MERGED=1 merges the adapter into a 16-bit base; CASCADE=runs/cascade/<name>/<split> adds the
## cascaded table of an eval-cascade that ran this run). Needs a write token (HF_TOKEN or `hf auth login`).
push: setup
	"$(MEDITOD)" publish --run "$(RUN)" --repo "$(REPO)" $(if $(PUBLIC),--public) $(if $(MERGED),--merged) \
		$(if $(CASCADE),--cascade "$(CASCADE)")

## tiny-runs: the tiny offline models of chat, app and space: runs/tiny-llama/{nlu,pol,nlg}, trained on
## the embedded synthetic sample (built into out/tiny/meditod; tiny models; three recipes; a few CPU minutes)
tiny-runs: setup
	"$(MEDITOD)" build --source data/sample --out out/tiny/meditod
	$(PY) -m meditod_hub.tiny --data out/tiny/meditod --out build/tiny-models --models tiny-llama
	DATA=out/tiny/meditod PYTHON="$(PY)" scripts/train.sh tiny-llama

## eval-cascade: NLU -> predicted state -> POL -> NLG on SPLIT of DATA, beside gold inputs, with the
## attribution of the drop; NLU/POL/NLG are run folders or Hub ids. Writes OUT (default
## runs/cascade/<model>/<split>): results.json, results.md, results.png, predictions/
eval-cascade: setup
	"$(MEDITOD)" eval-cascade --nlu "$(NLU)" --pol "$(POL)" --nlg "$(NLG)" --data "$(DATA)" \
		--split "$(SPLIT)" $(if $(OUT),--out "$(OUT)") $(ARGS)

## chat: talk to the NLU/POL/NLG models as the patient (default: the tiny runs); ARGS=--show_state
chat: setup
	"$(MEDITOD)" chat --nlu "$(or $(NLU),runs/tiny-llama/nlu)" --pol "$(or $(POL),runs/tiny-llama/pol)" \
		--nlg "$(or $(NLG),runs/tiny-llama/nlg)" $(ARGS)

## app: the Gradio chat app on http://127.0.0.1:7860 (models: MEDITOD_NLU/POL/NLG, default the tiny runs)
app: setup
	$(PY) app.py

## space: upload the app as the Hub Space REPO, private unless PUBLIC=1; NLU/POL/NLG: Hub ids or run
## folders (default: the tiny runs, uploaded with it)
space: setup
	"$(MEDITOD)" space --repo "$(REPO)" $(if $(NLU),--nlu "$(NLU)") $(if $(POL),--pol "$(POL)") \
		$(if $(NLG),--nlg "$(NLG)") $(if $(PUBLIC),--public)

## screenshot: rerun the browser test and keep its screenshot as docs/assistant.png (the README's)
screenshot: setup
	MEDITOD_SCREENSHOT=docs/assistant.png $(PY) -m pytest tests/test_app.py -k browser -q

## published: the README table of published (model, task) repos and their headline metric
published: setup
	"$(MEDITOD)" publish --table runs/

## push-data: upload the built ./$(DATA) as REPO (private, gated unless synthetic; PUBLIC=1 for --public)
push-data: setup
	"$(MEDITOD)" push --folder "$(DATA)" --repo "$(REPO)" $(if $(PUBLIC),--public)

## clean: what the demo and `make infos` wrote (never ./meditod: it may be a real build)
clean:
	rm -rf .cache out
