"""Rebuild a run's display state and summary from its results files (`evals report`).

Every kind of run the tool writes is read here: each writes one `SampleResult` per line and a `RunSummary`
(`evals run` live, resumed, sharded then `evals merge`d, or on a `recorded_sessions` suite; `evals analyze`).
`evals analyze` marks its folder (analyze.json) to be shown as sessions (`sessions.view`); folders it wrote
before it shared the results format hold one `SessionAnalysis` per line and a `SessionsSummary`, and are still
read. `run_kind` tells them apart, `load_run` / `load_sessions` read them back; `load_matrix` reads a run over
several models back from each model's folder (its page is drawn by matrix_report.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from evals_cli.display.matrix import MatrixView, ModelColumn, SampleMarks
from evals_cli.display.state import RunState
from evals_cli.errors import EXIT_INCOMPLETE, EXIT_INTERRUPTED, ConfigError, NewerFormatError
from evals_cli.gate.gate import Gate
from evals_cli.invocation import program
from evals_cli.models.results import RunSummary
from evals_cli.models.specs import GateSpec
from evals_cli.output.exit_codes import NOT_EVALUATED, withhold_verdict
from evals_cli.output.files import (
    RESULTS_NAME,
    SUMMARY_NAME,
    read_records,
    read_results,
    read_summary,
    read_versioned,
    results_path,
)
from evals_cli.output.manifest import MATRIX_NAME, read_matrix
from evals_cli.output.summary import Accumulator, combined_exit, combined_verdict
from evals_cli.sessions.results import SessionAnalysis, SessionsSummary

RunKind = Literal["samples", "sessions"]


def _summary_file(target: Path) -> Path:
    return (target if target.is_dir() else target.parent) / SUMMARY_NAME


def run_kind(target: Path) -> RunKind:
    """`sessions` for the folder (or results file) of `evals analyze` (analyze.json; an older one's: said by
    summary.json, else by the first results line of a killed run), `samples` for every other run."""
    from evals_cli.sessions.view import ANALYZE_NAME

    if (results_path(target).parent / ANALYZE_NAME).is_file():
        return "sessions"
    try:
        saved = json.loads(_summary_file(target).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        saved = None
    if isinstance(saved, dict) and ("suite" in saved or "sessions" in saved):
        return "sessions" if "suite" not in saved else "samples"
    try:
        with results_path(target).open(encoding="utf-8", errors="replace") as fh:
            first = next((line for line in fh if line.strip()), "")
        row = json.loads(first)
    except (OSError, ValueError):
        return "samples"
    return "sessions" if isinstance(row, dict) and "session_id" in row and "sample_id" not in row else "samples"


def load_run(target: Path, *, in_flight: bool = False) -> tuple[RunState, RunSummary, list[str]]:
    """(display state, summary, warnings). The summary never shows a gate verdict the run did not earn: an
    incomplete run's saved verdict is withheld, and a killed run (no summary.json) gets none. `in_flight` (the
    viewer saw its files change just now): a run without summary.json is running, not stopped."""
    warnings: list[str] = []
    saved = read_summary(target)
    state: RunState | None = None
    acc: Accumulator | None = None
    repeats = seen = 1
    for result in read_results(target, warnings):
        if state is None:
            names = list(saved.graders) if saved else list(result.grades)
            repeats = saved.reliability.repeats if saved and saved.reliability else 1
            state = RunState(names, repeats=repeats, keep_diffs=True)
            weights = saved.gate.weights if saved and saved.gate else None
            # per-sample passes are tracked (repeats >= 2) until the results say how many repeats there were;
            # without a summary, the suite's own gate (run.json) gives the weights
            gate = (None if saved else _manifest_gate(target)) or \
                GateSpec(weights=weights or None, not_applicable=_not_applicable(target))
            acc = Accumulator(Gate(gate, names), saved.suite if saved else "run", names, repeats=max(repeats, 2))
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
    rebuilt = acc.summary()
    if in_flight:  # the viewer: a run still going has no verdict yet, and nothing to resume
        withhold_verdict(rebuilt)
        warnings.append("the run is in flight: aggregates of the samples finished so far, no gate verdict yet")
        return state, rebuilt.model_copy(update={
            "status": "running", "exit_code": None,
            "abort_reason": f"{rebuilt.total} sample{'s' if rebuilt.total != 1 else ''} finished so far; the "
                            "verdict comes when the run ends"}), warnings
    warnings.append("no summary.json (the run did not finish): aggregates recomputed, no gate verdict")
    rebuilt.status = "interrupted"
    rebuilt.abort_reason = (f"no summary.json: the run is still going, or was stopped before it finished; resume "
                            f"a stopped run with {program()} run SUITE --resume {results_path(target).parent}")
    withhold_verdict(rebuilt)
    rebuilt.exit_code = EXIT_INTERRUPTED
    return state, rebuilt, warnings


def _manifest_gate(target: Path) -> Any:
    """The suite's gate as run.json records it (its weights, rules and kind), None when there is none to read."""
    from evals_cli.output.manifest import MANIFEST_NAME, read_manifest

    folder = results_path(target).parent
    if not (folder / MANIFEST_NAME).is_file():
        return None
    try:
        return GateSpec.model_validate(read_manifest(folder).gate or {})
    except (ConfigError, ValueError):
        return None


