"""Analyse a session file as an ordinary run: check it all first (exit 2 lists every problem, nothing written),
then run the suite of the `recorded_session` target (`prepare.prepare_sessions`) through the common `Execution`:
one results line (a `SampleResult`) per session as it finishes, summary.json (a `RunSummary`) with the common
gate's verdict. `arun_sessions` then derives the sessions view `evals analyze` prints from what was written
(`sessions.view`).

Exit codes, as for `evals run`: 0 gate passed, 1 gate failed, 2 invalid input (ConfigError, file:line), 3
incomplete (the judge unreachable or refusing the key, more than `max_error_rate` of the judge calls without a
verdict, a session that could not be analysed: `sessions/analyser.py`; or nothing to gate on).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from evals_cli.models.results import RunSummary, SampleResult
from evals_cli.run_options import RunOptions, RunOutcome
from evals_cli.sessions.options import SessionsOptions
from evals_cli.sessions.prepare import judge_endpoint, prepare_sessions
from evals_cli.sessions.results import SessionAnalysis, SessionsSummary
from evals_cli.sessions.suite import SessionsSuiteSpec
from evals_cli.sessions.target import RecordedSession
from evals_cli.sessions.view import AnalyzeRecord, load_view

AnalysisCallback = Callable[[SampleResult], None]


@dataclass
class SessionsOutcome(RunOutcome[SessionsSummary]):
    """`RunOutcome` of `evals analyze`: the sessions view of the run (`sessions.view`), derived from the common
    results it wrote; `run` is the common summary (summary.json)."""

    analyses: list[SessionAnalysis] = field(default_factory=list)  # input order, at most MAX_KEPT
    hidden: int = 0  # analysed but not kept for display
    run: RunSummary | None = None


async def arun_sessions(suite: SessionsSuiteSpec, options: RunOptions | None = None,
                        on_result: AnalysisCallback | None = None) -> SessionsOutcome:
    """Check everything (ConfigError, exit 2, listing every problem; nothing written), then run to the end in the
    results format of every run, and derive the sessions view `evals analyze` prints from what was written
    (analyze.json marks the folder as one to show so)."""
    from evals_cli.runner.execution import Execution

    prepared = prepare_sessions(suite, options)
    target = prepared.target
    assert isinstance(target, RecordedSession)
    record = target.view_record = AnalyzeRecord(dataset=str(prepared.dataset), gate=suite.target.gate)
    written: list[str] = []  # the sessions, in the order their lines were written

    def heard(result: SampleResult) -> None:
        written.append(result.sample_id)
        if on_result is not None:
            on_result(result)

    outcome = await Execution(prepared, heard).run()
    order = [target.positions.get(sid, i) for i, sid in enumerate(written)]
    view = load_view(outcome.output_dir, outcome.summary, record, order)
    reason = view.summary.abort_reason
    return SessionsOutcome(summary=view.summary, output_dir=outcome.output_dir, exit_code=outcome.exit_code,
                           messages=[reason] if reason else [], analyses=view.analyses, hidden=view.hidden,
                           run=outcome.summary)


def run_sessions(suite: SessionsSuiteSpec, options: RunOptions | None = None,
                 on_result: AnalysisCallback | None = None) -> SessionsOutcome:
    """`arun_sessions` to the end, from synchronous code."""
    return asyncio.run(arun_sessions(suite, options, on_result))


__all__ = ["SessionsOptions", "SessionsOutcome", "arun_sessions", "judge_endpoint", "run_sessions"]
