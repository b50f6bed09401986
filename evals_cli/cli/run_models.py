"""What `evals run --model A --model B` shows: every model at once in one progress view (samples named
`model / sample`), then the side-by-side table, each model's messages, how to finish the run, the HTML report
when asked for, and the combined exit code."""

from __future__ import annotations

import asyncio
from pathlib import Path

from rich.console import Console

from evals_cli.display.console import make_console
from evals_cli.display.live import LiveProgress
from evals_cli.display.matrix import MatrixView, render_matrix
from evals_cli.display.plain import print_errors
from evals_cli.display.state import RunState
from evals_cli.errors import EXIT_INCOMPLETE, ConfigError
from evals_cli.exporters.html import write_run_html
from evals_cli.matrix_report import write_matrix_html
from evals_cli.models.results import SampleResult
from evals_cli.report import load_matrix
from evals_cli.run_options import ModelsOutcome
from evals_cli.runner.execution import Execution
from evals_cli.runner.models_matrix import ModelsExecution, PreparedModels
from evals_cli.runner.started_with import resume_command
from evals_cli.shutdown import settle_heap


def run_models(prepared: PreparedModels, suite: Path, quiet: bool, html: Path | None) -> int:
    """Every model at once with one progress view, then the side-by-side table, each model's messages, the HTML
    report when asked for, and the combined exit code."""
    console, err = make_console(), make_console(stderr=True)
    for warning in prepared.warnings:
        err.print(f"warning: {warning}", markup=False, highlight=False, soft_wrap=True)
    first = next(iter(prepared.runs.values()))
    state = RunState(list(first.graders), total_expected=prepared.expected, repeats=first.repeats)
    execution = ModelsExecution(prepared, Execution)
    live = LiveProgress(console, state, enabled=not quiet, in_flight=execution.in_flight,
                        resumed=lambda: execution.resumed, err=err)

    def on_result(model: str, result: SampleResult) -> None:
        state.add(result.model_copy(update={"sample_id": f"{model} / {result.sample_id}"}))
        live.update()

    execution.on_result, execution.on_interrupt = on_result, live.interrupted
    for run in prepared.runs.values():
        run.pool.load_sdk()  # imported now, it is settled with the rest
    settle_heap()  # everything prepared lives to the end: out of the collector's sight
    with live:
        outcome = asyncio.run(execution.run())
    view = load_matrix(outcome.output_dir)
    _show(console, view, outcome, quiet)
    print_errors(err, outcome.messages)
    _how_to_finish(err, suite, outcome)
    return _write_html(err, view, outcome, html) if html is not None else outcome.exit_code


def _show(console: Console, view: MatrixView, outcome: ModelsOutcome, quiet: bool) -> None:
    """The side-by-side table and the run's folder (the reasons are on stderr); a quiet run's verdict alone."""
    gate = outcome.summary.gate
    if quiet:
        console.print(gate.message if gate else "no gate", markup=False)
        return
    console.print(render_matrix(view, str(outcome.output_dir), reasons=False))  # stderr says them
    console.print(f"results: {outcome.output_dir}", markup=False, highlight=False, soft_wrap=True)


def _how_to_finish(err: Console, suite: Path, outcome: ModelsOutcome) -> None:
    """The command that finishes the models whose runs did not complete (retrying errored samples if any has)."""
    unfinished = [m for m, o in outcome.outcomes.items() if o.summary.status != "completed"]
    if unfinished:
        retry = any(outcome.outcomes[m].summary.errored for m in unfinished)
        err.print(f"to finish the run ({', '.join(unfinished)}): "
                  f"{resume_command(suite, outcome.output_dir, retry_errors=retry)}",
                  markup=False, highlight=False, soft_wrap=True)


def _write_html(err: Console, view: MatrixView, outcome: ModelsOutcome, html: Path) -> int:
    """The side-by-side report written; one that cannot be is said, the run's code kept (exit 3 for a passed run)."""
    try:
        write_matrix_html(view, html, write_run_html)
    except ConfigError as exc:  # the run is saved; only the report is not: keep the run's code unless it passed
        err.print(f"error: {exc.problems[0]}; the run is saved in {outcome.output_dir}", markup=False,
                  highlight=False, soft_wrap=True)
        return outcome.exit_code if outcome.exit_code != 0 else EXIT_INCOMPLETE
    return outcome.exit_code
