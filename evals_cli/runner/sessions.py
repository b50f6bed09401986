"""A recorded-sessions document prepared as the ordinary suite it is: checked (`sessions.prepare`: exit 2 lists
every problem, nothing written), then a `PreparedRun` of the `recorded_session` target, the session graders and
the common gate, which `Execution` runs like any (one results line, a `SampleResult`, per session as it finishes;
summary.json, a `RunSummary`, with the common gate's verdict). `run.arun_sessions` runs it for
`evals analyze` and derives the sessions view from what was written (`sessions.outcome`, `sessions.view`)."""

from __future__ import annotations

from evals_cli.errors import ConfigError
from evals_cli.run_options import RunOptions
from evals_cli.runner.prepare import PreparedRun
from evals_cli.sessions.analyser import SessionAnalyser
from evals_cli.sessions.common import common_suite
from evals_cli.sessions.prepare import check
from evals_cli.sessions.suite import SessionsSuiteSpec
from evals_cli.sessions.target import RecordedSession
from evals_cli.sessions.view import AnalyzeRecord


def prepare_sessions(suite: SessionsSuiteSpec, options: RunOptions | None = None) -> PreparedRun:
    """A sessions document checked (ConfigError listing every problem), then prepared as the ordinary suite it
    is: the `recorded_session` target, the session graders sharing the run's analyser (its judge asking through
    the run's client pool, the smaller of `-c` and target.judge_concurrency at once), the common gate."""
    checked = check(suite, options)
    if checked.problems:
        raise ConfigError(checked.problems)
    suite, checked_options = checked.suite, checked.options
    judge = suite.judge
    analyser = SessionAnalyser(suite.target, checked.endpoint,
                               concurrency=checked_options.concurrency or suite.concurrency,
                               temperature=judge.temperature if judge else 0,
                               max_tokens=judge.max_tokens if judge else None)
    # the sessions were checked above: the run reads them once more, as it runs them (no second precheck);
    # a time window is a traces target's, which recorded sessions never had
    run_options = RunOptions(**{name: getattr(checked_options, name) for name in RunOptions.model_fields})
    run_options = run_options.model_copy(update={"precheck": False, "since": None, "until": None})
    return PreparedRun(common_suite(suite, analyser), run_options)


def view_record(prepared: PreparedRun, suite: SessionsSuiteSpec) -> AnalyzeRecord:
    """Mark the run's folder as `evals analyze`'s (analyze.json, written as the run starts: `evals report` shows
    it as the sessions view); the record."""
    target = prepared.target
    assert isinstance(target, RecordedSession)
    record = target.view_record = AnalyzeRecord(dataset=str(prepared.dataset), gate=suite.target.gate)
    return record


def session_order(prepared: PreparedRun, written: list[str]) -> list[int]:
    """Each written line's place in the session file (its sessions by id, in the order written)."""
    positions = prepared.target.positions if isinstance(prepared.target, RecordedSession) else {}
    return [positions.get(sid, i) for i, sid in enumerate(written)]


__all__ = ["prepare_sessions", "session_order", "view_record"]
