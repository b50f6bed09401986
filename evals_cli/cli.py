"""The `evals` command: parses arguments, calls one library function, renders what it returns.

Imports of the heavy parts (openai, rich.live, the runner) happen inside the commands, so `evals --help`
and `evals validate` start fast.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from evals_cli.errors import EXIT_INCOMPLETE, EXIT_INVALID, ConfigError, EvalsError

app = typer.Typer(
    name="evals",
    help="Evaluate multi-turn LLM agents from a YAML suite: mocked tools, trajectory graders, an LLM judge, "
         "a CI gate.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _fail(problems: list[str], code: int) -> NoReturn:
    from evals_cli.display.console import make_console

    err = make_console(stderr=True)
    heading = "invalid input" if code == EXIT_INVALID else "run could not complete"
    from rich.markup import escape

    first = f"{heading} ({len(problems)} problems)" if len(problems) > 1 else escape(problems[0])
    err.print(f"[bold red]error[/]: {first}", markup=True, highlight=False, soft_wrap=True)
    if len(problems) > 1:
        for problem in problems:
            err.print(f"  - {problem}", markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def _guard(fn):  # type: ignore[no-untyped-def]
    """Our own errors become a message and an exit code; a bug shows its traceback only with EVALS_DEBUG=1."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):  # type: ignore[no-untyped-def]
        try:
            return fn(*args, **kwargs)
        except ConfigError as exc:
            _fail(exc.problems, exc.exit_code)
        except EvalsError as exc:
            _fail([str(exc)], exc.exit_code)
        except KeyboardInterrupt:  # before the run started (or after): nothing to save
            raise typer.Exit(130) from None
        except (typer.Exit, typer.Abort):
            raise
        except Exception as exc:
            if os.environ.get("EVALS_DEBUG"):
                raise
            _fail([f"internal error: {type(exc).__name__}: {exc} (set EVALS_DEBUG=1 for the traceback)"],
                  EXIT_INCOMPLETE)

    return wrapper


@app.command()
@_guard
def run(
    suite: Annotated[Path, typer.Argument(help="The suite YAML file.")],
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Output folder (default results/<suite>-<time>).")] = None,
    concurrency: Annotated[int | None, typer.Option("--concurrency", "-c", min=1, help="Samples in flight.")] = None,
    max_samples: Annotated[int | None, typer.Option("--max-samples", "-n", min=1, help="Run at most N samples.")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", "-t", help="Only samples with this tag (repeatable).")] = None,
    no_judge: Annotated[bool, typer.Option("--no-judge", help="Skip model_judge graders: no judge calls at all.")] = False,
    record: Annotated[Path | None, typer.Option("--record", help="Record every model call to this JSONL file.")] = None,
    replay: Annotated[Path | None, typer.Option("--replay", help="Serve model calls from a recording; no network.")] = None,
    base_url: Annotated[str | None, typer.Option("--base-url", help="Agent endpoint (overrides the suite).")] = None,
    model: Annotated[str | None, typer.Option("--model", help="Agent model (overrides the suite).")] = None,
    max_error_rate: Annotated[float, typer.Option("--max-error-rate", min=0, max=1, help="Exit 3 past this share of errored samples.")] = 0.2,
    repeats: Annotated[int | None, typer.Option("--repeats", "-k", min=1, help="Run every sample k times.")] = None,
    timeout: Annotated[float | None, typer.Option("--timeout", min=0.001, help="Per-request timeout in seconds.")] = None,
    sample_timeout: Annotated[float | None, typer.Option("--sample-timeout", min=0.001, help="Seconds one sample may take in all.")] = None,
    max_retries: Annotated[int | None, typer.Option("--max-retries", min=0, help="Retries on 429, 5xx, timeouts, dropped connections.")] = None,
    resume: Annotated[Path | None, typer.Option("--resume", help="Continue a run: its folder or results.jsonl.")] = None,
    retry_errors: Annotated[bool, typer.Option("--retry-errors", help="With --resume: run errored samples again.")] = False,
    grace: Annotated[float, typer.Option("--grace", min=0, help="Seconds in-flight samples get after Ctrl-C.")] = 10.0,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the gate verdict.")] = False,
) -> None:
    """Run a suite: drive the agent, grade every trajectory, print the table, exit with the gate's code."""
    import asyncio

    from evals_cli.display.console import make_console
    from evals_cli.display.live import LiveProgress
    from evals_cli.display.state import RunState
    from evals_cli.display.table import render_run
    from evals_cli.runner import PreparedRun, RunOptions, execute
    from evals_cli.suite.loader import load_suite

    if record and replay:
        raise ConfigError("--record and --replay cannot be used together")
    if resume and output:
        raise ConfigError("--resume continues the run in its own folder; drop -o/--output")
    if retry_errors and not resume:
        raise ConfigError("--retry-errors only makes sense with --resume RUN")
    if replay and not replay.is_file():
        raise ConfigError(f"{replay}: recording not found (--replay)")
    spec = load_suite(suite)
    options = RunOptions(output=output, concurrency=concurrency, max_samples=max_samples, tags=tag or None,
                         repeats=repeats, no_judge=no_judge, record=record, replay=replay, base_url=base_url,
                         model=model, timeout=timeout, sample_timeout=sample_timeout, max_retries=max_retries,
                         max_error_rate=max_error_rate, resume=resume, retry_errors=retry_errors, grace_s=grace)
    prepared = PreparedRun(spec, options)
    console = make_console()
    state = RunState(list(prepared.graders), total_expected=prepared.expected, repeats=prepared.repeats)
    with LiveProgress(console, state, enabled=not quiet) as live:
        def on_result(result):  # type: ignore[no-untyped-def]
            state.add(result)
            live.update()

        outcome = asyncio.run(execute(prepared, on_result))
    summary = outcome.summary
    if quiet:
        console.print(summary.gate.message if summary.gate else "no gate", markup=False)
    else:
        console.print(render_run(state, summary))
        console.print(f"results: {outcome.output_dir}", markup=False, highlight=False, soft_wrap=True)
    for message in outcome.messages:
        make_console(stderr=True).print(f"error: {message}", markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(outcome.exit_code)


@app.command()
@_guard
def validate(suite: Annotated[Path, typer.Argument(help="The suite YAML file.")]) -> None:
    """Check a suite, every dataset row and every rubric without calling any model; exit 2 on problems."""
    from evals_cli.validate import validate_suite

    report = validate_suite(suite)
    if report.problems:
        _fail(report.problems, EXIT_INVALID)
    assert report.suite is not None
    print(f"{suite}: ok: {report.samples} samples, {len(report.suite.graders)} graders "
          f"({', '.join(report.suite.graders)})")


@app.command()
@_guard
def report(run_path: Annotated[Path, typer.Argument(metavar="RUN", help="A results.jsonl or a run folder.")]) -> None:
    """Re-render the table of a finished (or killed) run from its results."""
    from evals_cli.display.console import make_console
    from evals_cli.display.table import render_run
    from evals_cli.report import load_run

    state, summary, warnings = load_run(run_path)
    console = make_console()
    console.print(render_run(state, summary))
    for warning in warnings:
        make_console(stderr=True).print(f"warning: {warning}", markup=False, highlight=False, soft_wrap=True)


def main() -> None:
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
