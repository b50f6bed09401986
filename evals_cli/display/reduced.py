"""What the table shows of `gate.reducer` (gate/reducers.py): each sample's reduced verdict beside its passes out
of its repeats (`2/3 → ✓ mean 0.67`), and under the table the counts of the samples the gate read."""

from __future__ import annotations

from rich.text import Text

from evals_cli.display.state import RunState
from evals_cli.models.results import ReducedSample, RunSummary


def attach(state: RunState, summary: RunSummary) -> None:
    """Hand each shown row its reduced sample (summary.json's `reduced.per_sample`)."""
    if summary.reduced is None:
        return
    for sample in summary.reduced.per_sample:
        row = state.rows.get(sample.sample_id)
        if row is not None:
            row.reduced, row.reducer = sample, summary.reduced.reducer


def mark(sample: ReducedSample, reducer: str) -> Text:
    """' → ✓ mean 0.67', ' → ✗ at_least_2', ' → incomplete: endpoint': what the gate counted for the sample."""
    score = f" {sample.score:.2f}" if sample.score is not None and not reducer.startswith("at_least_") else ""
    if sample.error is not None:
        return Text(f" → {'incomplete' if sample.graded else 'error'}: {sample.error.category}", style="yellow")
    if sample.passed is None:
        return Text(f" → n/a {reducer}", style="dim")
    if sample.passed:
        return Text(f" → ✓ {reducer}{score}", style="green")
    return Text(f" → ✗ {reducer}{score}", style="red")


def counts_line(summary: RunSummary) -> str | None:
    """'reduced (mean of 3 repeats): 5 samples: 3 passed, 1 failed, 1 errored': the counts the gate read."""
    reduced = summary.reduced
    if reduced is None:
        return None
    line = (f"reduced ({reduced.reducer} of {reduced.repeats} repeats): {reduced.samples} samples: "
            f"{reduced.passed} passed, {reduced.failed} failed, {reduced.errored} errored")
    if reduced.unchecked:
        line += f", {reduced.unchecked} with nothing to check"
    return line
