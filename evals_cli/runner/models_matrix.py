"""One suite, several models (`--model a --model b`, or `target.models: [...]`): the whole suite runs once per
model, every model at once, each into its own subfolder of the run folder, which is an ordinary run folder
(results.jsonl, summary.json, run.json: `evals report`, `compare`, `--resume` and `merge` work on it alone).
`matrix.json` at the top says which model is in which folder and how each ended.

Why one Execution per model rather than one run with a model column: every per-run rule (resume, the error rate
and spend cap, the gate, the exit code, the summary) then holds per model unchanged. What they share: one limit
of samples in flight across all models (the suite's or -c concurrency), one signal handler (Ctrl-C stops every
model), and one `--record` file (requests carry their model's name, so the models' calls never share a key).

The matrix does not build a model's run itself: whoever starts it (`Run.execute` in runner/run.py, cli/run_models.py's
progress view) hands it the maker of one run (`Execution`), and it asks of each run only what `OneModelRun`
names. How one model's samples are run (targets, graders, episodes) stays out of this module, which knows only
what the models' runs share, where each one's folder is, and how their verdicts combine.

The combined exit code: 130 when any model was interrupted; with `--gate all` (the default) 0 only when every
model passed its gate, 3 when any model is incomplete (its endpoint failed, too many errors: no verdict can say
"all passed"), else 1; with `--gate any` 0 when at least one model passed, else 3 when any is incomplete, else 1.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from evals_cli.concurrency import Workers, each
from evals_cli.endpoints.resolve import DEFAULT_URL
from evals_cli.endpoints.secrets import MASK, Redactor, mask_url
from evals_cli.errors import EXIT_INTERRUPTED, ConfigError
from evals_cli.models.results import MatrixSummary, ModelRun, RunSummary, SampleResult, Verdict
from evals_cli.output.files import RESULTS_NAME, default_output_dir
from evals_cli.output.manifest import (
    MANIFEST_NAME,
    MATRIX_NAME,
    folder_error,
    folder_names,
    make_run_folder,
    read_matrix,
    write_matrix,
)
from evals_cli.output.summary import GateMode, combined_exit, combined_verdict
from evals_cli.run_options import ModelsOutcome, ResultCallback, RunOptions, RunOutcome
from evals_cli.runner.in_flight import InFlight
from evals_cli.runner.interrupts import interrupts_to
from evals_cli.runner.prepare import PreparedRun
from evals_cli.suite.spec import SuiteSpec

ModelResultCallback = Callable[[str, SampleResult], None]
__all__ = ["MATRIX_NAME", "GateMode", "ModelsExecution", "PreparedModels", "combined_exit", "folder_names"]


# --- preparation -------------------------------------------------------------------------------------------


class PreparedModels:
    """A suite checked once (by the caller, as `evals validate` would with the first model: runner/plan.py),
    and a `PreparedRun` per model (its agent endpoint resolved with that model): nothing left to fail but the
    endpoints. Only the first model's preparation reads the whole dataset; the others take its counts and the
    rows it kept (the rows, filters and shard are the same for every model)."""

    def __init__(self, suite: SuiteSpec, options: RunOptions, models: list[str]) -> None:
        _refuse_single_only(options)
        target = getattr(suite.target, "kind", None)
        from evals_cli.runner.target_factory import target_class

        cls = target_class(suite.target)
        if cls is not None and not cls.agent_is_model(suite.target):
            raise ConfigError(f"target.kind {target}: its agent calls no model, so several models (--model, "
                              "target.models) cannot apply; give one model, or a target kind that calls one")
        self.suite = suite
        self.options = options
        self.models = models
        self.matrix = read_matrix(options.resume) if options.resume is not None else None
        if self.matrix is not None:
            self.folders = {run.model: run.folder for run in self.matrix.models}
            options = self.options = _resumed_endpoints(self.matrix, options)
        else:
            self.folders = folder_names(models)
        self.runs: dict[str, PreparedRun] = {}
        first: PreparedRun | None = None
        for model in models:
            own = options.model_copy(update={"model": model, "models": None, "resume": None, "output": None,
                                             "matrix": True, "precheck": options.precheck and first is None})
            prepared = PreparedRun(suite, own)
            if first is None:
                first = prepared
            elif options.precheck:
                prepared.rows, prepared.row_notes = first.rows, first.row_notes
                prepared.selected = first.selected  # the rows the first one's precheck kept: read once for all
                prepared.expected = first.expected
                prepared.shard_ids = first.shard_ids
                prepared.coverage = first.coverage.model_copy(deep=True) if first.coverage else None
            self.runs[model] = prepared
        assert first is not None
        self.concurrency = first.concurrency
        self.warnings = _judge_warnings(self.runs)
        self.expected = sum(p.expected or 0 for p in self.runs.values()) if first.expected is not None else None


def _resumed_endpoints(matrix: MatrixSummary, options: RunOptions) -> RunOptions:
    """A resumed run keeps the endpoints its models were given on the command line (`--model NAME@URL`, which
    --resume does not take again): from matrix.json, unless given again. Without this the rest of a model's samples
    would go to the suite's endpoint and be filed with the first ones, as one model's results."""
    urls = dict(options.model_base_urls)
    for run in matrix.models:
        if run.model in urls or not (run.base_url_from or "").startswith("--model") or run.base_url is None:
            continue
        if MASK in run.base_url:
            raise ConfigError(f"--resume {options.resume}: the model {run.model} ran on an endpoint given on the "
                              f"command line with a credential in its URL (kept masked: {run.base_url}); give it "
                              f"again: --resume {options.resume} --model NAME@URL for every model")
        urls[run.model] = run.base_url
    return options.model_copy(update={"model_base_urls": urls}) if urls != options.model_base_urls else options


def _judge_warnings(runs: dict[str, PreparedRun]) -> list[str]:
    """A judge that falls back to the agent's endpoint (no judge.model, --judge-model or EVAL_JUDGE_MODEL) is a
    different judge for every model: each model grades itself, and the columns are not comparable. Said, not
    refused: it is what a single run does too."""
    from evals_cli.endpoints.resolve import Endpoint

    judges: dict[str, set[str]] = {}
    for model, run in runs.items():
        for grader in run.graders.values():
            found = getattr(grader, "endpoints", None) or [getattr(grader, "endpoint", None)]
            judges.setdefault(model, set()).update(e.model for e in found if isinstance(e, Endpoint))
    if len({frozenset(j) for j in judges.values()}) <= 1:
        return []
    return ["the judge differs from model to model (with no judge model set, each model judges itself): the "
            "judge scores are not comparable across models; set judge.model in the suite or --judge-model"]


def _refuse_single_only(options: RunOptions) -> None:
    if options.rerun_failed is not None:
        raise ConfigError("--rerun-failed with several models: not supported yet; rerun the failed samples of one "
                          "model from its folder: --rerun-failed RUN/FOLDER --model NAME")


# --- the run -----------------------------------------------------------------------------------------------


class OneModelRun(Protocol):
    """What the matrix asks of one model's run (an `Execution`): its samples share the matrix's limit
    (`workers.slots`), the matrix takes the signals (`handle_signals` off) and passes each on (`interrupt`)."""

    resumed: int
    handle_signals: bool
    workers: Workers[Any]

    def in_flight(self) -> Sequence[InFlight]: ...

    def interrupt(self, sig: signal.Signals) -> None: ...

    async def run(self) -> RunOutcome[RunSummary]: ...


RunMaker = Callable[[PreparedRun, ResultCallback | None], OneModelRun]
"""Makes one model's run from its preparation and what hears its results (`Execution`)."""


