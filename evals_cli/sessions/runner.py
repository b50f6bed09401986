"""Analyse a session file: check it all first (exit 2 lists every problem, nothing written), then stream the
sessions with bounded concurrency, append and flush one results line per session as it finishes, and write
summary.json with the gate's verdict.

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
from typing import Any, TextIO

from evals_cli.concurrency import each_or_raise
from evals_cli.endpoints.pool import ClientPool
from evals_cli.endpoints.secrets import Redactor
from evals_cli.errors import EXIT_GATE_FAILED, EXIT_INCOMPLETE, EXIT_PASSED, RunAborted
from evals_cli.graders.base import GraderContext
from evals_cli.models.results import RunSummary
from evals_cli.output.exit_codes import exit_code_for
from evals_cli.output.files import RESULTS_NAME, SUMMARY_NAME, ResultsWriter, default_output_dir
from evals_cli.output.manifest import folder_error, make_run_folder
from evals_cli.output.summary import Accumulator
from evals_cli.run_options import RunOptions, RunOutcome
from evals_cli.sessions.analysis import analyze_session
from evals_cli.sessions.common import SessionGrading
from evals_cli.sessions.gate import decide
from evals_cli.sessions.judge_metrics import SessionJudge
from evals_cli.sessions.models import AgentSession
from evals_cli.sessions.options import SessionsOptions
from evals_cli.sessions.prepare import PreparedSessions, judge_endpoint
from evals_cli.sessions.reader import iter_sessions
from evals_cli.sessions.results import SessionAnalysis, SessionsSummary
from evals_cli.sessions.suite import SessionsSuiteSpec
from evals_cli.sessions.summary import SessionsAccumulator
from evals_cli.wording import plural

MAX_KEPT = 200  # analyses kept in memory for the display; the results file has them all
AnalysisCallback = Callable[[SessionAnalysis], None]


@dataclass
class SessionsOutcome(RunOutcome[SessionsSummary]):
    """`RunOutcome` of a sessions run, with the analyses kept for the display."""

    analyses: list[SessionAnalysis] = field(default_factory=list)  # input order, at most MAX_KEPT
    hidden: int = 0  # analysed but not kept for display


class SessionsRun:
    def __init__(self, prepared: PreparedSessions, on_result: Callable[[Any], None] | None = None,
                 common: bool = False) -> None:
        """`common`: write the results format of every run (a `SampleResult` per session, a `RunSummary`, the
        common gate: `sessions.common`), as `evals run` does; otherwise `SessionAnalysis` lines and a
        `SessionsSummary`, the seed-003 format `evals analyze` keeps. `on_result` gets what is written."""
        self.p = prepared
        self.suite = prepared.suite
        self.options = prepared.options
        self.on_result = on_result
        self.acc = SessionsAccumulator(self.suite.name, str(prepared.dataset))
        self.kept: list[tuple[int, SessionAnalysis]] = []
        self.hidden = 0
        self.abort_reason: str | None = None
        self.grading: SessionGrading | None = None
        if common:
            self.grading = SessionGrading(self.suite.target, GraderContext(base_dir=self.suite.base_dir))
            self.common = Accumulator(self.grading.gate, self.suite.name, list(self.grading.specs))

    async def run(self) -> SessionsOutcome | RunOutcome[RunSummary]:
        started, started_at = time.time(), datetime.now(UTC).isoformat(timespec="seconds")
        try:
            output_dir = self.options.output or default_output_dir(self.suite.name)
        except OSError as exc:
            raise folder_error(Path("results"), exc, "the default output folder") from None
        make_run_folder(output_dir, "-o")  # a file, under a file, unwritable: exit 2 naming the path
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
        # "w": sessions have no resume, so a reused -o folder must not mix two runs; each line is still flushed
        if self.grading is not None:
            return await self._run_common(output_dir, judge, pool, started, started_at)
        with (output_dir / RESULTS_NAME).open("w", encoding="utf-8") as results:
            try:
                await self._stream(judge, results)
            finally:
                await pool.aclose()
        summary = self._finish(started, started_at)
        (output_dir / SUMMARY_NAME).write_text(summary.model_dump_json(indent=2), encoding="utf-8")
        analyses = [a for _, a in sorted(self.kept, key=lambda pair: pair[0])]
        messages = [summary.abort_reason] if summary.abort_reason else []
        return SessionsOutcome(summary=summary, output_dir=output_dir, exit_code=summary.exit_code,
                               messages=messages, analyses=analyses, hidden=self.hidden)

    async def _run_common(self, output_dir: Path, judge: SessionJudge | None, pool: ClientPool, started: float,
                          started_at: str) -> RunOutcome[RunSummary]:
        (output_dir / RESULTS_NAME).unlink(missing_ok=True)  # as "w" above: one run per folder
        writer = ResultsWriter(output_dir)
        try:
            await self._stream(judge, writer)
        finally:
            writer.close()
            await pool.aclose()
        sessions = self._finish(started, started_at)  # the judge's error rate, sessions that could not be analysed
        summary = self.common.summary()
        summary.started_at, summary.duration_s = started_at, round(time.time() - started, 3)
        summary.finished_at = sessions.finished_at
        if sessions.abort_reason:
            summary.status, summary.abort_reason = "aborted", sessions.abort_reason
        exit_code_for(summary, self.options.max_error_rate)
        writer.write_summary(summary)
        messages = [summary.abort_reason] if summary.abort_reason else []
        return RunOutcome(summary=summary, output_dir=output_dir, exit_code=summary.exit_code, messages=messages)

    async def _stream(self, judge: SessionJudge | None, results: TextIO | ResultsWriter) -> None:
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
            if isinstance(results, ResultsWriter):
                assert self.grading is not None
                result = await self.grading.result(session, analysis)
                results.write(result)
                self.common.add(result)
                if self.on_result is not None:
                    self.on_result(result)
                return
            results.write(analysis.model_dump_json() + "\n")
            results.flush()
            if self.on_result is not None:
                self.on_result(analysis)
            if len(self.kept) < MAX_KEPT:
                self.kept.append((index, analysis))
            else:
                self.hidden += 1

        sessions = enumerate(iter_sessions(self.p.dataset))
        await each_or_raise(sessions if most is None else islice(sessions, most), one, limit,
                            stop=lambda: bool(self.abort_reason))

    def _finish(self, started: float, started_at: str) -> SessionsSummary:
        summary = self.acc.summary()
        summary.started_at, summary.duration_s = started_at, round(time.time() - started, 3)
        summary.finished_at = datetime.now(UTC).isoformat(timespec="seconds")
        summary.gate = decide(summary, self.suite.target.gate)
        rate, judge = self.options.max_error_rate, self.acc.judge
        if self.abort_reason:
            summary.status, summary.abort_reason = "aborted", self.abort_reason
        elif summary.errored:
            summary.abort_reason = f"{summary.errored}/{plural(summary.sessions, 'session')} could not be analysed"
        elif judge.calls and self.acc.judge_errors / judge.calls > rate:
            summary.abort_reason = (f"{self.acc.judge_errors}/{judge.calls} judge calls gave no verdict, more than "
                                    f"max_error_rate {rate:g}; first: {judge.errors[0] if judge.errors else '?'}")
        if summary.abort_reason or summary.gate.passed is None:
            summary.exit_code = EXIT_INCOMPLETE
            # exit 3 carries no verdict (as for `evals run`): never one computed from the sessions that survived
            summary.status = "aborted"
            if summary.gate.passed is not None:
                summary.gate.passed = None
                summary.gate.message = f"Gate not evaluated: run aborted ({summary.abort_reason})"
        else:
            summary.exit_code = EXIT_PASSED if summary.gate.passed else EXIT_GATE_FAILED
        return summary


async def arun_sessions(suite: SessionsSuiteSpec, options: RunOptions | None = None,
                        on_result: AnalysisCallback | None = None) -> SessionsOutcome:
    """Check everything (ConfigError, exit 2, listing every problem; nothing written), then run to the end, in the
    seed-003 format (`SessionAnalysis` lines, `SessionsSummary`): what `evals analyze` writes and prints."""
    outcome = await SessionsRun(PreparedSessions(suite, options), on_result).run()
    assert isinstance(outcome, SessionsOutcome)
    return outcome


def run_sessions(suite: SessionsSuiteSpec, options: RunOptions | None = None,
                 on_result: AnalysisCallback | None = None) -> SessionsOutcome:
    """`arun_sessions` to the end, from synchronous code."""
    return asyncio.run(arun_sessions(suite, options, on_result))


__all__ = ["SessionsOptions", "SessionsOutcome", "SessionsRun", "arun_sessions", "judge_endpoint", "run_sessions"]