def _not_applicable(target: Path) -> str:
    """How the run counts n/a grades (its gate's `not_applicable`, from run.json), so that the aggregates of a
    killed run are recomputed as the run would have computed them."""
    from evals_cli.output.manifest import MANIFEST_NAME, read_manifest

    if not (results_path(target).parent / MANIFEST_NAME).is_file():
        return "exclude"
    try:
        value = read_manifest(results_path(target).parent).gate.get("not_applicable")
    except NewerFormatError:
        raise
    except ConfigError:  # unreadable: the default, as for a run without run.json
        return "exclude"
    return value if value in ("exclude", "pass") else "exclude"


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


def read_analyses(target: Path, warnings: list[str] | None = None) -> Iterator[SessionAnalysis]:
    """A sessions run's results lines, lazily; a torn last line (a killed run) is a warning, not fatal."""
    return read_records(target, SessionAnalysis, "sessions results line", warnings)


@dataclass
class SessionsRunView:
    """A sessions run read back: every analysis (input order as written), the summary, and what to warn about."""

    analyses: list[SessionAnalysis]
    summary: SessionsSummary
    warnings: list[str] = field(default_factory=list)


def load_sessions(target: Path) -> SessionsRunView:
    """A sessions run's analyses (as written) and summary. Without summary.json (a killed run) the summary is
    rebuilt from the analyses with no gate verdict, as `load_run` does for a killed `evals run`."""
    from evals_cli.sessions.summary import SessionsAccumulator
    from evals_cli.sessions.view import load_view, read_record

    record = read_record(target)
    if record is not None:  # the results of every run, shown as sessions
        view = load_view(target, read_summary(target), record, keep=None)
        return SessionsRunView(view.analyses, view.summary, view.warnings)
    warnings: list[str] = []
    analyses = list(read_analyses(target, warnings))
    saved: SessionsSummary | None = None
    path = _summary_file(target)
    if path.is_file():
        saved = read_versioned(path, SessionsSummary, "summary")
        if saved is None:
            warnings.append(f"{path}: unreadable summary; aggregates recomputed from the results, no gate verdict")
    if saved is not None:
        return SessionsRunView(analyses, saved, warnings)
    if not path.is_file():
        warnings.append("no summary.json (the run did not finish): aggregates recomputed, no gate verdict")
    folder = results_path(target).parent
    acc = SessionsAccumulator(folder.name, "")
    for analysis in analyses:
        acc.add(analysis)
    rebuilt = acc.summary()
    rebuilt.status, rebuilt.exit_code = "aborted", EXIT_INCOMPLETE
    rebuilt.abort_reason = "no summary.json: the run is still going, or was stopped before it finished"
    return SessionsRunView(analyses, rebuilt, warnings)


