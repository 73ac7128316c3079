# GPU-vs-CPU training dashboard: common tasks.  `make` (or `make help`) lists them.

VENV        ?= .venv
PY          ?= python3
PORT        ?= 8501
ADDRESS     ?=
ARGS        ?=
PYTEST_ARGS ?=
# Test processes (pytest-xdist; 0 runs everything in this one). A file's tests stay in one process (--dist loadfile),
# so a module's server, browser and store are shared as written; two processes on the 2-core CI machine: 7.5 min
# against 11 serially. Files are handed out in collection order (--no-loadscope-reorder, not by test count), so that
# the longest, the benchmarks' smoke runs, start first (tests/conftest.py, tests/smoke.py).
TEST_WORKERS ?= 2
FAST_WORKERS ?= 3
IMAGE_CHECK_ARGS ?=
GPU_VERIFY_ARGS ?=

VENV_PY     := $(VENV)/bin/python
PIP         := $(VENV_PY) -m pip --disable-pip-version-check
# uv for requirement files alone (the CPU stack: 80 s against pip's 168 s fresh), pip for a CUDA stack, when uv
# cannot, or with BENCH_INSTALLER=pip: scripts/installer.py
INSTALL     := $(PY) scripts/installer.py $(VENV_PY)
HADOLINT    ?= $(firstword $(wildcard $(VENV)/bin/hadolint) hadolint)
NODE        ?= node
NPM         ?= npm
JS_MODULES  := $(wildcard ui/static/*.js)

.DEFAULT_GOAL := help
.PHONY: help venv install install-dev run test test-fast test-bench typecheck lint-js schemas gpu-verify bench lint-docker image-check clean distclean

help:
	@echo "Targets:"
	@echo "  make run          install runtime deps into $(VENV) and serve the dashboard (PORT=$(PORT), ADDRESS=...)"
	@echo "                    (the CUDA build of the framework where an NVIDIA driver answers; GPU=1 / GPU=0 force it)"
	@echo "  make test         install dev deps and run all tests: unit, app, e2e (TEST_WORKERS=2, PYTEST_ARGS=...)"
	@echo "  make test-fast    unit and app tests that train no model, load no framework, open no browser (~2 min)"
	@echo "  make test-bench   the smoke runs of every benchmark and measuring command (also in make test)"
	@echo "  make typecheck    mypy over bench/ (every definition typed), ui/, pages/, benchmarks/, scripts/ (also in make test)"
	@echo "  make lint-js      node --check and ESLint over the browser modules, ui/static/*.js (also run by make test)"
	@echo "  make schemas      write docs/schemas/*.schema.json from the record models (tests fail when they are stale)"
	@echo "  make gpu-verify   check every GPU claim on this machine's GPU (each step 'skipped: no GPU' without one)"
	@echo "  make bench        run the headless engine: python -m bench \$$ARGS (e.g. ARGS='--help')"
	@echo "  make install      install requirements.txt into $(VENV) (only when it changed)"
	@echo "  make install-dev  install requirements-dev.txt into $(VENV) (only when it changed)"
	@echo "  make venv         create the virtual environment $(VENV) with $(PY)"
	@echo "  make lint-docker  lint the Dockerfile with hadolint"
	@echo "  make image-check  build the CPU image, run it and check it in a browser, then remove it (docker or buildah)"
	@echo "  make clean        remove caches and test artifacts"
	@echo "  make distclean    clean, and remove $(VENV) and node_modules"

venv: $(VENV_PY)

$(VENV_PY):
	$(PY) -m venv $(VENV)

# The framework build for this machine (scripts/install_stack.py): "cpu", or "cuda-<backend>..." where an NVIDIA driver
# answers (GPU=1 / GPU=0 force it; KERAS_BACKEND picks the backend). The stamps carry its name, so a machine that
# changes (a driver installed later, another backend) gets the right stack at the next `make run`.
STACK          := $(shell $(PY) scripts/install_stack.py --key 2>/dev/null || echo invalid)
STACK_PACKAGES := $(shell $(PY) scripts/install_stack.py --packages 2>/dev/null)
# torch's CUDA stack: a CPU build of torch already in the venv (pip keeps it, as it satisfies `torch`) is swapped for the
# CUDA build of the same version.
STACK_REPLACE  := $(if $(filter cuda-torch%,$(STACK)),$(if $(wildcard $(VENV_PY)),$(shell \
                  $(VENV_PY) scripts/install_stack.py --replace 2>/dev/null)))

# Stamp files: reinstall only when the requirement files or the stack change (or the venv is new).
$(VENV)/.installed-$(STACK): requirements.txt | $(VENV_PY)
	@$(PY) scripts/install_stack.py --explain
	$(INSTALL) -r requirements.txt $(STACK_PACKAGES)
	$(if $(STACK_REPLACE),$(PIP) install $(STACK_REPLACE))
	@touch $@

$(VENV)/.installed-dev-$(STACK): requirements-dev.txt requirements.txt | $(VENV_PY)
	@$(PY) scripts/install_stack.py --explain
	$(INSTALL) -r requirements-dev.txt $(STACK_PACKAGES)
	$(if $(STACK_REPLACE),$(PIP) install $(STACK_REPLACE))
	@touch $@ $(VENV)/.installed-$(STACK)

install: $(VENV)/.installed-$(STACK)

install-dev: $(VENV)/.installed-dev-$(STACK)

# The dashboard trains with the stack's backend (torch on Apple silicon) unless KERAS_BACKEND names one.
STACK_BACKEND := $(shell $(PY) scripts/install_stack.py --backend 2>/dev/null || echo tensorflow)
run: install
	KERAS_BACKEND=$${KERAS_BACKEND:-$(STACK_BACKEND)} $(VENV)/bin/streamlit run app.py --server.port $(PORT) $(if $(ADDRESS),--server.address $(ADDRESS))

# The whole suite; its duration guard allows 15 s a test here (browsers and servers share the cores: docs/TESTING.md)
test: install-dev typecheck lint-js
	BENCH_FAST_TEST_BOUND_S=$${BENCH_FAST_TEST_BOUND_S:-15} $(VENV_PY) -m pytest -n $(TEST_WORKERS) --dist loadfile \
		--no-loadscope-reorder $(PYTEST_ARGS)

# The tests a change can be checked with in a minute: no `slow` test (a real model trained, a real worker started, the
# framework loaded) and no browser. tests/duration_guard.py fails a run whose unmarked tests grow slow: docs/TESTING.md
# Three processes on two cores: the fast tests wait on child processes and timers as much as they compute (-n 3:
# 87 s of pytest against 96 s with -n 2, docs/TESTING.md).
test-fast: install-dev
	$(VENV_PY) -m pytest -n $(FAST_WORKERS) --dist loadfile -m "not slow and not e2e" tests/unit tests/app $(PYTEST_ARGS)

# The smoke runs of every benchmark and measuring `bench` command, alone (they are part of `make test`), spread over
# the test processes as in `make test`
test-bench: install-dev
	$(VENV_PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder tests/unit/test_smoke_*.py \
		$(PYTEST_ARGS)

typecheck: install-dev
	$(VENV_PY) -m mypy

# ESLint and its rules, as package-lock.json pins them, into node_modules/ (git-ignored); again only when they change.
# ESLint 9: it runs on the Node 18 of Debian 12 (.ci/run installs node and npm where they are missing).
node_modules/.installed: package.json package-lock.json
	$(NPM) ci --no-audit --no-fund --loglevel=error
	@touch $@

# The browser modules: each parses as the browser loads it (node --check, an ES module: ui/static/package.json) and
# ESLint finds nothing (eslint.config.mjs) in them, their loaders (ui/assets) or their node tests (tests/js/, run by
# pytest: tests/unit/test_live_js.py).
lint-js: node_modules/.installed
	@for module in $(JS_MODULES); do $(NODE) --check $$module || exit 1; done
	$(NODE) node_modules/eslint/bin/eslint.js --max-warnings 0 ui/static ui/assets tests/js

bench: install
	$(VENV_PY) -m bench $(ARGS)

lint-docker:
	$(HADOLINT) Dockerfile

# Builds with docker when a daemon answers, else with buildah (root) on a cached local Debian base; see the script.
# IMAGE_CHECK_ARGS='--variant gpu --build-only' builds the GPU image, reports its size and build time, removes it.
image-check: install-dev
	$(VENV_PY) scripts/image_check.py $(IMAGE_CHECK_ARGS)

# Every GPU claim checked on the GPU at hand (scripts/gpu_verify.py): records in docs/results/verify/, the "Checked on
# hardware" table in docs/GPU.md. Without a GPU each GPU step says `skipped: no GPU` and it exits 0 (CI runs it so).
# No install first: a lent GPU machine may have no network (Keras on JAX or torch from carried wheels, docs/GPU.md).
gpu-verify:
	PYTHONPATH=.$(if $(PYTHONPATH),:$(PYTHONPATH)) $(if $(wildcard $(VENV_PY)),$(VENV_PY),python3) scripts/gpu_verify.py $(GPU_VERIFY_ARGS)

clean:
	find . -path ./$(VENV) -prune -o -type d -name __pycache__ -prune -exec rm -rf {} +
	rm -rf .pytest_cache test-artifacts build dist *.egg-info


distclean: clean
	rm -rf $(VENV) node_modules

# The JSON Schemas of the records, generated from their pydantic models (tests/unit/test_schemas.py fails when stale).
schemas: | $(VENV_PY)
	$(VENV_PY) -m bench.output.schemas
