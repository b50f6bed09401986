"""Every per-row check a suite implies, as one `check_dataset(on_sample=...)` hook: the graders' own checks
and rubric rendering, and suite tools that would answer nothing. `evals validate` and the run's precheck both
use it (through `PreparedRun`), so neither can accept a row the other refuses."""

from __future__ import annotations

from evals_cli.graders.base import Grader
from evals_cli.graders.rubric_check import SampleChecker
from evals_cli.models.sample import Sample
from evals_cli.suite.spec import SuiteSpec


class RowChecks:
    """Rows reach this with the suite's environment merged into theirs (PreparedRun), as the run sees them."""

    def __init__(self, suite: SuiteSpec, graders: dict[str, Grader], where: str = "") -> None:
        from evals_cli.environment.checks import EnvironmentChecker
        from evals_cli.tools.mock import ToolResultChecker

        self.samples = SampleChecker(graders)
        tools = getattr(suite, "tools", None) or {}
        self.tools = ToolResultChecker(tools, where or str(suite.base_dir))
        states = {name: state for name, g in graders.items()
                  if (state := getattr(g.spec, "expected_state", None)) is not None}
        self.environment = EnvironmentChecker(tools, where or str(suite.base_dir), states)

    def __call__(self, sample: Sample, where: str = "") -> list[str]:
        return self.samples(sample, where) + self.tools(sample, where) + self.environment(sample, where)

    def problems(self) -> list[str]:
        return self.samples.problems() + self.tools.problems() + self.environment.problems()


class SampleSelection:
    """Which samples a run keeps by id: `--sample-id` patterns (exact ids or globs, `refund-*`; a sample is kept
    when any matches) and, for `--rerun-failed`, an exact set of ids; both given, a sample needs both. Remembers
    what matched, so a pattern or id that matches no sample of the dataset can be named."""

    def __init__(self, patterns: list[str] | None = None, exact: list[str] | None = None) -> None:
        self.patterns = list(dict.fromkeys(patterns or []))
        self.exact = None if exact is None else dict.fromkeys(exact)
        self._matched: set[str] = set()
        self._found: set[str] = set()

    def __bool__(self) -> bool:
        return bool(self.patterns) or self.exact is not None

    def keeps(self, sample_id: str) -> bool:
        import fnmatch

        keep = True
        if self.exact is not None:
            keep = sample_id in self.exact
            if keep:
                self._found.add(sample_id)
        if self.patterns:
            hits = [p for p in self.patterns if p == sample_id or fnmatch.fnmatchcase(sample_id, p)]
            self._matched.update(hits)
            keep = keep and bool(hits)
        return keep

    def unmatched(self) -> list[str]:
        """The --sample-id patterns no sample matched (after keeps() saw every sample)."""
        return [p for p in self.patterns if p not in self._matched]

    def missing(self) -> list[str]:
        """The exact ids (--rerun-failed) no sample of the dataset has."""
        return [i for i in self.exact or {} if i not in self._found]

    def describe(self) -> str:
        parts = [f"--sample-id {', '.join(self.patterns)}"] if self.patterns else []
        if self.exact is not None:
            parts.append(f"--rerun-failed ({len(self.exact)} samples)")
        return " and ".join(parts)
