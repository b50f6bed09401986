"""Async orchestration: prepare (check everything), then execute (stream samples, write results)."""

from __future__ import annotations

import asyncio

from evals_cli.models.specs import SuiteSpec
from evals_cli.runner.options import ResultCallback, RunOptions, RunOutcome
from evals_cli.runner.prepare import PreparedRun


async def execute(prepared: PreparedRun, on_result: ResultCallback | None = None) -> RunOutcome:
    from evals_cli.runner.execution import Execution

    return await Execution(prepared, on_result).run()


def run_suite(suite: SuiteSpec, options: RunOptions | None = None,
              on_result: ResultCallback | None = None) -> RunOutcome:
    """Run a loaded suite to the end (the library entry point behind `evals run`)."""
    prepared = PreparedRun(suite, options or RunOptions())
    return asyncio.run(execute(prepared, on_result))


__all__ = ["PreparedRun", "RunOptions", "RunOutcome", "execute", "run_suite"]
