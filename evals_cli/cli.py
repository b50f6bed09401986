"""The `evals` command: parses arguments, calls one library function, renders what it returns.

Imports of the heavy parts (openai, rich.live, the runner) happen inside the commands, so `evals --help`
and `evals validate` start fast.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from evals_cli.errors import EXIT_INCOMPLETE, EXIT_INVALID, ConfigError, EvalsError

if TYPE_CHECKING:
    from evals_cli.runner.prepare import PreparedRun

app = typer.Typer(
    name="evals",
    help="Evaluate multi-turn LLM agents from a YAML suite: mocked tools, trajectory graders, an LLM judge, "
         "a CI gate.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _fail(problems: list[str], code: int) -> NoReturn:
    from evals_cli.display.problems import print_problems

    print_problems(problems, code)
    raise typer.Exit(code)


def _guard(fn: Callable[..., None]) -> Callable[..., None]:
    """Our own errors become a message and an exit code; a bug shows its traceback only with EVALS_DEBUG=1."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
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


TARGET_HELP = ("A YAML file with the OpenAI-compatible agent to test (a target block, or target: with optional "
               "tools: and judge:), instead of the suite's target; letta-evals suites need one.")


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
    target: Annotated[Path | None, typer.Option("--target", help=TARGET_HELP)] = None,
    junit: Annotated[Path | None, typer.Option("--junit", help="Also write JUnit XML here, one testcase per sample (= --export junit=PATH).")] = None,
    task_results: Annotated[Path | None, typer.Option("--task-results", help="Also write TaskResult JSONL here (= --export task_results=PATH).")] = None,
    export: Annotated[list[str] | None, typer.Option("--export", metavar="FORMAT=PATH", help="Also write the run as FORMAT to PATH (repeatable): junit=out/junit.xml, task_results=out/tasks.jsonl, html=out/report.html.")] = None,
    shard: Annotated[str | None, typer.Option("--shard", help="K/N: run only the K-th of N stable parts of the samples (see `evals merge`).")] = None,
    otel: Annotated[bool, typer.Option("--otel", help="Export OpenTelemetry spans (OTLP; needs the [otel] extra). Also on when OTEL_EXPORTER_OTLP_ENDPOINT is set.")] = False,
) -> None:
    """Run a suite: drive the agent, grade every trajectory, print the table, exit with the gate's code."""
    import asyncio

    from evals_cli.runner.dispatch import execute_prepared, prepare
    from evals_cli.runner.options import RunOptions
    from evals_cli.runner.prepare import PreparedRun

    options = RunOptions(output=output, concurrency=concurrency, max_samples=max_samples, tags=tag or None,
                         repeats=repeats, no_judge=no_judge, record=record, replay=replay, target_file=target,
                         base_url=base_url, model=model, timeout=timeout, sample_timeout=sample_timeout,
                         max_retries=max_retries, max_error_rate=max_error_rate, resume=resume,
                         retry_errors=retry_errors, grace_s=grace, shard=shard, otel=otel)
    exports = _exports(export, junit, task_results)  # a typo in a format must not cost a whole run
    prepared = prepare(suite, options)
    if not isinstance(prepared, PreparedRun):  # recorded sessions: no agent, its own view
        from evals_cli.sessions.cli import report as report_sessions
        from evals_cli.sessions.runner import SessionsOutcome

        if exports:
            raise ConfigError("--export, --junit and --task-results apply to live agents; a recorded_sessions suite "
                              "has none")
        outcome = asyncio.run(execute_prepared(prepared))
        assert isinstance(outcome, SessionsOutcome)
        raise typer.Exit(report_sessions(outcome, quiet=quiet))
    raise typer.Exit(_run_live(prepared, suite, quiet, exports))


def _exports(values: list[str] | None, junit: Path | None, task_results: Path | None) -> dict[str, Path]:
    """format -> path of every export asked for (`--export FORMAT=PATH`, and --junit / --task-results, its older
    spellings), checked before anything runs; the exporters are imported only when one is asked for."""
    if not (values or junit or task_results):
        return {}
    from evals_cli.exporters import parse_exports, requested_exports

    return requested_exports(parse_exports(values or []), junit=junit, task_results=task_results)


