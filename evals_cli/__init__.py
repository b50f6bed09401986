"""evals-cli: evaluate multi-turn LLM agents from YAML suites.

The public Python API: `load_suite` + `run_suite` (what `evals run` does), and `grader` to register custom
grading functions. Imports are lazy so that `import evals_cli` stays cheap.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["Grade", "Sample", "Trajectory", "grader", "load_suite", "run_suite", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "grader":
        from evals_cli.graders.functions import grader

        return grader
    if name in ("Grade", "Sample", "Trajectory"):
        from evals_cli import models

        return getattr(models, name)
    if name == "load_suite":
        from evals_cli.suite.loader import load_suite

        return load_suite
    if name == "run_suite":
        from evals_cli.runner import run_suite

        return run_suite
    raise AttributeError(name)
