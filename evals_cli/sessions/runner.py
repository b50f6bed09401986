"""Analyse a session file: check it all first (exit 2 lists every problem, nothing written), then stream the
sessions with bounded concurrency, append and flush one results line (a `SampleResult`) per session as it
finishes, and write summary.json (a `RunSummary`) with the common gate's verdict.

Exit codes, as for `evals run`: 0 gate passed, 1 gate failed, 2 invalid input (ConfigError, file:line), 3
incomplete (the judge unreachable or refusing the key, more than `max_error_rate` of the judge calls without a
verdict, a session that could not be analysed, or nothing to gate on).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path
from typing import Any

from evals_cli.concurrency import each_or_raise
from evals_cli.endpoints.pool import ClientPool
from evals_cli.endpoints.secrets import Redactor
from evals_cli.errors import RunAborted
from evals_cli.graders.base import GraderContext
from evals_cli.models.results import RunSummary, SampleResult
from evals_cli.output.exit_codes import exit_code_for
from evals_cli.output.files import RESULTS_NAME, ResultsWriter, default_output_dir
from evals_cli.output.manifest import folder_error, make_run_folder
from evals_cli.output.summary import Accumulator
from evals_cli.run_options import RunOptions, RunOutcome
from evals_cli.sessions.analysis import analyze_session
from evals_cli.sessions.common import SessionGrading
from evals_cli.sessions.judge_metrics import SessionJudge
from evals_cli.sessions.models import AgentSession
from evals_cli.sessions.options import SessionsOptions
from evals_cli.sessions.prepare import PreparedSessions, judge_endpoint
from evals_cli.sessions.reader import iter_sessions
from evals_cli.sessions.results import SessionAnalysis, SessionsSummary
from evals_cli.sessions.suite import SessionsSuiteSpec
from evals_cli.sessions.summary import SessionsAccumulator
from evals_cli.sessions.view import ANALYZE_NAME, AnalyzeRecord, load_view, write_record
from evals_cli.wording import plural

AnalysisCallback = Callable[[SampleResult], None]


@dataclass
class SessionsOutcome(RunOutcome[SessionsSummary]):
    """`RunOutcome` of `evals analyze`: the sessions view of the run (`sessions.view`), derived from the common
    results it wrote; `run` is the common summary (summary.json)."""

    analyses: list[SessionAnalysis] = field(default_factory=list)  # input order, at most MAX_KEPT
    hidden: int = 0  # analysed but not kept for display
    run: RunSummary | None = None


class SessionsRun:
    def __init__(self, prepared: PreparedSessions, on_result: Callable[[Any], None] | None = None) -> None:
        """Every sessions run writes the results format of every run (a `SampleResult` per session, a
        `RunSummary`, the common gate: `sessions.common`); `on_result` gets each `SampleResult` as it is
        written."""
        self.p = prepared
        self.suite = prepared.suite
        self.options = prepared.options
        self.on_result = on_result
        self.acc = SessionsAccumulator(self.suite.name, str(prepared.dataset))  # errored sessions, judge calls
        self.order: list[int] = []  # each written line's place in the session file
        self.abort_reason: str | None = None
        self.grading = SessionGrading(self.suite.target, GraderContext(base_dir=self.suite.base_dir))
        self.common = Accumulator(self.grading.gate, self.suite.name, list(self.grading.specs))
        self.output_dir: Path | None = None
        self.record: AnalyzeRecord | None = None  # set by `evals analyze`: its folder shows the sessions view

    def folder(self) -> Path:
        """The run folder, made (a file, under a file, unwritable: exit 2 naming the path)."""
        if self.output_dir is None:
            try:
                output_dir = self.options.output or default_output_dir(self.suite.name)
            except OSError as exc:
                raise folder_error(Path("results"), exc, "the default output folder") from None
            make_run_folder(output_dir, "-o")
            self.output_dir = output_dir
        return self.output_dir

    async def run(self) -> RunOutcome[RunSummary]:
        started, started_at = time.time(), datetime.now(UTC).isoformat(timespec="seconds")
        output_dir = self.folder()
        if self.record is not None:
            write_record(output_dir, self.record)
        else:  # a reused -o folder of `evals analyze` becomes a run of every kind: shown as its table
            (output_dir / ANALYZE_NAME).unlink(missing_ok=True)
        # every judge call holds a slot of the run's limit (-c), per server, like every other model call
        limit = self.p.concurrency
        pool = ClientPool(record=self.options.record, replay=self.options.replay, concurrency=limit)
        judge = None
        endpoint = self.p.endpoint
        if endpoint is not None:
            judge = SessionJudge(endpoint, pool, temperature=self.suite.judge.temperature if self.suite.judge else 0,
                                 max_tokens=self.suite.judge.max_tokens if self.suite.judge else None,
                                 concurrency=min(self.suite.target.judge_concurrency, limit),
                                 redact=Redactor([endpoint.api_key]))
        # sessions have no resume, so a reused -o folder must not mix two runs; each line is still flushed
        (output_dir / RESULTS_NAME).unlink(missing_ok=True)
        writer = ResultsWriter(output_dir)
        try:
            await self._stream(judge, writer)
        finally:
            writer.close()
            await pool.aclose()
        summary = self.common.summary()
        summary.started_at, summary.duration_s = started_at, round(time.time() - started, 3)
        summary.finished_at = datetime.now(UTC).isoformat(timespec="seconds")
        reason = self._abort_reason()  # the judge's error rate, sessions that could not be analysed
        if reason:
            summary.status, summary.abort_reason = "aborted", reason
        exit_code_for(summary, self.options.max_error_rate)
        writer.write_summary(summary)
        messages = [summary.abort_reason] if summary.abort_reason else []
        return RunOutcome(summary=summary, output_dir=output_dir, exit_code=summary.exit_code, messages=messages)

    async def _stream(self, judge: SessionJudge | None, results: ResultsWriter) -> None:
        limit, most = self.p.concurrency, self.p.max_sessions

        async def one(item: tuple[int, AgentSession]) -> None:
            index, session = item
            try:
                analysis = await analyze_session(session, self.suite.target, judge)
            except RunAborted as exc:
                self.abort_reason = self.abort_reason or f"judge unavailable: {exc}; stopped analysing"
                return
            except Exception as exc:  # a bug: record it, keep the other sessions
                analysis = SessionAnalysis(session_id=session.id, task=session.task,
                                           error=f"internal error: {type(exc).__name__}: {exc}")
            self.acc.add(analysis)
            result = await self.grading.result(session, analysis)
            results.write(result)
            self.order.append(index)
            self.common.add(result)
            if self.on_result is not None:
                self.on_result(result)

        sessions = enumerate(iter_sessions(self.p.dataset))
        await each_or_raise(sessions if most is None else islice(sessions, most), one, limit,
                            stop=lambda: bool(self.abort_reason))

    def _abort_reason(self) -> str | None:
        """Why the run cannot give a verdict beyond what the common summary sees: the judge became unusable, a
        session could not be analysed, or more than max_error_rate of the judge calls gave no verdict."""
        if self.abort_reason:
            return self.abort_reason
        acc, rate = self.acc, self.options.max_error_rate
        if acc.errored:
            return f"{acc.errored}/{plural(acc.sessions, 'session')} could not be analysed"
        if acc.judge.calls and acc.judge_errors / acc.judge.calls > rate:
            return (f"{acc.judge_errors}/{acc.judge.calls} judge calls gave no verdict, more than "
                    f"max_error_rate {rate:g}; first: {acc.judge.errors[0] if acc.judge.errors else '?'}")
        return None


async def arun_sessions(suite: SessionsSuiteSpec, options: RunOptions | None = None,
                        on_result: AnalysisCallback | None = None) -> SessionsOutcome:
    """Check everything (ConfigError, exit 2, listing every problem; nothing written), then run to the end in the
    results format of every run, and derive the sessions view `evals analyze` prints from what was written
    (`sessions.view`; analyze.json marks the folder as one to show so)."""
    run = SessionsRun(PreparedSessions(suite, options), on_result)
    run.record = AnalyzeRecord(dataset=str(run.p.dataset), gate=suite.target.gate)
    outcome = await run.run()
    view = load_view(outcome.output_dir, outcome.summary, run.record, run.order)
    reason = view.summary.abort_reason
    return SessionsOutcome(summary=view.summary, output_dir=outcome.output_dir, exit_code=outcome.exit_code,
                           messages=[reason] if reason else [], analyses=view.analyses, hidden=view.hidden,
                           run=outcome.summary)


def run_sessions(suite: SessionsSuiteSpec, options: RunOptions | None = None,
                 on_result: AnalysisCallback | None = None) -> SessionsOutcome:
    """`arun_sessions` to the end, from synchronous code."""
    return asyncio.run(arun_sessions(suite, options, on_result))


__all__ = ["SessionsOptions", "SessionsOutcome", "SessionsRun", "arun_sessions", "judge_endpoint", "run_sessions"]