def load_matrix(top: Path, *, in_flight: bool = False) -> MatrixView:
    """The view of the run over several models in `top` (its matrix.json and every model's folder); `in_flight`
    (the viewer saw it change just now): a model without its summary yet is running, not stopped."""
    matrix = read_matrix(top)
    if matrix is None:
        raise ConfigError(f"{top}: no {MATRIX_NAME}, so not the folder of a run over several models")
    columns: list[ModelColumn] = []
    order: dict[str, None] = {}
    warnings: list[str] = []
    for run in matrix.models:
        folder = top / run.folder
        if not (folder / RESULTS_NAME).is_file():
            warnings.append(f"{run.model}: {folder} holds no results (the run stopped before this model started)")
        _, summary, notes = load_run(folder, in_flight=in_flight)
        warnings += [f"{run.model}: {note}" for note in notes]
        column = ModelColumn(run.model, run.folder, summary, endpoint=run.base_url,
                             state=RunState(list(summary.graders), repeats=summary.reliability.repeats
                                            if summary.reliability else 1))
        if (folder / RESULTS_NAME).is_file():
            for result in read_results(folder, []):
                column.state.add(result)  # type: ignore[union-attr]
                marks = column.samples.setdefault(result.sample_id, SampleMarks())
                marks.runs += 1
                marks.passed += bool(result.error is None and result.passed)
                marks.errored += result.error is not None
                order[result.sample_id] = None
        else:  # never started: nothing was measured, and nothing may read as passed
            summary.status, summary.exit_code = "interrupted", EXIT_INTERRUPTED
            summary.abort_reason = f"no results in {folder}: resume the run with --resume {top}"
        run.status, run.exit_code = summary.status, summary.exit_code
        columns.append(column)
    rebuilt = matrix.model_copy(deep=True)
    rebuilt.models = matrix.models
    rebuilt.exit_code = combined_exit([EXIT_INTERRUPTED if r.exit_code is None else r.exit_code
                                     for r in matrix.models], matrix.gate_mode)
    rebuilt.gate = combined_verdict(matrix.models, matrix.gate_mode)
    statuses: set[str | None] = {run.status for run in matrix.models}
    rebuilt.status = ("interrupted" if "interrupted" in statuses or None in statuses else
                      "aborted" if "aborted" in statuses else "completed")
    if rebuilt.status == "completed":
        rebuilt.abort_reason = None
    if in_flight and ("running" in statuses or rebuilt.status == "interrupted"):  # still going: no verdict yet
        rebuilt = rebuilt.model_copy(update={"status": "running", "abort_reason": None})
    return MatrixView(rebuilt, columns, list(order), warnings, top)


def conversation_notes(state: RunState) -> list[str]:
    """Lines under the table for conversations: each goal-completion grader's goals met and turns to success
    (the mean over the samples whose goal was met), and which `--replay-user` conversations left the recorded
    path at which turn (leaving it is not the agent's failure by itself)."""
    lines = []
    for name, tally in state.goals.items():
        line = f"{name}: goal met in {tally.met}/{tally.judged} judged conversations"
        if tally.mean_turns is not None:
            line += f"; turns to success: mean {tally.mean_turns:.1f} over {len(tally.turns)}"
        lines.append(line)
    if state.replayed:
        off = state.divergences
        head = (f"replay-user: {len(off)} of {state.replayed} conversations left the recorded path"
                if off else f"replay-user: all {state.replayed} conversations stayed on the recorded path")
        shown = ", ".join(f"{d.sample_id}{f'#{d.repeat + 1}' if d.repeat else ''} at turn {d.turn}"
                          f"{' (stopped: diverged)' if d.stopped else ''}" for d in off[:10])
        more = f", {len(off) - 10} more" if len(off) > 10 else ""
        lines.append(head + (f": {shown}{more}" if off else "")
                     + (" (a different reply is not a failure by itself)" if off else ""))
    return lines
