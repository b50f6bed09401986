"""The one library entry point behind `evals run`: a suite file (or a loaded suite) goes to the pipeline its
document kind names, live agents (`PreparedRun`, `execute`) or recorded sessions (`PreparedSessions`,
`SessionsRun`), and comes back as a `RunOutcome`. The CLI only parses arguments into `RunOptions` and renders
what this returns; Python callers get exactly the same checks and results."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evals_cli.errors import ConfigError
from evals_cli.runner.options import RunOptions, RunOutcome
from evals_cli.runner.prepare import PreparedRun
from evals_cli.suite.spec import SuiteSpec

if TYPE_CHECKING:
    from evals_cli.sessions.prepare import PreparedSessions
    from evals_cli.sessions.suite import SessionsSuiteSpec

OnResult = Callable[[Any], None]
"""Called with each result as it is written: a `SampleResult` (live suite) or a `SessionAnalysis` (sessions)."""


DEFAULT_SUITES = ("suite.yaml", "evals.yaml")


def default_suite(folder: Path | None = None) -> Path:
    """The suite `evals run` / `evals validate` use when given none: suite.yaml or evals.yaml in `folder` (the
    current one). ConfigError (exit 2) naming both when neither is there, or when both are (which one is meant?)."""
    here = Path(folder) if folder is not None else Path.cwd()
    found = [here / name for name in DEFAULT_SUITES if (here / name).is_file()]
    names = " nor ".join(DEFAULT_SUITES)
    if not found:
        raise ConfigError(f"no suite given, and neither {names} is in {here}; give the suite file: evals run "
                          "SUITE.yaml (or create one with `evals init`)")
    if len(found) > 1:
        raise ConfigError(f"no suite given, and both {' and '.join(DEFAULT_SUITES)} are in {here}; name the one to "
                          "use: evals run SUITE.yaml")
    return Path(found[0].name) if folder is None else found[0]


def prepare(suite: str | Path | SuiteSpec | SessionsSuiteSpec,
            options: RunOptions | None = None) -> PreparedRun | PreparedSessions:
    """Load (a path) and check everything that can fail before the first model call, for the pipeline the
    suite's kind names; raises ConfigError listing every problem (what `evals validate` would report)."""
    from evals_cli.sessions.suite import SessionsSuiteSpec

    options = options or RunOptions()
    if isinstance(suite, str | Path):
        from evals_cli.suite.kind import suite_kind

        if suite_kind(suite) == "recorded_sessions":
            from evals_cli.sessions.suite import load_sessions_suite

            return _sessions(load_sessions_suite(suite), options)
        from evals_cli.suite.loader import TargetOverride
        from evals_cli.validate import checked_suite

        # every check `evals validate` makes, the same way: a run never starts on a problem validate would report
        override = TargetOverride(file=options.target_file, base_url=options.base_url, model=options.model)
        return PreparedRun(checked_suite(Path(suite), override), options)
    if isinstance(suite, SessionsSuiteSpec):
        return _sessions(suite, options)
    if getattr(suite.target, "kind", None) == "recorded_sessions":  # a SuiteSpec built around a sessions target
        return _sessions(SessionsSuiteSpec.from_suite(suite), options)
    if options.target_file is not None:
        raise ConfigError("--target (target_file) replaces the target of a suite file; give the suite's path, or "
                          "load it with load_suite(path, TargetOverride(file=...))")
    return PreparedRun(suite, options)


def _sessions(suite: SessionsSuiteSpec, options: RunOptions) -> PreparedSessions:
    from evals_cli.sessions.prepare import PreparedSessions

    return PreparedSessions(suite, options)


async def execute_prepared(prepared: PreparedRun | PreparedSessions,
                           on_result: OnResult | None = None) -> RunOutcome[Any]:
    """Run a prepared suite to the end: results streamed to its folder, the summary written, the exit code set."""
    if isinstance(prepared, PreparedRun):
        from evals_cli.runner.execution import Execution

        return await Execution(prepared, on_result).run()
    from evals_cli.sessions.runner import SessionsRun

    return await SessionsRun(prepared, on_result).run()


async def arun(suite: str | Path | SuiteSpec | SessionsSuiteSpec, options: RunOptions | None = None,
               on_result: OnResult | None = None) -> RunOutcome[Any]:
    """Run a suite file (or a loaded suite), whichever its kind; ConfigError (exit 2) before anything runs when
    the suite, its dataset or the options are wrong. The outcome's summary is a `RunSummary` for a live suite, a
    `SessionsSummary` for recorded sessions."""
    return await execute_prepared(prepare(suite, options), on_result)


def run(suite: str | Path | SuiteSpec | SessionsSuiteSpec, options: RunOptions | None = None,
        on_result: OnResult | None = None) -> RunOutcome[Any]:
    """`arun` from synchronous code (it starts its own event loop)."""
    return asyncio.run(arun(suite, options, on_result))
