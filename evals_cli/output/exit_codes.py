"""The exit code a summary earns: the contract CI jobs gate on.

One rule keeps verdicts true: a run that did not complete (interrupted, aborted, too many errored samples or
missing grades, nothing graded) never carries a gate verdict. A verdict computed from the samples that happened
to survive would read as a pass in `summary.json`, JUnit and the console while the exit code says otherwise, so
its gate becomes "not evaluated" (`passed: null`, `metric: null`) everywhere the summary goes.
"""

from __future__ import annotations

from evals_cli.errors import EXIT_GATE_FAILED, EXIT_INCOMPLETE, EXIT_INTERRUPTED, EXIT_PASSED
from evals_cli.models.results import Coverage, RunSummary
from evals_cli.thresholds import GATE_UNDECIDED, UNDECIDED

NOT_EVALUATED = "Gate not evaluated"


def _undecided(message: str) -> str | None:
    """The reason in an undecided gate's message (None when the gate decided)."""
    return message[len(UNDECIDED):] if message.startswith(UNDECIDED) else None


def exit_code_for(summary: RunSummary, max_error_rate: float) -> int:
    """0 gate passed, 1 gate failed, 3 incomplete (aborted, too many errored samples or missing grades,
    nothing graded), 130 interrupted. An incomplete run is marked (`status`, `abort_reason`) and its gate
    verdict withheld; `summary.exit_code` is set to the code returned."""
    code = _code(summary, max_error_rate)
    if code in (EXIT_INCOMPLETE, EXIT_INTERRUPTED):
        if summary.status == "completed":
            summary.status = "aborted"
        withhold_verdict(summary)
    if summary.coverage is not None:
        summary.coverage.reasons = coverage_reasons(summary.coverage, summary.status, summary.total)
    summary.exit_code = code
    return code


def _code(summary: RunSummary, max_error_rate: float) -> int:
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
    if _empty_shard(summary):
        return EXIT_PASSED  # a finished part with nothing in it: no verdict of its own, and nothing went wrong
    if summary.gate is None or summary.gate.passed is None:
        if summary.abort_reason is None:
            why = _undecided(summary.gate.message) if summary.gate is not None else None
            summary.abort_reason = f"{GATE_UNDECIDED}: {why or 'the suite has no gate'}"
        return EXIT_INCOMPLETE
    return EXIT_PASSED if summary.gate.passed else EXIT_GATE_FAILED


def _empty_shard(summary: RunSummary) -> bool:
    """A shard that holds none of the samples (a small dataset split many ways) finished all it was given: its
    job must not fail (a Kubernetes Job would retry it, a CI matrix would go red) and `evals merge` counts it as
    done. Its gate says why it has no verdict; the merged run's gate decides."""
    cov = summary.coverage
    if summary.status != "completed" or summary.total or cov is None or cov.shard is None or cov.selected != 0:
        return False
    if summary.gate is not None:
        summary.gate.passed, summary.gate.metric = None, None
        summary.gate.message = (f"{NOT_EVALUATED}: shard {cov.shard} holds none of the {cov.limited} samples; "
                                "`evals merge` of every shard gives the run's verdict")
    return True


def progress(summary: RunSummary) -> str:
    """'32 of 200 samples' (or 'sample runs' with repeats): how far an incomplete run got."""
    cov = summary.coverage
    done = summary.total
    expected = cov.expected_results if cov is not None else None
    unit = "sample runs" if cov is not None and expected is not None and cov.selected is not None \
        and expected > cov.selected else "samples"
    if expected is None and summary.reliability is not None and summary.reliability.repeats > 1:
        unit = "sample runs"  # no plan to compare with (a killed run's report): the results' repeats say it
    return f"{done} of {expected} {unit}" if expected is not None else f"{done} {unit}"


def withhold_verdict(summary: RunSummary) -> None:
    """Replace the gate's verdict by 'not evaluated', saying why; the per-grader aggregates stay (they are what
    was measured), the comparison with the gate's value does not."""
    gate = summary.gate
    if gate is None:
        return
    undecided = _undecided(gate.message) if gate.passed is None else None
    own = summary.abort_reason is None or summary.abort_reason.startswith(GATE_UNDECIDED)
    if undecided is not None and own and summary.status != "interrupted":  # the gate's own reason is the true one
        why = undecided
    elif summary.status == "interrupted":
        why = f"interrupted after {progress(summary)}"
    else:
        why = f"run aborted after {progress(summary)}"
        if summary.abort_reason:
            why += f" ({summary.abort_reason})"
    gate.passed = None
    gate.metric = None
    gate.message = f"{NOT_EVALUATED}: {why}"


def coverage_reasons(cov: Coverage, status: str, results: int) -> list[str]:
    """Why fewer samples ran than the dataset has rows, in the order the rows were dropped."""
    reasons: list[str] = []
    if cov.dataset_rows is not None and cov.tagged is not None and cov.tagged < cov.dataset_rows:
        filters = ([f"tag filter ({', '.join(cov.tags)})"] if cov.tags else []) + ([cov.id_filter] if cov.id_filter else [])
        reasons.append(f"{' and '.join(filters) or 'filter'} kept {cov.tagged}")
    if cov.limited is not None and cov.tagged is not None and cov.limited < cov.tagged:
        reasons.append(f"max samples ({cov.max_samples}) kept {cov.limited}")
    if cov.shard is not None and cov.selected is not None:
        reasons.append(f"shard {cov.shard} holds {cov.selected}")
    if cov.expected_results is not None and results < cov.expected_results and status != "completed":
        reasons.append(f"{status} after {results} of {cov.expected_results}")
    return reasons

