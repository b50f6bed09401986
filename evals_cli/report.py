"""Rebuild a run's display state and summary from its results files (`evals report`)."""

from __future__ import annotations

from pathlib import Path

from evals_cli.display.state import RunState
from evals_cli.gate import Gate
from evals_cli.models.results import RunSummary
from evals_cli.models.specs import GateSpec
from evals_cli.output.files import read_results, read_summary
from evals_cli.output.summary import Accumulator


def load_run(target: Path) -> tuple[RunState, RunSummary, list[str]]:
    warnings: list[str] = []
    saved = read_summary(target)
    state: RunState | None = None
    acc: Accumulator | None = None
    for result in read_results(target, warnings):
        if state is None:
            names = list(saved.graders) if saved else list(result.grades)
            repeats = saved.reliability.repeats if saved and saved.reliability else 1
            state = RunState(names, repeats=repeats)
            weights = saved.gate.weights if saved and saved.gate else None
            acc = Accumulator(Gate(GateSpec(weights=weights or None), names), saved.suite if saved else "run", names)
        state.add(result)
        acc.add(result)  # type: ignore[union-attr]
    if state is None or acc is None:
        state = RunState(list(saved.graders) if saved else [])
        return state, saved or RunSummary(suite="run"), warnings
    if saved is not None:
        return state, saved, warnings
    warnings.append("no summary.json (the run did not finish): aggregates recomputed, gate with default settings")
    return state, acc.summary(), warnings
