"""Evals inside a test suite: `run_suite` runs a suite through the library API `evals run` uses
(`evals_cli.run`), and gives its sample runs and the gate's verdict in a form a test can assert on;
`assert_passed(run)` (or `run.assert_gate()`) raises AssertionError naming every sample that did not pass, with
the reasons `evals report --why full` prints for it. The pytest plugin (evals_cli/pytest_plugin.py) is built on
this: `pytest --evals suite.yaml` makes each sample run a test.

A run that did not complete (too many errored samples, an interrupt) has no verdict to assert: it raises
`SuiteIncomplete`, never an AssertionError, so an outage is not read as a regression.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from evals_cli.errors import EXIT_GATE_FAILED, EXIT_PASSED
from evals_cli.models.results import SampleResult, Verdict

SampleVerdict = Literal["passed", "failed", "error", "unchecked"]
REASONS_WIDTH = 100  # the failure text's wrapping: pytest prints it as is


class SuiteIncomplete(RuntimeError):
    """The run ended without a verdict (aborted on errors, interrupted): neither a pass nor a failure."""


@dataclass(frozen=True)
class SampleRun:
    """One sample run (a sample and one of its repeats) and how it ended."""

    result: SampleResult
    model: str | None = None  # a run over several models: which model this one was

    @property
    def name(self) -> str:
        """`sample-id[r0]` (`model/sample-id[r0]` over several models): the test id the plugin gives it."""
        prefix = f"{self.model}/" if self.model else ""
        return f"{prefix}{self.result.sample_id}[r{self.result.repeat}]"

    @property
    def verdict(self) -> SampleVerdict:
        """error (it could not be run or graded to the end), unchecked (nothing it is judged on had anything to
        check), else passed or failed."""
        if self.result.error is not None:
            return "error"
        if self.result.passed is None:
            return "unchecked"
        return "passed" if self.result.passed else "failed"

    def reasons(self) -> str:
        """The verdict and every reason behind it, whole: what `evals report --why full` prints for this run."""
        from rich.console import Console, Group

        from evals_cli.display.why import sample_reasons

        out = io.StringIO()
        console = Console(file=out, width=REASONS_WIDTH, color_system=None, force_terminal=False, highlight=False,
                          emoji=False, markup=False)
        console.print(Group(*sample_reasons(self.result, "full")))
        return "\n".join(line.rstrip() for line in out.getvalue().rstrip().splitlines())  # no padding's blanks


@dataclass
class SuiteRun:
    """What `run_suite` returns: the library's outcome, every sample run in the order its results were
    written, and the gate's verdict."""

    suite: Path
    outcome: Any  # a RunOutcome, or a ModelsOutcome over several models
    samples: list[SampleRun] = field(default_factory=list)

    @property
    def gate(self) -> Verdict | None:
        return self.outcome.summary.gate

    @property
    def exit_code(self) -> int:
        """What `evals run` would exit with: 0 passed, 1 gate failed, 3 incomplete, 130 interrupted."""
        return int(self.outcome.exit_code)

    @property
    def output_dir(self) -> Path:
        return Path(self.outcome.output_dir)

    @property
    def not_passed(self) -> list[SampleRun]:
        """The sample runs that failed or errored."""
        return [s for s in self.samples if s.verdict in ("failed", "error")]

    def gate_message(self) -> str:
        """The gate's line as `evals run` prints it, or why there is no verdict."""
        summary = self.outcome.summary
        if self.exit_code not in (EXIT_PASSED, EXIT_GATE_FAILED):
            why = summary.abort_reason or f"status {summary.status}"
            return f"the run is incomplete ({why}): no verdict"
        return summary.gate.message if summary.gate is not None else "no gate"

    def failure_text(self) -> str:
        """The gate's line, then every sample run that did not pass with its reasons."""
        parts = [self.gate_message()] + [s.reasons() for s in self.not_passed]
        return "\n\n".join(parts)

    def assert_gate(self) -> None:
        """AssertionError when the gate failed; SuiteIncomplete when the run has no verdict."""
        if self.exit_code == EXIT_PASSED:
            return
        if self.exit_code == EXIT_GATE_FAILED:
            raise AssertionError(self.failure_text())
        raise SuiteIncomplete(self.failure_text())


def assert_passed(run: SuiteRun) -> None:
    """`run.assert_gate()`, as a function to call from a test."""
    run.assert_gate()


def run_suite(path: str | Path, **options: Any) -> SuiteRun:
    """Run a suite file to the end with `RunOptions(**options)` (output=, replay=, repeats=, ...: what `evals run`
    takes); ConfigError (exit 2 on the command line) when the suite or the options are wrong."""
    from evals_cli.run_options import ModelsOutcome, RunOptions
    from evals_cli.runner.run import run

    outcome = run(Path(path), RunOptions(**options))
    if isinstance(outcome, ModelsOutcome):
        samples = [s for model, each in outcome.outcomes.items() for s in _sample_runs(each.output_dir, model)]
    else:
        samples = _sample_runs(outcome.output_dir, None)
    return SuiteRun(Path(path), outcome, samples)


def _sample_runs(folder: Path, model: str | None) -> list[SampleRun]:
    from evals_cli.output.files import read_results

    return [SampleRun(result, model) for result in read_results(Path(folder))]