class ModelsExecution:
    """Every model's run at once (each made by `make_run`), within one limit of samples in flight;
    `on_result(model, result)` hears each result as it is written."""

    def __init__(self, prepared: PreparedModels, make_run: RunMaker, on_result: ModelResultCallback | None = None,
                 on_interrupt: Callable[[int, int], None] | None = None) -> None:
        self.p = prepared
        self.on_result = on_result
        self.on_interrupt = on_interrupt
        options = prepared.options
        if options.resume is not None:
            if prepared.matrix is None:
                raise ConfigError(f"--resume {options.resume}: not the folder of a run over several models (it holds "
                                  f"no {MATRIX_NAME}); give the folder `evals run` printed as 'results: DIR'")
            self.top = options.resume
        elif options.output is not None:
            self.top = options.output
            if (self.top / MATRIX_NAME).exists() or (self.top / RESULTS_NAME).exists():
                raise ConfigError(f"-o {self.top}: already holds a run; continue it with --resume {self.top}, or give "
                                  "a new folder")
            make_run_folder(self.top)
        else:
            try:
                self.top = default_output_dir(prepared.suite.name)
            except OSError as exc:
                raise folder_error(Path("results"), exc, "the default output folder") from None
        self.executions: dict[str, OneModelRun] = {}
        for model, run in prepared.runs.items():
            sub = self.top / prepared.folders[model]
            resuming = options.resume is not None and (sub / MANIFEST_NAME).is_file()
            run.options = run.options.model_copy(update={"resume": sub if resuming else None,
                                                         "output": None if resuming else sub})
            execution = make_run(run, self._hear(model))
            execution.handle_signals = False
            self.executions[model] = execution
        self.interrupts = 0

    def _hear(self, model: str) -> Callable[[SampleResult], None] | None:
        if self.on_result is None:
            return None
        callback = self.on_result
        return lambda result: callback(model, result)

    @property
    def resumed(self) -> int:
        return sum(e.resumed for e in self.executions.values())

    def in_flight(self) -> list[InFlight]:
        """Every model's samples in flight, each named `model / sample`, oldest first."""
        shown: list[InFlight] = []
        for model, execution in self.executions.items():
            shown += [InFlight(f"{model} / {e.sample_id}", e.repeat, e.started, e.where)
                      for e in execution.in_flight()]
        return sorted(shown, key=lambda e: e.started)

    def _summary(self, started_at: str, outcomes: dict[str, RunOutcome[RunSummary]] | None) -> MatrixSummary:
        runs = []
        for model in self.p.models:
            agent = self.p.runs[model].agent
            shown = Redactor(self.p.runs[model].secrets())(mask_url(agent.base_url or DEFAULT_URL))
            run = ModelRun(model=model, folder=self.p.folders[model], base_url=shown, base_url_from=agent.base_url_from)
            outcome = (outcomes or {}).get(model)
            if outcome is not None:
                s = outcome.summary
                run.status, run.exit_code = s.status, outcome.exit_code
                run.gate = Verdict(passed=s.gate.passed, message=s.gate.message) if s.gate else None
            runs.append(run)
        summary = MatrixSummary(suite=self.p.suite.name, gate_mode=self.p.options.gate, models=runs,
                                shard=self.p.options.shard, started_at=started_at)
        if outcomes is None:  # written as the run starts: a killed run must never read as passed
            summary.status, summary.exit_code = "interrupted", EXIT_INTERRUPTED
            summary.abort_reason = (f"the run has not finished (or was stopped): resume it with --resume {self.top}")
            return summary
        codes = [run.exit_code if run.exit_code is not None else EXIT_INTERRUPTED for run in runs]
        summary.exit_code = combined_exit(codes, self.p.options.gate)
        summary.gate = combined_verdict(runs, self.p.options.gate)
        statuses = {run.status for run in runs}
        summary.status = ("interrupted" if "interrupted" in statuses else
                          "aborted" if "aborted" in statuses else "completed")
        return summary

    async def run(self) -> ModelsOutcome:
        started = time.time()
        started_at = (self.p.matrix.started_at if self.p.matrix is not None and self.p.matrix.started_at
                      else datetime.now(UTC).isoformat(timespec="seconds"))
        write_matrix(self.top, self._summary(started_at, None))
        slots = asyncio.Semaphore(self.p.concurrency)
        for execution in self.executions.values():
            execution.workers.slots = slots
        outcomes: dict[str, RunOutcome[RunSummary]] = {}

        async def run_one(item: tuple[str, OneModelRun]) -> None:
            model, execution = item
            outcomes[model] = await execution.run()

        with interrupts_to(self._interrupt):  # one handler for every model: each Execution would replace the last's
            failures = await each(self.executions.items(), run_one, len(self.executions))  # every model at once
        if failures:  # a model that could not start (its folder, its disk): the others' results are saved
            raise failures[0]
        outcomes = {model: outcomes[model] for model in self.executions if model in outcomes}  # in model order
        summary = self._summary(started_at, outcomes)
        summary.finished_at = datetime.now(UTC).isoformat(timespec="seconds")
        summary.duration_s = time.time() - started
        write_matrix(self.top, summary)
        messages = [f"{model}: {message}" for model, outcome in outcomes.items() for message in outcome.messages]
        return ModelsOutcome(summary, self.top, summary.exit_code, messages, outcomes=outcomes,
                             folders={m: self.top / f for m, f in self.p.folders.items()})

    def _interrupt(self, sig: signal.Signals) -> None:
        self.interrupts += 1
        for execution in self.executions.values():
            execution.interrupt(sig)
        if self.on_interrupt is not None:
            with contextlib.suppress(Exception):
                self.on_interrupt(self.interrupts, len(self.in_flight()))



async def execute_models(prepared: PreparedModels, make_run: RunMaker,
                         on_result: Callable[[Any], None] | None = None) -> ModelsOutcome:
    """Run every model to the end, each run made by `make_run`; `on_result` hears every model's results (see
    `ModelsExecution` for which model each is)."""
    hear: ModelResultCallback | None = None
    if on_result is not None:
        callback = on_result

        def hear(model: str, result: SampleResult) -> None:
            callback(result)
    return await ModelsExecution(prepared, make_run, hear).run()
