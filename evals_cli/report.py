"""Rebuild a run's display state and summary from its results files (`evals report`)."""

from __future__ import annotations

from pathlib import Path

from evals_cli.display.state import RunState
from evals_cli.errors import EXIT_INCOMPLETE, EXIT_INTERRUPTED
from evals_cli.gate import Gate
from evals_cli.models.results import RunSummary
from evals_cli.models.specs import GateSpec
from evals_cli.output.exit_codes import NOT_EVALUATED, withhold_verdict
from evals_cli.output.files import read_results, read_summary, results_path
from evals_cli.output.summary import Accumulator


def load_run(target: Path) -> tuple[RunState, RunSummary, list[str]]:
    """(display state, summary, warnings). The summary never shows a gate verdict the run did not earn: an
    incomplete run's saved verdict is withheld, and a killed run (no summary.json) gets none."""
    warnings: list[str] = []
    saved = read_summary(target)
    state: RunState | None = None
    acc: Accumulator | None = None
    repeats = seen = 1
    for result in read_results(target, warnings):
        if state is None:
            names = list(saved.graders) if saved else list(result.grades)
            repeats = saved.reliability.repeats if saved and saved.reliability else 1
            state = RunState(names, repeats=repeats)
            weights = saved.gate.weights if saved and saved.gate else None
            # per-sample passes are tracked (repeats >= 2) until the results say how many repeats there were
            acc = Accumulator(Gate(GateSpec(weights=weights or None), names), saved.suite if saved else "run", names,
                              repeats=max(repeats, 2))
        state.add(result)
        acc.add(result)  # type: ignore[union-attr]
        seen = max(seen, result.repeat + 1)
    if acc is not None:
        acc.repeats = max(repeats, seen)  # a killed run has no summary to say it: its results do
    if state is None or acc is None:
        state = RunState(list(saved.graders) if saved else [])
        return state, _honest(saved) if saved else RunSummary(suite="run"), warnings
    if saved is not None:
        return state, _honest(saved), warnings
    warnings.append("no summary.json (the run did not finish): aggregates recomputed, no gate verdict")
    rebuilt = acc.summary()
    rebuilt.status = "interrupted"
    rebuilt.abort_reason = (f"no summary.json: the run is still going, or was stopped before it finished; resume "
                            f"a stopped run with evals run SUITE --resume {results_path(target).parent}")
    withhold_verdict(rebuilt)
    rebuilt.exit_code = EXIT_INTERRUPTED
    return state, rebuilt, warnings


def _honest(saved: RunSummary) -> RunSummary:
    """A saved summary as the run's exit code reads it: an incomplete run (interrupted, aborted, exit 3 or 130)
    shows no gate verdict, even when an older evals-cli wrote one computed from the samples that survived."""
    if saved.status == "completed" and saved.exit_code not in (EXIT_INCOMPLETE, EXIT_INTERRUPTED):
        return saved
    if saved.status == "completed":
        saved.status = "interrupted" if saved.exit_code == EXIT_INTERRUPTED else "aborted"
    if saved.gate is not None and (saved.gate.passed is not None or not saved.gate.message.startswith(NOT_EVALUATED)):
        withhold_verdict(saved)
    return saved
