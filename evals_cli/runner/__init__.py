"""Async orchestration of a suite: plan (plan.py: read once, check everything), then open and execute (run.py);
`run` / `arun` (run.py) are the entry points for either kind of suite document, `run_sessions` /
`arun_sessions` (run.py) the run of `evals analyze` with its sessions view.

Attributes are imported lazily: `evals_cli.run_options` is a leaf both pipelines import, and importing it must
not pull in the targets and graders that `prepare` needs.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evals_cli.models.results import RunSummary
    from evals_cli.run_options import ResultCallback, RunOptions, RunOutcome
    from evals_cli.runner.prepare import PreparedRun
    from evals_cli.runner.run import arun, arun_sessions, run, run_sessions
    from evals_cli.suite.spec import SuiteSpec

_LAZY = {"PreparedRun": "evals_cli.runner.prepare", "RunOptions": "evals_cli.run_options",
         "RunOutcome": "evals_cli.run_options", "ResultCallback": "evals_cli.run_options",
         "run": "evals_cli.runner.run", "arun": "evals_cli.runner.run",
         "run_sessions": "evals_cli.runner.run", "arun_sessions": "evals_cli.runner.run"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(name)
    import importlib

    return getattr(importlib.import_module(module), name)


async def execute(prepared: PreparedRun, on_result: ResultCallback | None = None) -> RunOutcome[RunSummary]:
    """Run a prepared live suite to the end."""
    from evals_cli.runner.execution import Execution

    return await Execution(prepared, on_result).run()


def run_suite(suite: SuiteSpec, options: RunOptions | None = None,
              on_result: ResultCallback | None = None) -> RunOutcome[Any]:
    """Run a loaded suite to the end (kept for callers written before `evals_cli.run`, which also takes a path;
    a suite around a recorded_sessions target runs as the suite of its recorded_session target, as with `run`)."""
    from evals_cli.runner.run import arun

    return asyncio.run(arun(suite, options, on_result))


__all__ = ["PreparedRun", "ResultCallback", "RunOptions", "RunOutcome", "arun", "arun_sessions", "execute", "run",
           "run_sessions", "run_suite"]
