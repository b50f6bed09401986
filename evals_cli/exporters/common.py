"""Small helpers every exporter shares, so a sample is named and counted the same way in every format."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evals_cli.models.results import SampleResult
from evals_cli.sessions.explanations import FINDINGS

# what each finding means and why it matters, in one line: the table the terminal view of `evals analyze` prints
# too (sessions/explanations.py)
KINDS: dict[str, str] = {kind: str(explanation) for kind, explanation in FINDINGS.items()}


def case_name(result: SampleResult) -> str:
    """`sample_id`, or `sample_id#repeat` for repeats after the first: unique within a run, stable across runs."""
    return result.sample_id if result.repeat <= 0 else f"{result.sample_id}#{result.repeat}"


def model_calls(result: SampleResult) -> int:
    """How many times the agent's model was called (one step = one call)."""
    return sum(len(turn.steps) for turn in result.trajectory.turns)


def unique(names: list[str]) -> list[str]:
    """Names without repeats, in order of first appearance."""
    return list(dict.fromkeys(names))


def failed_labels(result: SampleResult) -> list[str]:
    """What failed a sample, as the table names it (grader names, `weighted`, `unknown tool`), no repeats."""
    return unique([failure.label for failure in result.failed_by])


def fmt_score(score: float | None) -> str:
    return "—" if score is None else f"{score:.2f}"


def prepare(path: Path | str) -> Path:
    """The output path, with its folder created (exports usually go next to, not inside, the run folder)."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    return out


def tool_runs(names: list[str]) -> list[str]:
    """Tool calls in order, a run of the same tool called back to back shown once with its count (`read_file ×8`):
    eight identical calls are a loop, never the one call `unique` would show."""
    runs: list[list[Any]] = []
    for name in names:
        if runs and runs[-1][0] == name:
            runs[-1][1] += 1
        else:
            runs.append([name, 1])
    return [name if count == 1 else f"{name} ×{count}" for name, count in runs]
