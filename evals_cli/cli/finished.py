"""A finished (or killed) run on the terminal, read back from its folder: the table of a run, the sessions view
of recorded sessions, the side-by-side view of several models, each with its warnings and, when asked for, its
HTML report (`evals report`); and the run `evals merge` wrote. The reading is report.py's, the rendering
display/'s and sessions/render.py's; this module is imported when one of those commands runs."""

from __future__ import annotations

from pathlib import Path

from evals_cli.cli.printing import conversation_notes, warn
from evals_cli.display.console import make_console
from evals_cli.display.matrix import render_matrix
from evals_cli.display.table import render_run
from evals_cli.display.why import WholeReasons
from evals_cli.exporters.html import write_html, write_run_html
from evals_cli.exporters.html_sessions import write_sessions_html
from evals_cli.history.runs import newest_run
from evals_cli.matrix_report import write_matrix_html
from evals_cli.models.results import RunSummary
from evals_cli.output.files import RESULTS_NAME, read_results
from evals_cli.output.manifest import is_matrix
from evals_cli.report import load_matrix, load_run, load_sessions, run_kind
from evals_cli.sessions.render import gate_line, render_sessions
from evals_cli.sessions.view import MAX_KEPT


def report(run_path: Path, html: Path | None, why: str) -> None:
    """The run at `run_path` (or the newest under a folder of runs) shown as its kind is, its HTML report written."""
    run_path = newest_if_folder_of_runs(run_path)
    if is_matrix(run_path):  # a run over several models: the side-by-side view, read from every model's folder
        report_models(run_path, html, why)
    elif run_kind(run_path) == "sessions":
        report_sessions(run_path, html)
    else:
        report_run(run_path, html, why)


def export(run_path: Path, fmt: str, output: Path | None) -> None:
    """`evals report --format FORMAT -o FILE`: one export of the run (exporters/: inspect, junit, ...)."""
    from evals_cli.exporters import export_folder

    written, notes = export_folder(run_path, fmt, output)
    for note in notes:
        make_console(stderr=True).print(f"warning: {note}", markup=False, highlight=False, soft_wrap=True)
    make_console().print(f"{fmt}: {written}", markup=False, highlight=False, soft_wrap=True)


def newest_if_folder_of_runs(path: Path) -> Path:
    """A folder that is no run but holds runs (`results`): its newest run, said on stderr."""
    found = newest_run(path)
    if found is None:
        return path
    make_console(stderr=True).print(f"{path} holds runs, not one: reporting the newest, {found.rel} (started "
                                    f"{found.started.isoformat(timespec='minutes')}); `evals history {path}` lists "
                                    "them all",
                                    markup=False, highlight=False, soft_wrap=True)
    return found.path


def report_run(run_path: Path, html: Path | None, why: str) -> None:
    """The table of a run, its reasons whole unless `why` is short, its conversation notes and warnings."""
    console = make_console()
    state, summary, warnings = load_run(run_path)
    whole = None if why == "short" else WholeReasons(read_results(run_path), "full" if why == "full" else "all")
    console.print(render_run(state, summary, run_path, whole), crop=False)
    conversation_notes(console, state)
    warn(warnings)
    if html is not None:
        write_html(read_results(run_path), summary, html, notes=warnings, run_dir=run_path)
        console.print(f"html report: {html}", markup=False, highlight=False, soft_wrap=True)


def report_sessions(run_path: Path, html: Path | None) -> None:
    """The sessions view of a run of recorded sessions (`evals analyze`, or `evals run` on such a suite)."""
    console = make_console()
    view = load_sessions(run_path)
    console.print(render_sessions(view.analyses[:MAX_KEPT], view.summary, max(len(view.analyses) - MAX_KEPT, 0)))
    console.print(gate_line(view.summary), soft_wrap=True)
    warn(view.warnings)
    if html is not None:
        write_sessions_html(view.analyses, view.summary, html, notes=view.warnings)
        console.print(f"html report: {html}", markup=False, highlight=False, soft_wrap=True)


def report_models(run_path: Path, html: Path | None, why: str = "short") -> None:
    """The side-by-side view of a run over several models; with `why`, every model's reasons whole, model by
    model."""
    console = make_console()
    view = load_matrix(run_path)
    console.print(render_matrix(view, str(run_path)))
    if why != "short":
        for run in view.matrix.models:
            if (run_path / run.folder / RESULTS_NAME).is_file():
                console.print(f"model {run.model}:", markup=False, highlight=False, style="bold")
                console.print(WholeReasons(read_results(run_path / run.folder), "full" if why == "full" else "all"))
    warn(view.warnings)
    if html is not None:
        write_matrix_html(view, html, write_run_html)
        console.print(f"html report: {html}", markup=False, highlight=False, soft_wrap=True)


def merged(runs: list[Path], output: Path, summary: RunSummary, warnings: list[str]) -> None:
    """The run `evals merge` wrote: its table, how many parts it joined, their warnings and why it stopped."""
    state, _, _ = load_run(output)
    console = make_console()
    console.print(render_run(state, summary, output), crop=False)
    console.print(f"merged {len(runs)} runs into {output}", markup=False, highlight=False, soft_wrap=True)
    warn(warnings)
    if summary.abort_reason:
        make_console(stderr=True).print(f"error: {summary.abort_reason}", markup=False, highlight=False,
                                        soft_wrap=True)


def merged_models(runs: list[Path], output: Path, warnings: list[str]) -> None:
    """The run over several models `evals merge` wrote: its side-by-side view, the parts joined, their warnings."""
    view = load_matrix(output)
    console = make_console()
    console.print(render_matrix(view, str(output)))
    console.print(f"merged {len(runs)} runs into {output}", markup=False, highlight=False, soft_wrap=True)
    warn(warnings)
