"""The exit code a summary earns: the contract CI jobs gate on."""

from __future__ import annotations

from evals_cli.errors import EXIT_GATE_FAILED, EXIT_INCOMPLETE, EXIT_INTERRUPTED, EXIT_PASSED
from evals_cli.models.results import RunSummary


def exit_code_for(summary: RunSummary, max_error_rate: float) -> int:
    """0 gate passed, 1 gate failed, 3 incomplete (aborted, too many errored samples or missing grades,
    nothing graded), 130 interrupted. Sets `summary.abort_reason` when the error rate decides."""
    if summary.status == "interrupted":
        return EXIT_INTERRUPTED
    if summary.status == "aborted":
        return EXIT_INCOMPLETE
    if summary.total and summary.errored / summary.total > max_error_rate:
        summary.abort_reason = (f"{summary.errored}/{summary.total} samples errored, more than "
                                f"--max-error-rate {max_error_rate:g}")
        return EXIT_INCOMPLETE
    if summary.grades_total and summary.grades_missing / summary.grades_total > max_error_rate:
        summary.abort_reason = (f"{summary.grades_missing}/{summary.grades_total} grades are missing (grader or "
                                f"judge errors), more than --max-error-rate {max_error_rate:g}")
        return EXIT_INCOMPLETE
    if summary.gate is None or summary.gate.passed is None:
        return EXIT_INCOMPLETE
    return EXIT_PASSED if summary.gate.passed else EXIT_GATE_FAILED
