"""evals-cli: evaluate multi-turn LLM agents from YAML suites.

The public Python API covers what `evals run` does: `run(path_or_suite, RunOptions(...))` (or `arun`, async)
loads the suite, checks everything `evals validate` checks, runs the pipeline its kind names (live agents or
recorded sessions) and returns a `RunOutcome` (over several models, `RunOptions(models=[...])` or the suite's
`target.models`: a `ModelsOutcome`, holding each model's `RunOutcome`); invalid input raises `ConfigError` (exit
code 2). `load_suite` gives the `SuiteSpec` of a file, `grader` registers custom grading functions. Four small
interfaces are what outside code implements: `Agent` (one agent turn), `UserPlayer` (the next user message),
`Effect` (what a stateful tool does to the world) and `Grader` (a grade from a finished episode). Imports are
lazy, so that `import evals_cli` stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evals_cli.errors import ConfigError
    from evals_cli.graders.base import Grader
    from evals_cli.graders.functions import grader
    from evals_cli.models import Grade, Sample, Trajectory
    from evals_cli.models.effects import Effect
    from evals_cli.models.results import RunSummary, SampleResult
    from evals_cli.run_options import ModelsOutcome, RunOptions, RunOutcome
    from evals_cli.runner import run_suite
    from evals_cli.runner.run import arun, run
    from evals_cli.simulation.player import UserPlayer
    from evals_cli.suite.loader import load_suite
    from evals_cli.suite.spec import SuiteSpec
    from evals_cli.targets.base import Agent

__version__ = "0.1.0"

_WHERE = {
    "run": "evals_cli.runner.run", "arun": "evals_cli.runner.run",
    "RunOptions": "evals_cli.run_options", "RunOutcome": "evals_cli.run_options",
    "ModelsOutcome": "evals_cli.run_options",
    "SuiteSpec": "evals_cli.suite.spec", "SampleResult": "evals_cli.models.results",
    "RunSummary": "evals_cli.models.results", "ConfigError": "evals_cli.errors",
    "load_suite": "evals_cli.suite.loader", "run_suite": "evals_cli.runner",
    "grader": "evals_cli.graders.functions",
    "Grade": "evals_cli.models", "Sample": "evals_cli.models", "Trajectory": "evals_cli.models",
    "Agent": "evals_cli.targets.base", "UserPlayer": "evals_cli.simulation.player",
    "Effect": "evals_cli.models.effects", "Grader": "evals_cli.graders.base",
}
__all__ = ["ConfigError", "Grade", "ModelsOutcome", "RunOptions", "RunOutcome", "RunSummary", "Sample",
           "SampleResult", "SuiteSpec", "Trajectory", "__version__", "arun", "grader", "load_suite", "run", "run_suite"]
__all__ += ["Agent", "Effect", "Grader", "UserPlayer"]  # the four interfaces outside code implements


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'evals_cli' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # looked up once
    return value
