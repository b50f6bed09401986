"""`evals validate`: each suite checked as `evals run` would start it (`runner.plan.validate_suite`), without
calling any model; one suite's problems, or one line per suite of several, and exit 2 on problems.

`evals --help` imports every command's module: the checks (the suite's models, the runner) are imported when
the command runs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from evals_cli.cli.guard import fail
from evals_cli.cli.options import TARGET_HELP
from evals_cli.cli.printing import notes
from evals_cli.errors import EXIT_INVALID, ConfigError

if TYPE_CHECKING:  # annotations only
    from evals_cli.run_options import RunOptions
    from evals_cli.suite.loader import TargetOverride


def validate(
    suites: Annotated[list[Path] | None, typer.Argument(metavar="SUITE", show_default=False, help="Suite YAML files (default: suite.yaml or evals.yaml in this folder); each is checked on its own.")] = None,
    target: Annotated[Path | None, typer.Option("--target", help=TARGET_HELP)] = None,
    base_url: Annotated[str | None, typer.Option("--base-url", help="Agent endpoint (overrides the suite), as for run.")] = None,
    model: Annotated[str | None, typer.Option("--model", help="Agent model (overrides the suite), as for run; with --base-url alone, the endpoint's only model.")] = None,
    import_code: Annotated[bool, typer.Option("--import-code", help="Also import the suite's Python files (custom extractors, graders, rewards, a python agent) to check their signatures, as run does; without it they are only read, never run.")] = False,
    no_judge: Annotated[bool, typer.Option("--no-judge", help="Check the suite as run --no-judge runs it: no judge model is needed.")] = False,
    judge_model: Annotated[str | None, typer.Option("--judge-model", help="Judge model (overrides the suite), as for run.")] = None,
) -> None:
    """Check suites, every dataset row and every rubric without calling any model; exit 2 on problems."""
    from evals_cli.run_options import RunOptions
    from evals_cli.runner.plan import default_suite
    from evals_cli.suite.loader import TargetOverride

    override = TargetOverride(file=target, base_url=base_url, model=model)
    judging = RunOptions(no_judge=no_judge, judge_model=judge_model)  # a run --no-judge needs no judge model
    paths = list(suites or []) or [default_suite()]
    if len(paths) == 1:
        _validate_one(paths[0], override, judging, import_code)
    else:
        _validate_many(paths, override, judging, import_code)


def _validate_one(path: Path, override: TargetOverride, judging: RunOptions, import_code: bool) -> None:
    """Its problems as every command prints them (exit 2), or its one line."""
    from evals_cli.runner.plan import validate_suite

    report = validate_suite(path, override, judging, import_code=import_code)
    notes(report.notes)
    if report.problems:
        fail(report.problems, EXIT_INVALID)
    print(_validated(path, report.samples, report.graders))


def _validate_many(paths: list[Path], override: TargetOverride, judging: RunOptions, import_code: bool) -> None:
    """One line per suite on stdout; the problems of each on stderr, prefixed by its path; exit 2 if any has."""
    from evals_cli.display.console import make_console
    from evals_cli.runner.plan import validate_suite

    err = make_console(stderr=True)
    failed = 0
    for path in paths:
        try:
            report = validate_suite(path, override, judging, import_code=import_code)
            problems = report.problems
            notes(report.notes)
        except ConfigError as exc:
            problems = exc.problems
        if not problems:
            print(_validated(path, report.samples, report.graders), flush=True)
            continue
        failed += 1
        print(f"{path}: {len(problems)} problem{'s' if len(problems) != 1 else ''}", flush=True)
        for problem in problems:
            shown = problem if problem.startswith(str(path)) else f"{path}: {problem}"
            err.print(f"error: {shown}", markup=False, highlight=False, soft_wrap=True)
    if failed:
        err.print(f"{failed} of {len(paths)} suites have problems", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_INVALID)


def _validated(path: Path, samples: int, graders: list[str]) -> str:
    return f"{path}: ok: {samples} samples, {len(graders)} graders ({', '.join(graders)})"
