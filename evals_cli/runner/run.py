"""A run opened from its plan: `Run.open(plan)` is where the start of a run acts on the world. It refuses a plan
with problems, then opens the run: the preparation the plan's checking pass made when one pass could do both, else
a new one that reads the run it resumes or reruns and starts the MCP servers, offering their tools (several
models: one per model; a recorded-sessions document: the run of its sessions); then the sandboxes' start (a
killed run's leftovers removed, a `build:` image built: sandbox/preflight.py); on the way out, however the run
ends, it stops the servers and closes the client pool. `Execution` runs inside it:

    async with Run.open(plan(path, options)) as run:
        outcome = await run.execute(on_result)

A new side effect of the start goes here (or into what this opens), never into the plan (runner/plan.py)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evals_cli.run_options import RunOptions, RunOutcome
from evals_cli.runner.models_matrix import PreparedModels
from evals_cli.runner.plan import RunPlan, plan
from evals_cli.runner.prepare import PreparedRun
from evals_cli.suite.spec import SuiteSpec

if TYPE_CHECKING:
    from evals_cli.sessions.outcome import SessionsOutcome
    from evals_cli.sessions.suite import SessionsSuiteSpec

OnResult = Callable[[Any], None]
"""Called with each `SampleResult` as it is written, for live suites and recorded sessions alike."""


class Run:
    """What `Run.open` yields: the prepared run(s) it opened, and the plan they came from."""

    def __init__(self, prepared: PreparedRun | PreparedModels, plan: RunPlan | None = None) -> None:
        self.prepared = prepared
        self.plan = plan

    @classmethod
    @contextlib.asynccontextmanager
    async def open(cls, plan: RunPlan) -> AsyncIterator[Run]:
        prepared = open_plan(plan)
        try:
            yield cls(prepared, plan)
        finally:
            for one in _runs(prepared):
                one.close_servers()
                await one.pool.aclose()

    async def execute(self, on_result: OnResult | None = None) -> RunOutcome[Any]:
        """Run to the end: results streamed to the run's folder, the summary written, the exit code set. Several
        models give a `ModelsOutcome` (each model's `RunOutcome` in `outcomes`)."""
        from evals_cli.runner.execution import Execution

        if isinstance(self.prepared, PreparedRun):
            return await Execution(self.prepared, on_result).run()
        from evals_cli.runner.models_matrix import execute_models

        return await execute_models(self.prepared, Execution, on_result)  # one Execution per model


def open_plan(plan: RunPlan) -> PreparedRun | PreparedModels:
    """The preparation `Run.open` makes (its side effects included), for a caller that drives `Execution` itself
    (`evals run`'s live view) and closes what it opened; ConfigError (exit 2) for a plan with problems."""
    plan.refuse()
    suite = plan.suite
    if plan.sessions:
        from evals_cli.runner.sessions import prepare_sessions

        return prepare_sessions(_sessions_suite(suite), plan.options)
    assert isinstance(suite, SuiteSpec)
    if plan.models is not None:
        prepared: PreparedRun | PreparedModels = PreparedModels(suite, plan.options, list(plan.models))
    else:
        prepared = plan.checked if plan.checked is not None else PreparedRun(suite, plan.options)
    try:
        for one in _runs(prepared):  # a killed run's sandboxes removed, a `build:` image built
            one.open_sandboxes()
    except BaseException:
        for one in _runs(prepared):
            one.close_servers()
        raise
    return prepared


def _sessions_suite(suite: SuiteSpec | SessionsSuiteSpec | None) -> SessionsSuiteSpec:
    from evals_cli.sessions.suite import SessionsSuiteSpec

    assert isinstance(suite, SessionsSuiteSpec)
    return suite


def _runs(prepared: PreparedRun | PreparedModels) -> list[PreparedRun]:
    return [prepared] if isinstance(prepared, PreparedRun) else list(prepared.runs.values())


# --- the library's entry points: evals_cli.run / arun, and `evals analyze`'s run --------------------------


def prepare(suite: str | Path | SuiteSpec | SessionsSuiteSpec,
            options: RunOptions | None = None) -> PreparedRun | PreparedModels:
    """The run `Run.open` would open (runner/run.py: its side effects done), for a caller that drives `Execution`
    itself and closes what it opened: the plan made (runner/plan.py: every problem `evals validate` reports,
    raised as one ConfigError) and opened. Several models (`RunOptions.models`, the suite's `target.models`, or
    `--resume` of such a run) give a `PreparedModels`; one model in a list is an ordinary run of that model."""
    return open_plan(plan(suite, options))


async def arun(suite: str | Path | SuiteSpec | SessionsSuiteSpec, options: RunOptions | None = None,
               on_result: OnResult | None = None) -> RunOutcome[Any]:
    """Run a suite file (or a loaded suite), whichever its kind; ConfigError (exit 2) before anything runs when
    the suite, its dataset or the options are wrong. The outcome's summary is a `RunSummary` (live agents and
    recorded sessions alike: `evals analyze` alone prints the sessions view); a run over several models returns
    a `ModelsOutcome` (a `MatrixSummary`, and each model's own outcome in `outcomes`)."""
    async with Run.open(plan(suite, options)) as run:
        return await run.execute(on_result)


def run(suite: str | Path | SuiteSpec | SessionsSuiteSpec, options: RunOptions | None = None,
        on_result: OnResult | None = None) -> RunOutcome[Any]:
    """`arun` from synchronous code (it starts its own event loop)."""
    return asyncio.run(arun(suite, options, on_result))


async def arun_sessions(suite: SessionsSuiteSpec, options: RunOptions | None = None,
                        on_result: OnResult | None = None) -> SessionsOutcome:
    """`evals analyze`'s run: a sessions document checked (ConfigError, exit 2, listing every problem; nothing
    written), run to the end as an ordinary suite (`runner/sessions.py`), and the sessions view `evals analyze`
    prints derived from what it wrote (analyze.json marks the folder as one to show so)."""
    from evals_cli.runner.sessions import session_order, view_record
    from evals_cli.sessions.outcome import sessions_outcome

    written: list[str] = []  # the sessions, in the order their lines were written

    def heard(result: Any) -> None:
        written.append(result.sample_id)
        if on_result is not None:
            on_result(result)

    async with Run.open(plan(suite, options)) as run:
        assert isinstance(run.prepared, PreparedRun)
        record = view_record(run.prepared, suite)
        outcome = await run.execute(heard)
    return sessions_outcome(outcome, record, session_order(run.prepared, written))


def run_sessions(suite: SessionsSuiteSpec, options: RunOptions | None = None,
                 on_result: OnResult | None = None) -> SessionsOutcome:
    """`arun_sessions` to the end, from synchronous code."""
    return asyncio.run(arun_sessions(suite, options, on_result))
