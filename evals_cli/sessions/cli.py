"""Two plain functions for the Typer layer: `evals analyze FILE` and `evals run` on a recorded_sessions suite.

They print (Rich view, `--json` document, or `-q` verdict only) and return the exit code; they never raise
for user mistakes, so they work the same wired into Typer, called from Python, or from a test.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from evals_cli.errors import EXIT_INVALID, ConfigError
from evals_cli.sessions.runner import SessionsOptions, SessionsOutcome, run_sessions
from evals_cli.sessions.spec import RecordedSessionsTarget
from evals_cli.sessions.suite import SessionsSuiteSpec, load_sessions_suite

# RunOptions fields that mean nothing without a live agent: (field, value that means "not given", why)
_AGENT_ONLY = (("model", None, "--model sets the agent model"), ("base_url", None, "--base-url sets the agent endpoint"),
               ("tags", None, "--tag filters samples by tag"), ("repeats", 1, "--repeats re-runs live agents"),
               ("resume", None, "--resume continues a live run"), ("retry_errors", False, "--retry-errors needs --resume"),
               ("sample_timeout", None, "--sample-timeout bounds a live sample"),
               ("shard", None, "--shard splits a live run"), ("otel", False, "--otel traces a live run"))


def _errors(problems: list[str]) -> None:
    from rich.markup import escape

    from evals_cli.display.console import make_console

    err = make_console(stderr=True)
    first = f"invalid input ({len(problems)} problems)" if len(problems) > 1 else escape(problems[0])
    err.print(f"[bold red]error[/]: {first}", markup=True, highlight=False, soft_wrap=True)
    if len(problems) > 1:
        for problem in problems:
            err.print(f"  - {problem}", markup=False, highlight=False, soft_wrap=True)


def _document(outcome: SessionsOutcome) -> dict[str, Any]:
    """Every analysis (read back from the results file when more were analysed than kept) and the summary."""
    sessions: list[Any] = [a.model_dump(mode="json") for a in outcome.analyses]
    if outcome.hidden and outcome.output_dir is not None:
        from evals_cli.output.files import RESULTS_NAME

        with (outcome.output_dir / RESULTS_NAME).open(encoding="utf-8") as fh:
            sessions = [json.loads(line) for line in fh if line.strip()]
    summary = outcome.summary.model_dump(mode="json") if outcome.summary else None
    return {"summary": summary, "sessions": sessions}


def report(outcome: SessionsOutcome, json_out: bool = False, quiet: bool = False) -> int:
    """Print an outcome the way the user asked; return its exit code."""
    from evals_cli.display.console import make_console

    if outcome.summary is None:  # invalid input: nothing ran
        _errors(outcome.messages or ["invalid input"])
        return outcome.exit_code
    console = make_console()
    if json_out:
        sys.stdout.write(json.dumps(_document(outcome), ensure_ascii=False, indent=2) + "\n")
    elif quiet:
        console.print(outcome.summary.gate.message if outcome.summary.gate else "no gate", markup=False,
                      soft_wrap=True)
    else:
        from evals_cli.sessions.render import gate_line, render_sessions

        console.print(render_sessions(outcome.analyses, outcome.summary, outcome.hidden))
        console.print(gate_line(outcome.summary), soft_wrap=True)
        console.print(f"results: {outcome.output_dir}", markup=False, highlight=False, soft_wrap=True)
    err = make_console(stderr=True)
    for message in outcome.messages:
        err.print(f"error: {message}", markup=False, highlight=False, soft_wrap=True)
    return outcome.exit_code


def analyze_command(path: Path, output: Path | None = None, *, judge_model: str | None = None,
                    judge_base_url: str | None = None, no_judge: bool = False, json_out: bool = False,
                    quiet: bool = False, concurrency: int = 4, record: Path | None = None, replay: Path | None = None,
                    timeout: float | None = None, max_error_rate: float = 0.2,
                    judge_confirms: bool = True) -> int:
    """`evals analyze sessions.jsonl`: default weights, thresholds and gate (mean overall_score >= 0.7). The judge
    runs when a judge model is given (`judge_model` or EVAL_JUDGE_MODEL) and `no_judge` is not set;
    `judge_confirms=False` keeps the deterministic turn detections final (the judge cannot overrule them)."""
    if record is not None and replay is not None:
        _errors(["--record and --replay cannot be used together"])
        return EXIT_INVALID
    path = Path(path)
    suite = SessionsSuiteSpec(name=f"analyze-{path.stem}", dataset=str(path.resolve()), concurrency=concurrency,
                              target=RecordedSessionsTarget(judge_confirms=judge_confirms))
    options = SessionsOptions(output=output, no_judge=no_judge, judge_model=judge_model, judge_base_url=judge_base_url,
                              record=record, replay=replay, timeout=timeout, max_error_rate=max_error_rate)
    return report(run_sessions(suite, options), json_out=json_out, quiet=quiet)


def sessions_options(options: Any | None) -> SessionsOptions:
    """`RunOptions` of `evals run` → `SessionsOptions`; ConfigError for the options that need a live agent."""
    if options is None:
        return SessionsOptions()
    wrong = [why for name, unset, why in _AGENT_ONLY if getattr(options, name, unset) not in (unset, None)]
    if wrong:
        raise ConfigError([f"{why}; a recorded_sessions suite has no live agent (the judge is set with judge.model "
                           "or EVAL_JUDGE_MODEL)" for why in wrong])
    if options.record is not None and options.replay is not None:
        raise ConfigError("--record and --replay cannot be used together")
    return SessionsOptions(output=options.output, concurrency=options.concurrency, max_sessions=options.max_samples,
                           no_judge=options.no_judge, timeout=options.timeout, max_retries=options.max_retries,
                           record=options.record, replay=options.replay, max_error_rate=options.max_error_rate)


def run_sessions_suite(suite: Any, options: Any | None = None, *, quiet: bool = False, json_out: bool = False) -> int:
    """`evals run` on a recorded_sessions suite. `suite`: the main SuiteSpec (target recorded_sessions), a
    SessionsSuiteSpec, or the suite file's path; `options`: the `RunOptions` the run command built."""
    try:
        if isinstance(suite, SessionsSuiteSpec):
            spec = suite
        elif isinstance(suite, str | Path):
            spec = load_sessions_suite(suite)
        else:
            spec = SessionsSuiteSpec.from_suite(suite)
        converted = sessions_options(options)
    except ConfigError as exc:
        _errors(exc.problems)
        return EXIT_INVALID
    return report(run_sessions(spec, converted), json_out=json_out, quiet=quiet)
