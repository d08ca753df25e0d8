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
PYTEST_ARGS ?=

.PHONY: setup demo test data infos bench eval push clean

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

demo: setup
	$(PY) meditod.py build --source data/sample --out $(DATA)

test: setup
	$(PY) -m pytest $(PYTEST_ARGS)

bench: setup
	$(PY) bench/bench_build.py
	$(PY) bench/bench_metrics.py
	$(PY) bench/bench_formats.py

## eval: score PREDICTIONS (JSON lines) for TASK on SPLIT of the built DATA; writes OUT (+ .md, .png)
eval: setup
	$(PY) -m meditod_hub.evaluate_cli --task $(TASK) --data $(DATA) --split $(SPLIT) \
		--predictions $(PREDICTIONS) --out $(OUT) --judge $(or $(JUDGE),exact)

## push: upload ./$(DATA) as REPO (private, gated unless synthetic; PUBLIC=1 for --public).
## Needs a write token in HF_TOKEN or from `hf auth login`.
push: setup
	$(PY) meditod.py push --folder $(DATA) --repo $(REPO) $(if $(PUBLIC),--public)

clean:
	rm -rf .cache runs out $(DATA)
