"""How a sessions run is printed, and the suite `evals analyze` builds for its user.

`report` prints a `SessionsOutcome` (Rich view, `--json` document, or `-q` verdict only: the sessions view of
`sessions.view`, derived from the common results the run wrote); `analyze_suite` builds the suite and the options
of `evals analyze` from its arguments (trace files first written out as a session file: `traced_sessions`);
`sessions_document` reads any sessions document (`evals run` on a recorded_sessions suite). The running itself is
the runner's (`runner/sessions.py`); `evals_cli.analyze` runs and prints them (`analyze_command`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from evals_cli.display.plain import print_errors
from evals_cli.errors import ConfigError
from evals_cli.sessions.options import SessionsOptions
from evals_cli.sessions.outcome import SessionsOutcome
from evals_cli.sessions.spec import RecordedSessionsTarget
from evals_cli.sessions.suite import SessionsSuiteSpec, load_sessions_suite
from evals_cli.sessions.view import SessionsView, document

if TYPE_CHECKING:  # annotations only
    from evals_cli.suite.spec import SuiteSpec


def report(outcome: SessionsOutcome, json_out: bool = False, quiet: bool = False) -> int:
    """Print an outcome the way the user asked; return its exit code."""
    from evals_cli.display.console import make_console

    console = make_console()
    if json_out:
        view = SessionsView(outcome.analyses, outcome.summary, outcome.hidden)
        sys.stdout.write(json.dumps(document(view, outcome.output_dir), ensure_ascii=False, indent=2) + "\n")
    elif quiet:
        console.print(outcome.summary.gate.message if outcome.summary.gate else "no gate", markup=False,
                      soft_wrap=True)
    else:
        from evals_cli.sessions.render import gate_line, render_sessions

        console.print(render_sessions(outcome.analyses, outcome.summary, outcome.hidden))
        console.print(gate_line(outcome.summary), soft_wrap=True)
        console.print(f"results: {outcome.output_dir}", markup=False, highlight=False, soft_wrap=True)
    print_errors(make_console(stderr=True), outcome.messages)
    return outcome.exit_code


def analyze_suite(path: Path, output: Path | None = None, *, judge_model: str | None = None,
                  judge_base_url: str | None = None, judge_api_key: str | None = None, no_judge: bool = False,
                  quiet: bool = False, concurrency: int = 4, record: Path | None = None, replay: Path | None = None,
                  timeout: float | None = None, max_error_rate: float = 0.2, judge_confirms: bool = True,
                  input_format: str = "auto") -> tuple[SessionsSuiteSpec, SessionsOptions]:
    """The suite `evals analyze PATH` runs, and its options: default weights, thresholds and gate (mean
    overall_score >= 0.7); the judge runs when a judge model is given (`judge_model` or EVAL_JUDGE_MODEL) and
    `no_judge` is not set; `judge_confirms=False` keeps the deterministic turn detections final. `input_format`:
    "sessions", "otlp" (trace files, OTLP/JSON or the Agents SDK's export: their conversations are analysed as
    sessions, written into the run folder first) or "auto" (a folder, or a file mostly of trace requests, is read
    as traces). ConfigError for what cannot be read."""
    path = Path(path)
    sessions_file = path.resolve()
    if input_format == "otlp" or (input_format == "auto" and is_trace_input(path)):
        output, sessions_file = traced_sessions(path, output, quiet=quiet)
    elif input_format not in ("auto", "sessions"):
        raise ConfigError(f"--format takes auto, sessions or otlp, not {input_format!r}")
    suite = SessionsSuiteSpec(name=f"analyze-{path.stem}", dataset=str(sessions_file), concurrency=concurrency,
                              target=RecordedSessionsTarget(judge_confirms=judge_confirms))
    options = SessionsOptions(output=output, no_judge=no_judge, judge_model=judge_model, judge_base_url=judge_base_url,
                              judge_api_key=judge_api_key, record=record, replay=replay, timeout=timeout,
                              max_error_rate=max_error_rate)
    return suite, options


def is_trace_input(path: Path) -> bool:
    """Auto-detection for `evals analyze`: a folder (of trace files), or a file whose content is mostly trace
    requests (OTLP/JSON or the OpenAI Agents SDK's export), whatever its first line is."""
    from evals_cli.traces.files import is_trace_file

    return path.is_dir() or is_trace_file(path)


def traced_sessions(path: Path, output: Path | None, *, quiet: bool = False) -> tuple[Path, Path]:
    """Read the trace file(s) (ConfigError when nothing can be read), write their complete conversations as a
    session file into the run folder (kept: what was analysed, masked and capped) and say on stderr what could
    not be read or rebuilt (`quiet`: the warnings only). Returns (the run folder, the session file)."""
    from evals_cli.display.console import make_console
    from evals_cli.output.files import default_output_dir
    from evals_cli.output.manifest import make_run_folder
    from evals_cli.sessions.from_traces import to_session
    from evals_cli.traces import read_traces

    traces = read_traces(path)
    output = output or default_output_dir(f"analyze-{path.stem}")
    make_run_folder(output, "-o")
    sessions_file = output / TRACED_SESSIONS
    with sessions_file.open("w", encoding="utf-8") as fh:
        for conversation in traces.complete:
            fh.write(to_session(conversation).model_dump_json() + "\n")
    err = make_console(stderr=True)
    read = f"{len(traces.complete)} of {len(traces.conversations)} traced conversations read from {path}"
    if not quiet:
        err.print(read, markup=False, highlight=False, soft_wrap=True)
        err.print(ANALYSIS_QUESTION, markup=False, highlight=False, soft_wrap=True)
    for note in traces.notes():
        err.print(f"warning: {note}", markup=False, highlight=False, soft_wrap=True)
    return output, sessions_file


TRACED_SESSIONS = "traced_sessions.jsonl"
ANALYSIS_QUESTION = ("this analysis asks whether the conversations show multi-agent problems (corrections, re-asks, "
                     "tool violations, lost handoffs, loops); it never checks an answer against an expectation: for "
                     "a verdict on expectations, grade the traces with a kind: traces suite")


def sessions_document(suite: SessionsSuiteSpec | SuiteSpec | str | Path) -> SessionsSuiteSpec:
    """A sessions document from a SessionsSuiteSpec, the suite file's path, or a SuiteSpec carrying a
    RecordedSessionsTarget (ConfigError for what does not apply)."""
    if isinstance(suite, SessionsSuiteSpec):
        return suite
    if isinstance(suite, str | Path):
        return load_sessions_suite(suite)
    return SessionsSuiteSpec.from_suite(suite)