def _run_live(prepared: PreparedRun, suite: Path, quiet: bool, exports: dict[str, Path]) -> int:
    """Execute with the live progress view, then the table, the messages and the exports; the exit code."""
    import asyncio

    from evals_cli.display.console import make_console
    from evals_cli.display.live import LiveProgress
    from evals_cli.display.state import RunState
    from evals_cli.display.table import render_run
    from evals_cli.models.results import SampleResult
    from evals_cli.runner import execute

    console = make_console()
    state = RunState(list(prepared.graders), total_expected=prepared.expected, repeats=prepared.repeats)
    with LiveProgress(console, state, enabled=not quiet) as live:
        def on_result(result: SampleResult) -> None:
            state.add(result)
            live.update()

        outcome = asyncio.run(execute(prepared, on_result))
    summary = outcome.summary
    if quiet:
        console.print(summary.gate.message if summary.gate else "no gate", markup=False)
    else:
        console.print(render_run(state, summary))
        console.print(f"results: {outcome.output_dir}", markup=False, highlight=False, soft_wrap=True)
    err = make_console(stderr=True)
    for message in outcome.messages:
        err.print(f"error: {message}", markup=False, highlight=False, soft_wrap=True)
    cov = summary.coverage
    if summary.status != "completed" and cov is not None and cov.expected_results is not None \
            and summary.total < cov.expected_results:  # samples were left unrun: say how to run them
        err.print(f"to finish the run: evals run {suite} --resume {outcome.output_dir}",
                  markup=False, highlight=False, soft_wrap=True)
    elif summary.status == "aborted" and summary.errored:  # every sample ran, too many errored: retry those
        err.print(f"to retry the errored samples: evals run {suite} --resume {outcome.output_dir} --retry-errors",
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


@app.command()
@_guard
def validate(
    suite: Annotated[Path, typer.Argument(help="The suite YAML file.")],
    target: Annotated[Path | None, typer.Option("--target", help=TARGET_HELP)] = None,
) -> None:
    """Check a suite, every dataset row and every rubric without calling any model; exit 2 on problems."""
    from evals_cli.suite.loader import TargetOverride
    from evals_cli.validate import validate_suite

    report = validate_suite(suite, TargetOverride(file=target))
    if report.problems:
        _fail(report.problems, EXIT_INVALID)
    print(f"{suite}: ok: {report.samples} samples, {len(report.graders)} graders ({', '.join(report.graders)})")


@app.command()
@_guard
def report(
    run_path: Annotated[Path, typer.Argument(metavar="RUN", help="A results.jsonl or a run folder.")],
    html: Annotated[Path | None, typer.Option("--html", help="Write a self-contained HTML report here.")] = None,
) -> None:
    """Re-render the table of a finished (or killed) run from its results; --html writes a report file."""
    from evals_cli.display.console import make_console
    from evals_cli.display.table import render_run
    from evals_cli.report import load_run

    state, summary, warnings = load_run(run_path)
    console = make_console()
    console.print(render_run(state, summary))
    for warning in warnings:
        make_console(stderr=True).print(f"warning: {warning}", markup=False, highlight=False, soft_wrap=True)
    if html is not None:
        from evals_cli.exporters import write_html
        from evals_cli.output.files import read_results

        write_html(read_results(run_path), summary, html, notes=warnings)
        console.print(f"html report: {html}", markup=False, highlight=False, soft_wrap=True)


@app.command()
@_guard
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


@app.command()
@_guard
def analyze(
    path: Annotated[Path, typer.Argument(help="Session file: JSONL, or JSON (one session or a list).")],
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Output folder (default results/analyze-<file>-<time>).")] = None,
    judge_model: Annotated[str | None, typer.Option("--judge-model", help="Judge model (else EVAL_JUDGE_MODEL; none: deterministic only).")] = None,
    judge_base_url: Annotated[str | None, typer.Option("--judge-base-url", help="Judge endpoint (else EVAL_JUDGE_BASE_URL).")] = None,
    no_judge: Annotated[bool, typer.Option("--no-judge", help="Deterministic metrics only: no judge calls.")] = False,
    concurrency: Annotated[int, typer.Option("--concurrency", "-c", min=1, help="Sessions analysed at once.")] = 4,
    record: Annotated[Path | None, typer.Option("--record", help="Record every judge call to this JSONL file.")] = None,
    replay: Annotated[Path | None, typer.Option("--replay", help="Serve judge calls from a recording; no network.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print every analysis and the summary as one JSON document.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the gate verdict.")] = False,
    judge_confirms: Annotated[str, typer.Option("--judge-confirms", metavar="on|off", help="on: the turn judge may "
                                                "overrule a deterministic detection (kept, marked overruled_by_judge); "
                                                "off: deterministic detections are final.")] = "on",
) -> None:
    """Analyse recorded multi-agent sessions at session, turn and agent level; exit with the gate's code."""
    from evals_cli.sessions.cli import analyze_command

    if judge_confirms not in ("on", "off"):
        raise ConfigError(f"--judge-confirms takes on or off, not {judge_confirms!r}")
    raise typer.Exit(analyze_command(path, output, judge_model=judge_model, judge_base_url=judge_base_url,
                                     no_judge=no_judge, json_out=json_out, quiet=quiet, concurrency=concurrency,
                                     record=record, replay=replay, judge_confirms=judge_confirms == "on"))


@app.command()
@_guard
def merge(
    runs: Annotated[list[Path], typer.Argument(metavar="RUN...", help="The result folders of the shards.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="The merged run's folder (new).")],
    max_error_rate: Annotated[float, typer.Option("--max-error-rate", min=0, max=1, help="Exit 3 past this share of errored samples.")] = 0.2,
    junit: Annotated[Path | None, typer.Option("--junit", help="Also write JUnit XML of the merged run.")] = None,
    task_results: Annotated[Path | None, typer.Option("--task-results", help="Also write TaskResult JSONL (= --export task_results=PATH).")] = None,
    export: Annotated[list[str] | None, typer.Option("--export", metavar="FORMAT=PATH", help="Also write the run as FORMAT to PATH (repeatable): junit=out/junit.xml, task_results=out/tasks.jsonl, html=out/report.html.")] = None,
) -> None:
    """Join the result folders of `evals run --shard K/N` jobs into one run, one summary, one gate verdict."""
    from evals_cli.display.console import make_console
    from evals_cli.display.table import render_run
    from evals_cli.output.merge import merge_runs
    from evals_cli.report import load_run

    exports = _exports(export, junit, task_results)
    summary, warnings = merge_runs(runs, output, max_error_rate)
    state, _, _ = load_run(output)
    console = make_console()
    console.print(render_run(state, summary))
    console.print(f"merged {len(runs)} runs into {output}", markup=False, highlight=False, soft_wrap=True)
    for warning in warnings:
        make_console(stderr=True).print(f"warning: {warning}", markup=False, highlight=False, soft_wrap=True)
    if summary.abort_reason:
        make_console(stderr=True).print(f"error: {summary.abort_reason}", markup=False, highlight=False,
                                        soft_wrap=True)
    if exports:
        from evals_cli.exporters import export_run

        export_run(output, summary, exports=exports)
    raise typer.Exit(summary.exit_code)


@app.command()
@_guard
def init(
    folder: Annotated[Path, typer.Argument(metavar="FOLDER", help="Where to write the suite; created when missing (default: here).")] = Path("."),
    force: Annotated[bool, typer.Option("--force", help="Replace files of the same names that already exist.")] = False,
) -> None:
    """Scaffold a starter suite (tools, graders, judge rubric, gate, Makefile) and a recording to replay offline."""
    from evals_cli.scaffold import FILES, next_commands, scaffold

    result = scaffold(folder, force=force)
    where = f"{folder} (created)" if result.created_folder else str(folder)
    lines = [f"wrote {len(result.written)} files to {where}:"]
    width = max(len(str(path)) for path in result.written)
    lines += [f"  {str(path):<{width}}  {FILES[path.name]}" for path in result.written]
    lines += ["", "next:"]
    for command, why in next_commands(folder):
        lines += [f"  # {why}", f"  {command}"] if why else [f"  {command}"]
    print("\n".join(lines))


LISTABLE = ("graders", "extractors", "targets", "gates")


@app.command("list")
@_guard
def list_kinds(
    what: Annotated[str | None, typer.Argument(metavar="WHAT", help="graders, extractors, targets or gates "
                                                                        "(default: all four).")] = None,
) -> None:
    """List every registered grader, extractor, target and gate kind with its options, from the schemas."""
    import shutil

    if what is not None and what not in LISTABLE:
        import difflib

        hint = difflib.get_close_matches(what, LISTABLE, n=1)
        more = f"did you mean '{hint[0]}'? " if hint else ""
        raise ConfigError(f"cannot list '{what}'; {more}choose one of: {', '.join(LISTABLE)}")
    width = max(60, min(shutil.get_terminal_size((100, 24)).columns, 120))
    sections = [what] if what else list(LISTABLE)
    from evals_cli.catalog import render_section

    text = "\n\n".join(render_section(name, width) for name in sections)
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:  # `evals list | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def main() -> None:
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
