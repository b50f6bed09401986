"""`evals analyze`: recorded multi-agent sessions (or traced conversations) analysed by the run `evals_cli.analyze`
builds for them, printed as their sessions view.

`evals --help` imports every command's module: the analysis is imported when the command runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evals_cli.errors import ConfigError


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
    from evals_cli.analyze import analyze_command

    raise typer.Exit(analyze_command(path, output, judge_model=judge_model, judge_base_url=judge_base_url,
                                     judge_api_key=judge_api_key, no_judge=no_judge, json_out=json_out, quiet=quiet,
                                     concurrency=concurrency, record=record, replay=replay,
                                     judge_confirms=judge_confirms == "on", input_format=input_format, html=html))
