"""A sessions suite with everything checked that can fail before the first judge call: the options, the judge
endpoint, every session of the file. The run and `evals validate` both go through `PreparedSessions`; validate
collects the problems instead of stopping at the first, so neither can accept what the other refuses."""

from __future__ import annotations

import dataclasses
from pathlib import Path
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


class PreparedSessions:
    """A sessions suite ready to run. Every check appends what it finds to `problems` and the preparation goes
    on; given a list (`evals validate`), that is all; without, a ConfigError listing them all ends it, so a run
    never reports fewer problems than validate."""

    def __init__(self, suite: SessionsSuiteSpec, options: RunOptions | None = None,
                 problems: list[str] | None = None) -> None:
        self.problems: list[str] = problems if problems is not None else []
        self.options = SessionsOptions.of(options)
        if self.options.judge_confirms is not None:
            target = suite.target.model_copy(update={"judge_confirms": self.options.judge_confirms})
            suite = suite.model_copy(update={"target": target})
        self.suite = suite
        self.dataset: Path = suite.resolve(suite.dataset)
        self.concurrency = self.options.concurrency or suite.concurrency
        self.max_sessions = self.options.max_samples or suite.max_samples
        self.endpoint: Endpoint | None = None
        try:
            from evals_cli.settings import check

            check()  # a bad EVALS_* value: refused before the first judge call
            self.endpoint = judge_endpoint(suite, self.options)
        except ConfigError as exc:
            self.problems.extend(exc.problems)
        self.sessions = 0
        if self.options.precheck:
            try:
                self.sessions, found = check_sessions(self.dataset)
            except ConfigError as exc:  # the file cannot be read at all
                self.problems.extend(exc.problems)
            else:
                self.problems.extend(found)
        if problems is None and self.problems:
            raise ConfigError(self.problems)


def check_sessions_suite(suite: SessionsSuiteSpec | SuiteSpec) -> tuple[int, list[str]]:
    """What `evals validate` reports for a sessions suite, without calling any model: (sessions, problems). A
    SuiteSpec carrying a RecordedSessionsTarget is converted first (its keys that do not apply are problems)."""
    problems: list[str] = []
    if not isinstance(suite, SessionsSuiteSpec):
        try:
            suite, problems = SessionsSuiteSpec.convert(suite)
        except ConfigError as exc:
            return 0, exc.problems
    prepared = PreparedSessions(suite, problems=problems)
    return prepared.sessions, prepared.problems
