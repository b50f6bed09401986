"""`evals report` (a finished run shown again, finished.py) and `evals compare` (two runs side by side,
`evals_cli.compare`).

`evals --help` imports every command's module: what reads and renders a run is imported when the command runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evals_cli.errors import ConfigError


def report(
    run_path: Annotated[Path, typer.Argument(metavar="RUN", help="A results.jsonl or a run folder.")],
    html: Annotated[Path | None, typer.Option("--html", help="Write a self-contained HTML report here.")] = None,
    why: Annotated[str, typer.Option("--why", metavar="short|full|all", help="Reasons under the table: short (cut to fit, the default), full (every reason of every failed sample whole: judge reasoning, goal judgements), all (every sample, passing ones too, every grade's reason).")] = "short",
    fmt: Annotated[str, typer.Option("--format", metavar="FORMAT", help="table (the default): the run's table; an export format instead writes that file to -o: inspect (an inspect_ai .eval log, opened by `inspect view`), junit, task_results, html.")] = "table",
    output: Annotated[Path | None, typer.Option("-o", "--output", help="The file --format writes.")] = None,
) -> None:
    """Re-render the table of a finished (or killed) run from its results; --html writes a report file, --format
    FORMAT -o FILE one export of it. Every kind of run: `evals run` (live or on a recorded_sessions suite), `evals
    analyze`, `evals merge`."""
    if why not in ("short", "full", "all"):
        raise ConfigError(f"--why {why}: choose short (cut to fit), full (every reason of the failed samples whole) "
                          "or all (every sample's reasons, passing ones too)")
    from evals_cli.cli import finished

    if fmt != "table":
        finished.export(finished.newest_if_folder_of_runs(run_path), fmt, output)
        return
    finished.report(run_path, html, why)


def compare(
    run_a: Annotated[Path, typer.Argument(metavar="RUN_A", help="The baseline run (folder or results.jsonl).")],
    run_b: Annotated[Path, typer.Argument(metavar="RUN_B", help="The candidate run.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
    fail_on_regression: Annotated[bool, typer.Option("--fail-on-regression", help="Exit 1 when B is significantly worse.")] = False,
) -> None:
    """Per-grader and per-sample differences between two runs of a suite, with paired significance tests."""
    from evals_cli.compare import compare_runs, render_comparison
    from evals_cli.display.console import make_console

    comparison = compare_runs(run_a, run_b)
    if as_json:
        print(comparison.model_dump_json(indent=2))
    else:
        make_console().print(render_comparison(comparison))
    raise typer.Exit(1 if fail_on_regression and comparison.regression else 0)
