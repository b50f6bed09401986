"""`evals analyze`, and a recorded-sessions suite run the way it runs one, from Python or a test as from the
command: the suite built (`sessions.cli.analyze_suite`, or any sessions document), run (`evals_cli.runner.run_sessions`),
printed (`sessions.cli.report`: `--json`, `-q` or the Rich view) and its HTML report written when asked for; the
exit code returned, problems printed the way every command prints them. The HTML writer is imported only when
a report is asked for."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from evals_cli.display.problems import print_problems
from evals_cli.errors import EXIT_INVALID, ConfigError
from evals_cli.output.files import RESULTS_NAME, default_output_dir
from evals_cli.runner import run_sessions  # the runner's entry point (dispatch.py)
from evals_cli.sessions.cli import analyze_suite, report, sessions_document

if TYPE_CHECKING:  # annotations only
    from evals_cli.run_options import RunOptions
    from evals_cli.sessions.suite import SessionsSuiteSpec
    from evals_cli.suite.spec import SuiteSpec


def analyze_command(path: Path, output: Path | None = None, *, json_out: bool = False, quiet: bool = False,
                    html: Path | None = None, **settings: Any) -> int:
    """`evals analyze PATH`: the suite `analyze_suite` builds from PATH and `settings` (judge_model,
    judge_base_url, judge_api_key, no_judge, concurrency, record, replay, timeout, max_error_rate,
    judge_confirms, input_format), run and printed; with `html`, the report written from the run's folder (a
    default folder chosen first when `output` is not given, and removed again when nothing was written)."""
    made = None
    if html is not None and output is None:  # the report needs to know which folder the run wrote
        output = made = default_output_dir(f"analyze-{Path(path).stem}")
    try:
        suite, options = analyze_suite(Path(path), output, quiet=quiet, **settings)
        outcome = run_sessions(suite, options)
    except ConfigError as exc:
        print_problems(exc.problems)
        code = EXIT_INVALID
    else:
        code = report(outcome, json_out=json_out, quiet=quiet)
    if html is not None and output is not None:
        _html_report(output, made, html, json_out=json_out, quiet=quiet)
    return code


def _html_report(output: Path, made: Path | None, html: Path, *, json_out: bool, quiet: bool) -> None:
    """The sessions report of the run in `output`; none for a run refused before it wrote anything, whose
    default folder (`made`) is left behind only if something is in it."""
    if (output / RESULTS_NAME).is_file():
        from evals_cli.display.console import make_console
        from evals_cli.exporters.html_sessions import write_sessions_html
        from evals_cli.report import load_sessions

        view = load_sessions(output)
        write_sessions_html(view.analyses, view.summary, html, notes=view.warnings)
        if not quiet:  # stdout stays one JSON document with --json
            make_console(stderr=json_out).print(f"html report: {html}", markup=False, highlight=False,
                                                soft_wrap=True)
    elif made is not None and not any(made.iterdir()):
        made.rmdir()  # refused before anything was written (exit 2): leave no empty folder behind


def run_sessions_suite(suite: SessionsSuiteSpec | SuiteSpec | str | Path, options: RunOptions | None = None, *,
                       quiet: bool = False, json_out: bool = False) -> int:
    """A recorded_sessions suite run and printed as `evals analyze` prints it (the exit code returned). `suite`: a
    SessionsSuiteSpec, the suite file's path, or a SuiteSpec carrying a RecordedSessionsTarget; `options`: the
    `RunOptions` of the run (agent-only ones are refused, exit 2)."""
    try:
        outcome = run_sessions(sessions_document(suite), options)
    except ConfigError as exc:
        print_problems(exc.problems)
        return EXIT_INVALID
    return report(outcome, json_out=json_out, quiet=quiet)
