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

from evals_cli import cli_run, cli_watch
from evals_cli.cli_app import EvalsApp, EvalsGroup
from evals_cli.errors import EXIT_INCOMPLETE, EXIT_INVALID, ConfigError, EvalsError

if TYPE_CHECKING:  # annotations only
    from evals_cli.run_options import RunOptions
    from evals_cli.sessions.suite import SessionsSuiteSpec
    from evals_cli.suite.spec import SuiteSpec

app = EvalsApp(
    name="evals",
    help="Evaluate multi-turn LLM agents from a YAML suite: mocked tools, trajectory graders, an LLM judge, "
         "a CI gate.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=EvalsGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(value: bool) -> None:
    if value:
        from evals_cli import __version__

        print(f"evals {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[bool, typer.Option("--version", "-V", callback=_print_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    pass


def _fail(problems: list[str], code: int) -> NoReturn:
    from evals_cli.display.problems import print_problems

    print_problems(problems, code)
    raise typer.Exit(code)


def _guard(fn: Callable[..., None]) -> Callable[..., None]:
    """Our own errors become a message and an exit code; a bug shows its traceback only with EVALS_DEBUG=1."""
    import functools

    from evals_cli.custom_code import EXIT_GUARD

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        try:
            with EXIT_GUARD:  # the suite's code cannot exit for us, even from a thread it left running
                _check_settings()
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
            if _debug():
                raise
            from evals_cli.registry import blamed_plugin

            blamed = blamed_plugin(exc)  # an installed plug-in's own code: exit 2 naming it, not ours to own
            if blamed is not None:
                _fail([blamed], EXIT_INVALID)
            _fail([f"internal error: {type(exc).__name__}: {exc} (set EVALS_DEBUG=1 for the traceback)"],
                  EXIT_INCOMPLETE)

    return wrapper


def _check_settings() -> None:
    """A bad EVALS_* value is exit 2 naming it, before the command does anything. Only EVALS_* variables have a
    type that can be wrong (the others are text): without one set, the settings model is not even imported."""
    if any(name.startswith("EVALS_") for name in os.environ):
        from evals_cli.settings import check

        check()


def _debug() -> bool:
    from evals_cli.settings import knob

    try:
        return bool(knob("debug"))
    except ConfigError:
        return False


TARGET_HELP = ("A YAML file with the OpenAI-compatible agent to test (a target block, or target: with optional "
               "tools: and judge:), instead of the suite's target; letta-evals suites need one.")


@app.command()
@_guard
def run(
    suite: Annotated[Path | None, typer.Argument(metavar="SUITE", show_default=False, help="The suite YAML file (default: suite.yaml or evals.yaml in this folder).")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Output folder (default results/<suite>-<time>).")] = None,
    concurrency: Annotated[int | None, typer.Option("--concurrency", "-c", min=1, help="Samples in flight.")] = None,
    max_samples: Annotated[int | None, typer.Option("--max-samples", "-n", min=1, help="Run at most N samples.")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", "-t", help="Only samples with this tag (repeatable).")] = None,
    sample_id: Annotated[list[str] | None, typer.Option("--sample-id", metavar="ID", help="Only this sample: an id or a glob such as 'refund-*' (repeatable); one that matches no sample is an error.")] = None,
    rerun_failed: Annotated[Path | None, typer.Option("--rerun-failed", metavar="RUN", help="Run only the samples that failed or errored (in any repeat) in an earlier run (its folder or results.jsonl), as a new run.")] = None,
    no_judge: Annotated[bool, typer.Option("--no-judge", help="Skip model_judge graders: no judge calls at all.")] = False,
    record: Annotated[Path | None, typer.Option("--record", help="Record every model call to this JSONL file.")] = None,
    replay: Annotated[Path | None, typer.Option("--replay", help="Serve model calls from a recording; no network.")] = None,
    cache: Annotated[Path | None, typer.Option("--cache", metavar="FILE", help="Serve every model call this file already holds and call (and add) the rest: a rerun of an unchanged suite calls no model; the summary counts hits and misses.")] = None,
    base_url: Annotated[str | None, typer.Option("--base-url", help="Agent endpoint (overrides the suite).")] = None,
    model: Annotated[list[str] | None, typer.Option("--model", metavar="MODEL", help="Agent model (overrides the suite); NAME@URL runs it on its own endpoint (over --base-url); repeat it to run the whole suite once per model, side by side, each into its own subfolder.")] = None,
    gate: Annotated[str | None, typer.Option("--gate", metavar="all|any", show_default=False, help="With several models: all (exit 0 only when every model passes its gate; the default) or any (when at least one does).")] = None,
    judge_model: Annotated[str | None, typer.Option("--judge-model", help="Judge model for every model_judge grader (over the graders' own model, the suite's judge block and EVAL_JUDGE_MODEL).")] = None,
    judge_base_url: Annotated[str | None, typer.Option("--judge-base-url", help="Judge endpoint (over the graders' own base_url, the judge block and EVAL_JUDGE_BASE_URL).")] = None,
    judge_api_key: Annotated[str | None, typer.Option("--judge-api-key", help="Judge API key (over the graders' own, the judge block and EVAL_JUDGE_API_KEY).")] = None,
    max_error_rate: Annotated[float | None, typer.Option("--max-error-rate", min=0, max=1, show_default=False, help="Exit 3 past this share of errored samples (default 0.2; a resume keeps the run's).")] = None,
    repeats: Annotated[int | None, typer.Option("--repeats", "-r", min=1, help="Run every sample N times (pass@k, pass^k); gate.reducer makes a sample's N runs one sample before the gate.")] = None,
    keyword: Annotated[str | None, typer.Option("-k", hidden=True)] = None,
    timeout: Annotated[float | None, typer.Option("--timeout", min=0.001, help="Per-request timeout in seconds.")] = None,
    sample_timeout: Annotated[float | None, typer.Option("--sample-timeout", min=0, help="Seconds one sample may take in all (default 600; 0: no limit).")] = None,
    max_retries: Annotated[int | None, typer.Option("--max-retries", min=0, help="Retries on 429, 5xx, timeouts, dropped connections.")] = None,
    resume: Annotated[Path | None, typer.Option("--resume", help="Continue a run: its folder or results.jsonl.")] = None,
    retry_errors: Annotated[bool, typer.Option("--retry-errors", help="With --resume: run errored samples again.")] = False,
    grace: Annotated[float, typer.Option("--grace", min=0, help="Seconds in-flight samples get after Ctrl-C.")] = 10.0,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the gate verdict.")] = False,
    target: Annotated[Path | None, typer.Option("--target", help=TARGET_HELP)] = None,
    junit: Annotated[Path | None, typer.Option("--junit", help="Also write JUnit XML here, one testcase per sample (= --export junit=PATH).")] = None,
    task_results: Annotated[Path | None, typer.Option("--task-results", help="Also write TaskResult JSONL here (= --export task_results=PATH).")] = None,
    export: Annotated[list[str] | None, typer.Option("--export", metavar="FORMAT=PATH", help="Also write the run as FORMAT to PATH (repeatable): junit=out/junit.xml, task_results=out/tasks.jsonl, html=out/report.html.")] = None,
    shard: Annotated[str | None, typer.Option("--shard", help="K/N: run only the K-th of N stable parts of the samples (see `evals merge`); auto: the part the environment names (JOB_COMPLETION_INDEX and JOB_COMPLETIONS of a Kubernetes indexed Job, EVALS_SHARD_INDEX and EVALS_SHARD_TOTAL, or GitLab's CI_NODE_INDEX and CI_NODE_TOTAL).")] = None,
    replay_user: Annotated[Path | None, typer.Option("--replay-user", metavar="RUN", help="Replay the user messages of a finished run with simulated users (its folder or results.jsonl) while the agent stays on the recorded path; compare two agent versions with the same user.")] = None,
    on_divergence: Annotated[str | None, typer.Option("--on-divergence", metavar="continue|stop", help="With --replay-user, when the agent's turn differs from the recorded one: continue (default: the user simulator takes over) or stop (the conversation ends, marked diverged).")] = None,
    otel: Annotated[bool, typer.Option("--otel", help="Export OpenTelemetry spans (OTLP; needs the \\[otel] extra). Also on when OTEL_EXPORTER_OTLP_ENDPOINT is set.")] = False,
    since: Annotated[str | None, typer.Option("--since", metavar="WHEN", help="A traces target: only conversations that started at or after WHEN (ISO 8601 date or date-time, UTC unless it names a zone).")] = None,
    until: Annotated[str | None, typer.Option("--until", metavar="WHEN", help="A traces target: only conversations that started before WHEN.")] = None,
) -> None:
    """Run a suite: drive the agent, grade every trajectory, print the table, exit with the gate's code."""
    from evals_cli.run_options import NothingToRun, RunOptions
    from evals_cli.runner.dispatch import default_suite, prepare

    if keyword is not None:  # pytest's -k is a keyword filter; here it was once --repeats: say which is which
        raise ConfigError(f"-k {keyword}: evals run has no -k; to run every sample N times use --repeats N (-r N), "
                          "to pick samples use --sample-id ID (globs such as 'refund-*' work)")
    if on_divergence is not None and on_divergence not in ("continue", "stop"):
        raise ConfigError(f"--on-divergence {on_divergence}: choose continue (the user simulator takes over) or stop "
                          "(the conversation ends, marked diverged)")
    if gate is not None and gate not in ("all", "any"):
        raise ConfigError(f"--gate {gate}: choose all (every model must pass its gate) or any (at least one)")
    suite = suite if suite is not None else default_suite()
    one_model = model[0] if model and len(model) == 1 else None
    options = RunOptions(output=output, concurrency=concurrency, max_samples=max_samples, tags=tag or None,
                         sample_ids=sample_id or None, rerun_failed=rerun_failed,
                         repeats=repeats, no_judge=no_judge, record=record, replay=replay, cache=cache, target_file=target,
                         base_url=base_url, model=one_model, models=model if model and len(model) > 1 else None,
                         judge_model=judge_model, judge_base_url=judge_base_url,
                         judge_api_key=judge_api_key, timeout=timeout, sample_timeout=sample_timeout,
                         max_retries=max_retries, resume=resume,
                         retry_errors=retry_errors, grace_s=grace, shard=shard, otel=otel,
                         replay_user=replay_user, on_divergence=on_divergence, since=since, until=until,
                         **{k: v for k, v in (("max_error_rate", max_error_rate), ("gate", gate)) if v is not None})
    exports = cli_run.exports_asked(export, junit, task_results)  # a typo in a format must not cost a whole run
    try:
        prepared = prepare(suite, options)
    except NothingToRun as done:  # --rerun-failed of a run where nothing failed: say so, run nothing
        print(str(done))
        raise typer.Exit(0) from None
    from evals_cli.runner.models_matrix import PreparedModels

    if isinstance(prepared, PreparedModels):  # several models: one run each, one side-by-side view
        other = sorted(set(exports) - {"html"})
        if other:
            raise ConfigError(f"--export {', '.join(other)} (or --junit, --task-results) with several models: not "
                              "supported; export each model's folder afterwards, or run one --model (--export "
                              "html=PATH writes the side-by-side report)")
        raise typer.Exit(cli_run.run_models(prepared, suite, quiet, exports.get("html")))
    raise typer.Exit(cli_run.run_live(prepared, suite, quiet, exports))


@app.command()
@_guard
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
    from evals_cli.runner.dispatch import default_suite
    from evals_cli.runner.validate import validate_suite
    from evals_cli.suite.loader import TargetOverride

    override = TargetOverride(file=target, base_url=base_url, model=model)
    judging = RunOptions(no_judge=no_judge, judge_model=judge_model)  # a run --no-judge needs no judge model
    paths = list(suites or []) or [default_suite()]
    if len(paths) == 1:
        report = validate_suite(paths[0], override, judging, import_code=import_code)
        _notes(report.notes)
        if report.problems:
            _fail(report.problems, EXIT_INVALID)
        print(_validated(paths[0], report.samples, report.graders))
        return
    from evals_cli.display.console import make_console

    err = make_console(stderr=True)
    failed = 0
    for path in paths:  # one line per suite; the problems of each on stderr, prefixed by its path
        try:
            report = validate_suite(path, override, judging, import_code=import_code)
            problems = report.problems
            _notes(report.notes)
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


def _notes(notes: list[str], prefix: str = "note: ") -> None:
    """Lines for stderr, as they are (not Rich markup): deprecated names a suite or its rows use, never a problem
    (exit 0 stays 0); with `prefix` "", what evals generate says of each row it dropped."""
    if notes:
        from evals_cli.display.console import make_console

        err = make_console(stderr=True)
        for note in notes:
            err.print(f"{prefix}{note}", markup=False, highlight=False, soft_wrap=True)


def _validated(path: Path, samples: int, graders: list[str]) -> str:
    return f"{path}: ok: {samples} samples, {len(graders)} graders ({', '.join(graders)})"


@app.command()
@_guard
def report(
    run_path: Annotated[Path, typer.Argument(metavar="RUN", help="A results.jsonl or a run folder.")],
    html: Annotated[Path | None, typer.Option("--html", help="Write a self-contained HTML report here.")] = None,
    why: Annotated[str, typer.Option("--why", metavar="short|full|all", help="Reasons under the table: short (cut to fit, the default), full (every reason of every failed sample whole: judge reasoning, goal judgements), all (every sample, passing ones too, every grade's reason).")] = "short",
) -> None:
    """Re-render the table of a finished (or killed) run from its results; --html writes a report file. Every
    kind of run: `evals run` (live or on a recorded_sessions suite), `evals analyze`, `evals merge`."""
    if why not in ("short", "full", "all"):
        raise ConfigError(f"--why {why}: choose short (cut to fit), full (every reason of the failed samples whole) "
                          "or all (every sample's reasons, passing ones too)")
    from evals_cli.display.console import make_console
    from evals_cli.output.manifest import is_matrix
    from evals_cli.report import run_kind

    console = make_console()
    run_path = _newest_if_folder_of_runs(run_path)
    if is_matrix(run_path):  # a run over several models: the side-by-side view, read from every model's folder
        _report_models(run_path, html, why)
        return
    if run_kind(run_path) == "sessions":
        from evals_cli.report import load_sessions
        from evals_cli.sessions.render import gate_line, render_sessions
        from evals_cli.sessions.view import MAX_KEPT

        view = load_sessions(run_path)
        warnings = view.warnings
        console.print(render_sessions(view.analyses[:MAX_KEPT], view.summary, max(len(view.analyses) - MAX_KEPT, 0)))
        console.print(gate_line(view.summary), soft_wrap=True)
    else:
        from evals_cli.display.table import render_run
        from evals_cli.report import load_run

        state, summary, warnings = load_run(run_path)
        whole = None
        if why != "short":
            from evals_cli.display.why import WholeReasons
            from evals_cli.output.files import read_results

            whole = WholeReasons(read_results(run_path), "full" if why == "full" else "all")
        console.print(render_run(state, summary, run_path, whole), crop=False)
        cli_run.print_conversation_notes(console, state)
    for warning in warnings:
        make_console(stderr=True).print(f"warning: {warning}", markup=False, highlight=False, soft_wrap=True)
    if html is not None:
        if run_kind(run_path) == "sessions":
            from evals_cli.exporters.html_sessions import write_sessions_html

            write_sessions_html(view.analyses, view.summary, html, notes=warnings)
        else:
            from evals_cli.exporters import write_html
            from evals_cli.output.files import read_results

            write_html(read_results(run_path), summary, html, notes=warnings, run_dir=run_path)
        console.print(f"html report: {html}", markup=False, highlight=False, soft_wrap=True)


def _newest_if_folder_of_runs(path: Path) -> Path:
    """A folder that is no run but holds runs (`results`): its newest run, said on stderr."""
    from evals_cli.display.console import make_console
    from evals_cli.history.runs import newest_run

    found = newest_run(path)
    if found is None:
        return path
    make_console(stderr=True).print(f"{path} holds runs, not one: reporting the newest, {found.rel} (started "
                                    f"{found.started.isoformat(timespec='minutes')}); `evals history {path}` lists "
                                    "them all",
                                    markup=False, highlight=False, soft_wrap=True)
    return found.path


def _report_models(run_path: Path, html: Path | None, why: str = "short") -> None:
    from evals_cli.display.console import make_console
    from evals_cli.display.matrix import render_matrix
    from evals_cli.matrix_report import write_matrix_html
    from evals_cli.report import load_matrix

    console = make_console()
    view = load_matrix(run_path)
    console.print(render_matrix(view, str(run_path)))
    if why != "short":  # every model's reasons whole, model by model
        from evals_cli.display.why import WholeReasons
        from evals_cli.output.files import RESULTS_NAME, read_results

        for run in view.matrix.models:
            if (run_path / run.folder / RESULTS_NAME).is_file():
                console.print(f"model {run.model}:", markup=False, highlight=False, style="bold")
                console.print(WholeReasons(read_results(run_path / run.folder), "full" if why == "full" else "all"))
    for warning in view.warnings:
        make_console(stderr=True).print(f"warning: {warning}", markup=False, highlight=False, soft_wrap=True)
    if html is not None:
        from evals_cli.exporters.html import write_run_html

        write_matrix_html(view, html, write_run_html)
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
def label(
    run_path: Annotated[Path, typer.Argument(metavar="RUN", help="A finished run (its folder or results.jsonl).")],
    labels: Annotated[Path | None, typer.Option("--labels", help="The labels file to append to (default RUN/labels.jsonl); labelling resumes where it stopped.")] = None,
    grader: Annotated[str | None, typer.Option("--grader", help="Only this judge grader's items.")] = None,
    only: Annotated[tuple[str, Path] | None, typer.Option("--only", metavar="disagreements-of FILE", help="Only the items on which the labels in FILE disagree with the judge.")] = None,
    sample: Annotated[int | None, typer.Option("--sample", min=1, help="A random subset of N items (the same --seed draws the same items).")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the --sample draw.")] = 0,
) -> None:
    """Label the judged items of a run by keyboard (p pass, f fail, s skip, b back, n note, q quit), to calibrate its judge."""
    from evals_cli.calibration.labeller import ONLY_KINDS, run_labeller

    if only is not None and only[0] not in ONLY_KINDS:
        raise ConfigError(f"--only {only[0]}: choose {', '.join(ONLY_KINDS)} FILE")
    run_labeller(run_path, labels_path=labels, grader=grader, disagreements_of=only[1] if only else None,
                 sample=sample, seed=seed)


@app.command()
@_guard
def calibrate(
    runs: Annotated[list[Path], typer.Argument(metavar="RUN [RUN_B]", help="A finished run; with two, their judges are compared.")],
    labels: Annotated[Path | None, typer.Option("--labels", help="The labels file (default RUN/labels.jsonl, the run's labels: evals label, evals view's buttons).")] = None,
    grader: Annotated[str | None, typer.Option("--grader", help="Only this judge grader.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    pool: Annotated[list[Path] | None, typer.Option("--pool", metavar="RUN", help="Also measure the judge on this run's labels (its labels.jsonl): several runs of the same grader, rubric and judge, pooled; repeatable.")] = None,
    pool_other_judges: Annotated[bool, typer.Option("--pool-other-judges", help="Pool runs whose judge differs (rubric, model, scale, pass mark): refused without it.")] = False,
) -> None:
    """Measure a run's judge against your labels (tpr, tnr, kappa) and correct its pass rate; with two runs, compare their judges."""
    import json

    from evals_cli.display.console import make_console

    if len(runs) > 2:
        raise ConfigError(f"evals calibrate takes one run, or two to compare their judges, not {len(runs)}")
    if labels is None:
        from evals_cli.calibration.calibrate import run_labels

        labels = run_labels(runs[0])
    if len(runs) == 2 and pool:
        raise ConfigError("--pool measures one run's judge on more labels; two runs compare their judges: give one")
    if len(runs) == 2:
        from evals_cli.calibration.compare import compare_judges
        from evals_cli.calibration.render import render_judges

        comparison = compare_judges(runs[0], runs[1], labels, grader)
        if as_json:
            print(json.dumps(comparison.as_json(), indent=2))
        else:
            make_console().print(render_judges(comparison))
        return
    from evals_cli.calibration.pooling import calibrate_run
    from evals_cli.calibration.render import render_calibration

    report = calibrate_run(runs[0], labels, grader, pool or [], pool_other_judges)
    if as_json:
        print(json.dumps(report.as_json(), indent=2))
    else:
        make_console().print(render_calibration(report))


@app.command()
@_guard
def analyze(
    path: Annotated[Path, typer.Argument(help="Session file: JSONL, or JSON (one session or a list); or trace file(s): OTLP/JSON or the OpenAI Agents SDK's export, a file or a folder.")],
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Output folder (default results/analyze-<file>-<time>).")] = None,
    judge_model: Annotated[str | None, typer.Option("--judge-model", help="Judge model (else EVAL_JUDGE_MODEL; none: deterministic only).")] = None,
    judge_base_url: Annotated[str | None, typer.Option("--judge-base-url", help="Judge endpoint (else EVAL_JUDGE_BASE_URL).")] = None,
    judge_api_key: Annotated[str | None, typer.Option("--judge-api-key", help="Judge API key (else EVAL_JUDGE_API_KEY).")] = None,
    no_judge: Annotated[bool, typer.Option("--no-judge", help="Deterministic metrics only: no judge calls.")] = False,
    concurrency: Annotated[int, typer.Option("--concurrency", "-c", min=1, help="Sessions analysed at once.")] = 4,
    record: Annotated[Path | None, typer.Option("--record", help="Record every judge call to this JSONL file.")] = None,
    replay: Annotated[Path | None, typer.Option("--replay", help="Serve judge calls from a recording; no network.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print every analysis and the summary as one JSON document.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the gate verdict.")] = False,
    judge_confirms: Annotated[str, typer.Option("--judge-confirms", metavar="on|off", help="on: the turn judge may "
                                                "overrule an inferred deterministic detection, never a correction the "
                                                "user stated (kept, marked overruled_by_judge); "
                                                "off: deterministic detections are final.")] = "on",
    html: Annotated[Path | None, typer.Option("--html", help="Also write a self-contained HTML report here "
                                              "(= evals report OUTPUT --html PATH afterwards).")] = None,
    input_format: Annotated[str, typer.Option("--format", metavar="auto|sessions|otlp", help="What PATH holds: "
                                              "auto (default: a folder, or a file mostly of trace requests, is "
                                              "traces), sessions, or otlp (traces: OTLP/JSON or the Agents SDK's "
                                              "export).")] = "auto",
) -> None:
    """Analyse recorded multi-agent sessions (or traced conversations) at session, turn and agent level; exit with the gate's code."""
    if judge_confirms not in ("on", "off"):
        raise ConfigError(f"--judge-confirms takes on or off, not {judge_confirms!r}")
    made = None
    if html is not None and output is None:  # the report needs to know which folder the run wrote
        from evals_cli.output.files import default_output_dir

        output = made = default_output_dir(f"analyze-{path.stem}")
    code = analyze_command(path, output, judge_model=judge_model, judge_base_url=judge_base_url,
                           judge_api_key=judge_api_key, no_judge=no_judge, json_out=json_out, quiet=quiet, concurrency=concurrency,
                           record=record, replay=replay, judge_confirms=judge_confirms == "on",
                           input_format=input_format)
    if html is not None and output is not None:
        from evals_cli.output.files import RESULTS_NAME

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
    raise typer.Exit(code)


def analyze_command(path: Path, output: Path | None = None, *, json_out: bool = False, quiet: bool = False,
                    **settings: Any) -> int:
    """`evals analyze PATH` (and the same from Python or a test: the exit code returned, problems printed the way
    every command prints them): the suite `analyze_suite` builds from PATH and `settings` (judge_model,
    judge_base_url, judge_api_key, no_judge, concurrency, record, replay, timeout, max_error_rate,
    judge_confirms, input_format), run and printed (`--json`, `-q` or the Rich view)."""
    from evals_cli.display.problems import print_problems
    from evals_cli.runner.dispatch import run_sessions
    from evals_cli.sessions.cli import analyze_suite, report

    try:
        suite, options = analyze_suite(Path(path), output, quiet=quiet, **settings)
        outcome = run_sessions(suite, options)
    except ConfigError as exc:
        print_problems(exc.problems)
        return EXIT_INVALID
    return report(outcome, json_out=json_out, quiet=quiet)


def run_sessions_suite(suite: SessionsSuiteSpec | SuiteSpec | str | Path, options: RunOptions | None = None, *,
                       quiet: bool = False, json_out: bool = False) -> int:
    """A recorded_sessions suite run and printed as `evals analyze` prints it (the exit code returned). `suite`: a
    SessionsSuiteSpec, the suite file's path, or a SuiteSpec carrying a RecordedSessionsTarget; `options`: the
    `RunOptions` of the run (agent-only ones are refused, exit 2)."""
    from evals_cli.display.problems import print_problems
    from evals_cli.runner.dispatch import run_sessions
    from evals_cli.sessions.cli import report, sessions_document

    try:
        outcome = run_sessions(sessions_document(suite), options)
    except ConfigError as exc:
        print_problems(exc.problems)
        return EXIT_INVALID
    return report(outcome, json_out=json_out, quiet=quiet)


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
    """Join the result folders of `evals run --shard K/N` (or `--shard auto`) jobs into one run, one summary, one
    gate verdict: every part once, all cut from one plan, each holding the rows it planned and agreeing with its own
    summary (a part that does not is refused by name, with no verdict)."""
    from evals_cli.display.console import make_console
    from evals_cli.display.table import render_run
    from evals_cli.environment.excerpts import store_changes
    from evals_cli.output.merge import merge_runs
    from evals_cli.report import load_run

    exports = cli_run.exports_asked(export, junit, task_results)
    from evals_cli.output.manifest import is_matrix

    if runs and is_matrix(runs[0]):  # shards of a run over several models: merged model by model
        if exports:
            raise ConfigError("--export, --junit and --task-results with several models: not supported; export "
                              "each model's merged folder (evals report OUT/MODEL --html F)")
        raise typer.Exit(_merge_models(runs, output, max_error_rate))
    summary, warnings = merge_runs(runs, output, max_error_rate, store_changes=store_changes)
    state, _, _ = load_run(output)
    console = make_console()
    console.print(render_run(state, summary, output), crop=False)
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


def _merge_models(runs: list[Path], output: Path, max_error_rate: float) -> int:
    from evals_cli.display.console import make_console
    from evals_cli.display.matrix import render_matrix
    from evals_cli.environment.excerpts import store_changes
    from evals_cli.output.merge import merge_model_runs
    from evals_cli.report import load_matrix

    matrix, warnings = merge_model_runs(runs, output, max_error_rate, store_changes=store_changes)
    console = make_console()
    console.print(render_matrix(load_matrix(output), str(output)))
    console.print(f"merged {len(runs)} runs into {output}", markup=False, highlight=False, soft_wrap=True)
    for warning in warnings:
        make_console(stderr=True).print(f"warning: {warning}", markup=False, highlight=False, soft_wrap=True)
    return matrix.exit_code


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
    for step, why in next_commands(folder):
        lines += [f"  # {why}", f"  {step}"] if why else [f"  {step}"]
    print("\n".join(lines))


@app.command()
@_guard
def schema(
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write the schema to this file instead of printing it (e.g. suite.schema.json beside your suites).")] = None,
) -> None:
    """Print the JSON Schema of suite.yaml (the installed plug-ins' kinds included), for editors: a suite whose first
    line is `# yaml-language-server: $schema=suite.schema.json` gets every key completed and checked as you type."""
    from evals_cli.suite_schema import schema_text

    text = schema_text()
    if output is None:
        _write_out(text)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{output}: cannot write the schema there: {exc.strerror or exc}") from None
    print(f"wrote {output}: the JSON Schema of suite.yaml; point a suite at it with its first line:\n"
          f"  # yaml-language-server: $schema={output.name}")


@app.command()
@_guard
def history(
    folder: Annotated[Path, typer.Argument(metavar="DIR", help="The results folder (default: results).")] = Path("results"),
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="Show the N newest runs (the trends use all).")] = 30,
    as_json: Annotated[bool, typer.Option("--json", help="Print every run as JSON instead.")] = False,
) -> None:
    """The runs under a results folder, newest first (when, suite, models, pass rate, gate, cost), and each suite's
    trend over its last completed runs."""
    from evals_cli.history import scan_runs, trends

    entries = scan_runs(folder)
    if as_json:
        import json

        print(json.dumps([entry.as_json() for entry in entries], indent=2))
        return
    from evals_cli.display.console import make_console
    from evals_cli.history.render import render_history

    make_console().print(render_history(entries, trends(entries), str(folder), limit))


@app.command()
@_guard
def view(
    folder: Annotated[Path, typer.Argument(metavar="DIR", help="The results folder (default: results).")] = Path("results"),
    port: Annotated[int, typer.Option("--port", "-p", min=0, max=65535, help="Port on 127.0.0.1 (0: any free one).")] = 8765,
) -> None:
    """Serve the run history and every run's report on http://127.0.0.1:PORT/ until Ctrl-C; a run in flight
    reloads itself."""
    from evals_cli.history import pages
    from evals_cli.history.server import HistoryServer

    server = HistoryServer(folder, port, pages=pages)
    print(f"serving the runs under {folder} at {server.url} (Ctrl-C stops)", flush=True)
    server.serve_until_interrupted()
    print("stopped", flush=True)


LISTABLE = ("graders", "extractors", "targets", "gates", "effects", "users", "settings")


@app.command()
@_guard
def generate(
    policy: Annotated[Path, typer.Option("--from", metavar="POLICY", help="The agent's policy (text or Markdown) the rows are written from.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Where to write the rows (JSONL).")],
    tools: Annotated[Path | None, typer.Option("--tools", metavar="SUITE", help="The suite whose tools and world the rows are for; rows then give expected_actions its tools accept.")] = None,
    count: Annotated[int, typer.Option("--count", "-n", min=1, max=1000, help="Rows to write.")] = 10,
    kind: Annotated[str, typer.Option("--kind", metavar="task|attacker", help="task: users with goals the agent should meet; attacker: red-team users (user.kind attacker).")] = "task",
    seed: Annotated[int, typer.Option("--seed", help="Sent with each request (seed + request index); also orders the tools shown and the attack strategies asked for.")] = 0,
    template: Annotated[Path | None, typer.Option("--template", help="Your own Jinja2 template for the request (default: the built-in one).")] = None,
    model: Annotated[str | None, typer.Option("--model", metavar="MODEL", help="The generator model; NAME@URL on its own endpoint (default: the suite's judge, EVAL_JUDGE_MODEL).")] = None,
    base_url: Annotated[str | None, typer.Option("--base-url", help="The generator's endpoint.")] = None,
    api_key: Annotated[str | None, typer.Option("--api-key", help="The generator's key (prefer EVAL_JUDGE_API_KEY).")] = None,
    max_requests: Annotated[int | None, typer.Option("--max-requests", min=1, help="Requests at most (default: twice the batches needed, plus two).")] = None,
    batch: Annotated[int, typer.Option("--batch", min=1, max=50, help="Rows asked for per request.")] = 5,
    temperature: Annotated[float, typer.Option("--temperature", min=0, max=2, help="The generator's sampling temperature.")] = 0.7,
    record: Annotated[Path | None, typer.Option("--record", help="Record the generator's calls to this JSONL file.")] = None,
    replay: Annotated[Path | None, typer.Option("--replay", help="Serve the generator's calls from a recording; no network.")] = None,
) -> None:
    """Write dataset rows (simulated users, or attackers with --kind attacker) from a policy with a model; rows whose gold actions the suite's tools refuse are dropped."""
    from evals_cli.generate.api import GenerateOptions, generate_rows

    done = generate_rows(GenerateOptions(
        policy=policy, tools=tools, count=count, output=output, kind=kind, seed=seed, template=template, model=model,
        base_url=base_url, api_key=api_key, max_requests=max_requests, batch=batch, temperature=temperature,
        record=record, replay=replay))
    _notes(done.notes(), prefix="")
    if done.summary() is not None:
        print(done.summary())
    raise typer.Exit(done.exit_code)


@app.command("list")
@_guard
def list_kinds(
    what: Annotated[str | None, typer.Argument(metavar="WHAT", help="graders, extractors, targets, gates, effects, users "
                                                                        "or settings (default: all seven); or tools SUITE.")] = None,
    suite: Annotated[Path | None, typer.Argument(metavar="SUITE", help="With `tools`: the suite whose tools to list.")] = None,
    target_file: Annotated[Path | None, typer.Option("--target", help="With `tools`: a --target file, as for evals run.")] = None,
    replay: Annotated[Path | None, typer.Option("--replay", help="With `tools`: read the MCP servers' tool lists from this recording instead of starting them.")] = None,
) -> None:
    """List every registered grader, extractor, target and gate kind, the simulated-user options, from the schemas,
    and the environment variables read (settings); `evals list tools SUITE` lists the tools the suite's agent will
    see and where each comes from (its MCP servers are started to list theirs)."""
    import shutil

    if what == "tools" or suite is not None:
        if what != "tools" or suite is None:
            raise ConfigError("give the suite whose tools to list: evals list tools SUITE")
        from evals_cli.tool_listing import offered_tools, render

        sys.stdout.write(render(offered_tools(suite, target_file, replay), max(60, shutil.get_terminal_size((100, 24)).columns)) + "\n")
        return

    if what is not None and what not in LISTABLE:
        import difflib

        hint = difflib.get_close_matches(what, LISTABLE, n=1)
        more = f"did you mean '{hint[0]}'? " if hint else ""
        raise ConfigError(f"cannot list '{what}'; {more}choose one of: {', '.join(LISTABLE)}")
    width = max(60, min(shutil.get_terminal_size((100, 24)).columns, 120))
    sections = [what] if what else list(LISTABLE)
    from evals_cli.catalog import render_section

    _write_out("\n\n".join(render_section(name, width) for name in sections) + "\n")


def _write_out(text: str) -> None:
    """Text to stdout, a reader that stops early (`evals list | head`) being no error: it has what it wanted."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


app.command("watch")(_guard(cli_watch.watch))  # its options and help: cli_watch.py


def main() -> None:
    """The `evals` command: ends without the interpreter's teardown (see `evals_cli.shutdown`). Only here, the
    process's own entry point (`evals_cli.__main__` calls it, for the script and `python -m` alike): `app` called
    in-process (tests, a caller's program) exits as usual."""
    from evals_cli.shutdown import exit_code, exit_now, hold_collections

    hold_collections()  # until settle_heap, when a run's samples start
    try:
        app()
    except SystemExit as exc:
        exit_now(exit_code(exc.code))
    exit_now(0)


if __name__ == "__main__":  # pragma: no cover
    main()
