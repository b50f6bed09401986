"""What `evals run` shows of a prepared run of one model: the progress view while it runs, then the table (or
the verdict line of a quiet run), the messages, how to finish or retry it, and the exports.

A quiet run prints a line or two of plain text (display/plain.py): Rich, for the progress view and the table, is
imported only by a run that shows them, and the exporters only when one is asked for."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from evals_cli.cli.printing import conversation_notes
from evals_cli.display.plain import PlainConsole, QuietProgress, print_errors
from evals_cli.display.state import RunState
from evals_cli.errors import EXIT_INCOMPLETE
from evals_cli.models.results import SampleResult
from evals_cli.runner.execution import Execution
from evals_cli.runner.started_with import resume_command
from evals_cli.shutdown import settle_heap

if TYPE_CHECKING:
    from rich.console import Console

    from evals_cli.display.live import LiveProgress
    from evals_cli.run_options import LiveOutcome
    from evals_cli.runner.prepare import PreparedRun


def run_live(prepared: PreparedRun, suite: Path, quiet: bool, exports: dict[str, Path]) -> int:
    """Execute with the live progress view, then the table, the messages and the exports; the exit code."""
    state = RunState(list(prepared.graders), total_expected=prepared.expected, repeats=prepared.repeats)
    execution = Execution(prepared, None)  # the view watches its samples in flight and hears Ctrl-C at once
    view, err, live = _progress(execution, state, quiet)

    def on_result(result: SampleResult) -> None:
        state.add(result)
        live.update()

    execution.on_result, execution.on_interrupt = on_result, live.interrupted
    prepared.pool.load_sdk()  # imported now, it is settled with the rest
    settle_heap()  # everything prepared lives to the end: out of the collector's sight
    with live:
        outcome = asyncio.run(execution.run())
    _show(view, state, outcome)
    print_errors(err, outcome.messages)
    _how_to_finish(err, prepared, suite, outcome)
    return _export(err, prepared, outcome, exports) if exports else outcome.exit_code


def _progress(execution: Execution, state: RunState,
              quiet: bool) -> tuple[Console | None, Console | PlainConsole, LiveProgress | QuietProgress]:
    """The table's console (none in a quiet run), the console of the messages, and the progress view."""
    if quiet:  # a line or two of plain text: no Rich console, no progress view (display/plain.py)
        plain_err = PlainConsole(stderr=True)
        return None, plain_err, QuietProgress(plain_err)
    from evals_cli.display.console import make_console
    from evals_cli.display.live import LiveProgress

    view, err = make_console(), make_console(stderr=True)
    return view, err, LiveProgress(view, state, enabled=True, in_flight=execution.in_flight,
                                   resumed=lambda: execution.resumed, err=err)


def _show(view: Console | None, state: RunState, outcome: LiveOutcome) -> None:
    """The table, the conversation notes and the run's folder; a quiet run's verdict line alone."""
    summary = outcome.summary
    if view is None:
        PlainConsole().print(summary.gate.message if summary.gate else "no gate", markup=False)
        return
    from evals_cli.display.table import render_run

    view.print(render_run(state, summary, outcome.output_dir), crop=False)  # commands stay whole
    conversation_notes(view, state)
    view.print(f"results: {outcome.output_dir}", markup=False, highlight=False, soft_wrap=True)


def _how_to_finish(err: Console | PlainConsole, prepared: PreparedRun, suite: Path, outcome: LiveOutcome) -> None:
    """The command that finishes a run that left samples unrun, or retries the errored samples of an aborted one."""
    summary = outcome.summary
    cov = summary.coverage
    if summary.status != "completed" and cov is not None and cov.expected_results is not None \
            and summary.total < cov.expected_results:  # samples were left unrun: say how to run them
        err.print(f"to finish the run: {resume_command(suite, outcome.output_dir)}",
                  markup=False, highlight=False, soft_wrap=True)
    elif summary.status == "aborted" and summary.errored and not prepared.target.replaces_results:
        # every sample ran, too many errored: retry those (a run of recorded sessions has no resume: run it again)
        err.print(f"to retry the errored samples: {resume_command(suite, outcome.output_dir, retry_errors=True)}",
                  markup=False, highlight=False, soft_wrap=True)


def _export(err: Console | PlainConsole, prepared: PreparedRun, outcome: LiveOutcome, exports: dict[str, Path]) -> int:
    """The exports written; a file that cannot be written is said, the run's code kept (exit 3 for a passed run)."""
    from evals_cli.exporters import export_run

    try:
        export_run(outcome.output_dir, outcome.summary, exports=exports, threshold=prepared.suite.gate.sample_value)
    except OSError as exc:  # the run is saved; only the export is not: say which file, keep the run's code
        where = exc.filename or ", ".join(map(str, exports.values()))
        err.print(f"error: could not write {where} ({exc.strerror or type(exc).__name__}); the run is saved in "
                  f"{outcome.output_dir}", markup=False, highlight=False, soft_wrap=True)
        return outcome.exit_code if outcome.exit_code != 0 else EXIT_INCOMPLETE
    return outcome.exit_code
