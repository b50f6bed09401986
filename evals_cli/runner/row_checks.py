"""Every per-row check a suite implies, as one `check_dataset(on_sample=...)` hook: the graders' own checks
and rubric rendering, and suite tools that would answer nothing. `evals validate` and the run's precheck both
use it (through `PreparedRun`), so neither can accept a row the other refuses."""

from __future__ import annotations

from evals_cli.graders.base import Grader
from evals_cli.graders.rubric_check import SampleChecker
from evals_cli.models.sample import Sample
from evals_cli.suite.spec import SuiteSpec


class RowChecks:
    def __init__(self, suite: SuiteSpec, graders: dict[str, Grader], where: str = "") -> None:
        from evals_cli.tools.mock import ToolResultChecker

        self.samples = SampleChecker(graders)
        self.tools = ToolResultChecker(getattr(suite, "tools", None) or {}, where or str(suite.base_dir))

    def __call__(self, sample: Sample, where: str = "") -> list[str]:
        return self.samples(sample, where) + self.tools(sample, where)

    def problems(self) -> list[str]:
        return self.samples.problems() + self.tools.problems()
