"""A sessions suite made ready to run as an ordinary suite: everything checked that can fail before the first judge
call (the options, the judge endpoint, every session of the file), then the suite of the `recorded_session`
target, the session graders and the common gate (`SessionsSuiteSpec.to_suite`) with the options of its run
(which the runner prepares like every suite (`runner/sessions.py`). `evals validate` collects the
same checks' problems (`check_sessions_suite`), so neither can accept what the other refuses."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import TYPE_CHECKING

from evals_cli.endpoints.resolve import Endpoint, knob, resolve_judge
from evals_cli.errors import ConfigError
from evals_cli.run_options import RunOptions
from evals_cli.sessions.options import SessionsOptions
from evals_cli.sessions.reader import check_sessions
from evals_cli.sessions.suite import SessionsSuiteSpec

if TYPE_CHECKING:  # annotations only
    from evals_cli.suite.spec import SuiteSpec


def judge_endpoint(suite: SessionsSuiteSpec, options: SessionsOptions) -> Endpoint | None:
    """The judge, when one is wanted: the suite has a judge block, or a judge model is given (option or
    EVAL_JUDGE_MODEL), and some metric asks for it. A base URL alone does not switch the judge on."""
    if options.no_judge or not any(suite.target.judge_metrics.model_dump().values()):
        return None
    if suite.judge is None and not options.judge_model and not knob("judge_model"):
        return None
    unset = SimpleNamespace(model=None, base_url=None, api_key=None)  # a sessions suite has no grader of its own
    endpoint = resolve_judge(unset, suite.judge, None, options.judge_overrides)
    if options.timeout is not None:
        endpoint = dataclasses.replace(endpoint, timeout=options.timeout)
    if options.max_retries is not None:
        endpoint = dataclasses.replace(endpoint, max_retries=options.max_retries)
    return endpoint


@dataclasses.dataclass
class Checked:
    """A sessions suite with its options applied and checked: every problem found (none: ready to run)."""

    suite: SessionsSuiteSpec
    options: SessionsOptions
    endpoint: Endpoint | None = None
    sessions: int = 0
    problems: list[str] = dataclasses.field(default_factory=list)


def check(suite: SessionsSuiteSpec, options: RunOptions | None = None, problems: list[str] | None = None) -> Checked:
    """Every check appends what it finds and the checking goes on, so a run never reports fewer problems than
    validate: the options (ConfigError at once for those that need a live agent), the EVALS_* settings and the
    judge endpoint, every session of the file."""
    checked_options = SessionsOptions.of(options)
    if checked_options.judge_confirms is not None:
        target = suite.target.model_copy(update={"judge_confirms": checked_options.judge_confirms})
        suite = suite.model_copy(update={"target": target})
    found = Checked(suite, checked_options, problems=problems if problems is not None else [])
    try:
        from evals_cli.settings import check as check_settings

        check_settings()  # a bad EVALS_* value: refused before the first judge call
        found.endpoint = judge_endpoint(suite, checked_options)
    except ConfigError as exc:
        found.problems.extend(exc.problems)
    if checked_options.precheck:
        try:
            found.sessions, more = check_sessions(suite.resolve(suite.dataset))
        except ConfigError as exc:  # the file cannot be read at all
            found.problems.extend(exc.problems)
        else:
            found.problems.extend(more)
    return found


def check_sessions_suite(suite: SessionsSuiteSpec | SuiteSpec) -> tuple[int, list[str]]:
    """What `evals validate` reports for a sessions suite, without calling any model: (sessions, problems). A
    SuiteSpec carrying a RecordedSessionsTarget is converted first (its keys that do not apply are problems)."""
    problems: list[str] = []
    if not isinstance(suite, SessionsSuiteSpec):
        try:
            suite, problems = SessionsSuiteSpec.convert(suite)
        except ConfigError as exc:
            return 0, exc.problems
    checked = check(suite, problems=problems)
    return checked.sessions, checked.problems


__all__ = ["check", "check_sessions_suite", "judge_endpoint"]
