"""What `evals run` does once its arguments are parsed and the run prepared: the progress view while it runs,
then the table (or the verdict line of a quiet run), the messages, how to finish or retry it, and the exports;
one function per kind of run (one model, several models). cli.py stays the parsing of
arguments; what is imported here is imported inside the functions, so `evals --help` never pays for it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from evals_cli.display.plain import print_errors
from evals_cli.errors import EXIT_INCOMPLETE, ConfigError

if TYPE_CHECKING:
    from rich.console import Console

    from evals_cli.display.live import LiveProgress
    from evals_cli.display.plain import PlainConsole, QuietProgress
    from evals_cli.runner.models_matrix import PreparedModels
    from evals_cli.runner.prepare import PreparedRun


def exports_asked(values: list[str] | None, junit: Path | None, task_results: Path | None) -> dict[str, Path]:
    """format -> path of every export asked for (`--export FORMAT=PATH`, and --junit / --task-results, its older
    spellings), checked before anything runs; the exporters are imported only when one is asked for."""
    if not (values or junit or task_results):
        return {}
    from evals_cli.exporters import parse_exports, requested_exports

    return requested_exports(parse_exports(values or []), junit=junit, task_results=task_results)


def run_live(prepared: PreparedRun, suite: Path, quiet: bool, exports: dict[str, Path]) -> int:
    """Execute with the live progress view, then the table, the messages and the exports; the exit code."""
    import asyncio

    from evals_cli.display.state import RunState
    from evals_cli.models.results import SampleResult
    from evals_cli.runner.execution import Execution
    from evals_cli.shutdown import settle_heap

    state = RunState(list(prepared.graders), total_expected=prepared.expected, repeats=prepared.repeats)
    execution = Execution(prepared, None)  # the view watches its samples in flight and hears Ctrl-C at once
    live: LiveProgress | QuietProgress
    view: Console | None = None  # the table's console; none in a quiet run
    if quiet:  # a line or two of plain text: no Rich console, no progress view (display/plain.py)
        from evals_cli.display.plain import PlainConsole, QuietProgress

        plain_err = PlainConsole(stderr=True)
        err: Console | PlainConsole = plain_err
        live = QuietProgress(plain_err)
    else:
        from evals_cli.display.console import make_console
        from evals_cli.display.live import LiveProgress

        view, err = make_console(), make_console(stderr=True)
        live = LiveProgress(view, state, enabled=True, in_flight=execution.in_flight,
                            resumed=lambda: execution.resumed, err=err)

    def on_result(result: SampleResult) -> None:
        state.add(result)
        live.update()

    execution.on_result, execution.on_interrupt = on_result, live.interrupted
    prepared.pool.load_sdk()  # imported now, it is settled with the rest
    settle_heap()  # everything prepared lives to the end: out of the collector's sight
    with live:
        outcome = asyncio.run(execution.run())
    summary = outcome.summary
    if view is None:
        PlainConsole().print(summary.gate.message if summary.gate else "no gate", markup=False)
    else:
        from evals_cli.display.table import render_run

        view.print(render_run(state, summary, outcome.output_dir), crop=False)  # commands stay whole
        print_conversation_notes(view, state)
        view.print(f"results: {outcome.output_dir}", markup=False, highlight=False, soft_wrap=True)
    print_errors(err, outcome.messages)
    cov = summary.coverage
    if summary.status != "completed" and cov is not None and cov.expected_results is not None \
            and summary.total < cov.expected_results:  # samples were left unrun: say how to run them
        from evals_cli.runner.started_with import resume_command

        err.print(f"to finish the run: {resume_command(suite, outcome.output_dir)}",
                  markup=False, highlight=False, soft_wrap=True)
    elif summary.status == "aborted" and summary.errored and not prepared.target.replaces_results:
        # every sample ran, too many errored: retry those (a run of recorded sessions has no resume: run it again)
        from evals_cli.runner.started_with import resume_command

        err.print(f"to retry the errored samples: {resume_command(suite, outcome.output_dir, retry_errors=True)}",
                  markup=False, highlight=False, soft_wrap=True)
    if exports:
        from evals_cli.exporters import export_run

        try:
            export_run(outcome.output_dir, summary, exports=exports, threshold=prepared.suite.gate.sample_value)
        except OSError as exc:  # the run is saved; only the export is not: say which file, keep the run's code
            where = exc.filename or ", ".join(map(str, exports.values()))
            err.print(f"error: could not write {where} ({exc.strerror or type(exc).__name__}); the run is saved in "
                      f"{outcome.output_dir}", markup=False, highlight=False, soft_wrap=True)
            return outcome.exit_code if outcome.exit_code != 0 else EXIT_INCOMPLETE
    return outcome.exit_code


def run_models(prepared: PreparedModels, suite: Path, quiet: bool, html: Path | None) -> int:
    """Every model at once with one progress view (samples named `model / sample`), then the side-by-side table,
    each model's messages, the HTML report when asked for, and the combined exit code."""
    import asyncio

    from evals_cli.display.console import make_console
    from evals_cli.display.live import LiveProgress
    from evals_cli.display.matrix import render_matrix
    from evals_cli.display.state import RunState
    from evals_cli.matrix_report import write_matrix_html
    from evals_cli.models.results import SampleResult
    from evals_cli.report import load_matrix
    from evals_cli.runner.execution import Execution
    from evals_cli.runner.models_matrix import ModelsExecution
    from evals_cli.shutdown import settle_heap

    console = make_console()
    err = make_console(stderr=True)
    for warning in prepared.warnings:
        err.print(f"warning: {warning}", markup=False, highlight=False, soft_wrap=True)
    graders = list(next(iter(prepared.runs.values())).graders)
    state = RunState(graders, total_expected=prepared.expected, repeats=next(iter(prepared.runs.values())).repeats)
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
    gate = outcome.summary.gate
    if quiet:
        console.print(gate.message if gate else "no gate", markup=False)
    else:
        console.print(render_matrix(view, str(outcome.output_dir), reasons=False))  # stderr says them
        console.print(f"results: {outcome.output_dir}", markup=False, highlight=False, soft_wrap=True)
    print_errors(err, outcome.messages)
    unfinished = [m for m, o in outcome.outcomes.items() if o.summary.status != "completed"]
    if unfinished:
        from evals_cli.runner.started_with import resume_command

        retry = any(outcome.outcomes[m].summary.errored for m in unfinished)
        err.print(f"to finish the run ({', '.join(unfinished)}): "
                  f"{resume_command(suite, outcome.output_dir, retry_errors=retry)}",
                  markup=False, highlight=False, soft_wrap=True)
    if html is not None:
        from evals_cli.exporters.html import write_run_html

        try:
            write_matrix_html(view, html, write_run_html)
        except ConfigError as exc:  # the run is saved; only the report is not: keep the run's code unless it passed
            err.print(f"error: {exc.problems[0]}; the run is saved in {outcome.output_dir}", markup=False,
                      highlight=False, soft_wrap=True)
            return outcome.exit_code if outcome.exit_code != 0 else EXIT_INCOMPLETE
    return outcome.exit_code


def print_conversation_notes(console: Any, state: Any) -> None:
    """Goal completion (turns to success) and --replay-user divergence, under the table."""
    from evals_cli.report import conversation_notes

    for line in conversation_notes(state):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
