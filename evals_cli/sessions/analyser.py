"""The session analysis of a run, made once per session for every session grader of the run.

A recorded-sessions suite (`sessions/suite.py`) hands one `SessionAnalyser` to all its `session_score` graders
(in their specs: the builder hands it in). The first of them to grade a session analyses it
(`analysis.analyze_session`: the deterministic checks, then the judge when the run has one), the others read the
same analysis, and the last one lets it go. Judge calls go through the run's client pool (`bind`: the pool the
graders are built with, its per-server limit the run's `-c`), at most `judge_concurrency` of them at once.

What the run cannot give a verdict on, the analyser says (`incomplete_run`, asked by the run once every sample is
graded): a session that could not be analysed (a bug: its grades are errors, never zeros), or more than
`max_error_rate` of the judge calls without a verdict. A judge that cannot be reached at all stops the run
(RunAborted: the session is not recorded, as none graded after it).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evals_cli.endpoints.secrets import Redactor
from evals_cli.errors import RunAborted
from evals_cli.sessions.analysis import analyze_session
from evals_cli.sessions.judge_metrics import SessionJudge
from evals_cli.sessions.models import AgentSession
from evals_cli.sessions.results import SessionAnalysis
from evals_cli.sessions.spec import RecordedSessionsTarget
from evals_cli.wording import plural

if TYPE_CHECKING:
    from evals_cli.endpoints.clients import ModelClients
    from evals_cli.endpoints.resolve import Endpoint
    from evals_cli.models.trajectory import Trajectory


@dataclass
class _Made:
    """One episode's analysis, being made or made, and how many graders have still to read it."""

    episode: Trajectory  # held, so its id (the key) is not reused while the entry lives
    analysis: asyncio.Task[SessionAnalysis]
    unread: int


class SessionAnalyser:
    """One run's analyses (see the module's docstring). `endpoint`: the judge (None: deterministic only);
    `concurrency`: the run's `-c` (the judge's limit is the smaller of it and target.judge_concurrency)."""

    def __init__(self, target: RecordedSessionsTarget, endpoint: Endpoint | None = None, *, concurrency: int = 8,
                 temperature: float | None = 0.0, max_tokens: int | None = None) -> None:
        self.target = target
        self.endpoint = endpoint
        self.concurrency = min(target.judge_concurrency, concurrency)
        self.temperature, self.max_tokens = temperature, max_tokens
        self.judge: SessionJudge | None = None
        self.readers = 0  # graders reading each analysis: the last to read it lets it go
        self.made: dict[int, _Made] = {}  # id of the episode's trajectory -> its analysis
        self.sessions = self.errored = 0
        self.judge_calls = self.judge_errors = 0
        self.first_judge_error: str | None = None

    def bind(self, pool: ModelClients | None) -> None:
        """A grader of the run is built with the run's pool: the judge asks through it (once, for every grader)."""
        self.readers += 1
        if self.judge is None and self.endpoint is not None and pool is not None:
            self.judge = SessionJudge(self.endpoint, pool, temperature=self.temperature, max_tokens=self.max_tokens,
                                      concurrency=self.concurrency, redact=Redactor([self.endpoint.api_key]))

    @property
    def endpoints(self) -> list[Endpoint]:
        return [self.endpoint] if self.endpoint is not None else []

    async def analysis(self, session: AgentSession, episode: Trajectory) -> SessionAnalysis:
        """The analysis of one episode of the session (its trajectory: a repeat is an episode of its own), made
        by the first grader to ask, read by the others; the last reader lets it go."""
        key = id(episode)
        entry = self.made.get(key)
        if entry is None:
            task = asyncio.ensure_future(self._analyse(session))
            entry = self.made[key] = _Made(episode, task, self.readers)
        entry.unread -= 1
        if entry.unread <= 0:
            self.made.pop(key, None)
        try:
            return await entry.analysis
        except BaseException:
            self.made.pop(key, None)  # the run stops (RunAborted), or this sample was cancelled: nobody reads it
            raise

    async def _analyse(self, session: AgentSession) -> SessionAnalysis:
        try:
            analysis = await analyze_session(session, self.target, self.judge)
        except RunAborted as exc:
            raise RunAborted(f"judge unavailable: {exc}; stopped analysing") from None
        except Exception as exc:  # a bug: recorded as the session's error, the other sessions go on
            analysis = SessionAnalysis(session_id=session.id, task=session.task,
                                       error=f"internal error: {type(exc).__name__}: {exc}")
        self.sessions += 1
        self.errored += analysis.error is not None
        self.judge_calls += analysis.judge.calls
        self.judge_errors += len(analysis.judge.errors)
        if self.first_judge_error is None and analysis.judge.errors:
            self.first_judge_error = analysis.judge.errors[0]
        return analysis

    def incomplete_run(self, max_error_rate: float) -> str | None:
        """Why the run has no verdict: a session that could not be analysed, or more than max_error_rate of the
        judge calls without a verdict."""
        if self.errored:
            return f"{self.errored}/{plural(self.sessions, 'session')} could not be analysed"
        if self.judge_calls and self.judge_errors / self.judge_calls > max_error_rate:
            return (f"{self.judge_errors}/{self.judge_calls} judge calls gave no verdict, more than "
                    f"max_error_rate {max_error_rate:g}; first: {self.first_judge_error or '?'}")
        return None
