"""Trace files: which lines hold spans, in which of the two formats evals-cli reads (OTLP/JSON requests, the
OpenAI Agents SDK's own export), and whether a file is a trace file at all.

A file is read line by line and each line on its own: one broken export line never hides the spans of the
others, and a line that is not a trace is reported at its line. Whether a file is a trace file is decided from
its content as a whole (`is_trace_file`): the lines that hold traces against the other JSON objects, past any
line that cannot be read, never from the first line alone.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evals_cli.errors import ConfigError
from evals_cli.traces.agents_sdk import ExportState, is_sdk_export, spans_of_export
from evals_cli.traces.otlp import BadLine, Span, spans_of_request

# a line that may hold a trace: the cheap test that runs on every line of a file whose kind is being decided
_MARKER = re.compile(rb'"resourceSpans"|"object"\s*:\s*"trace(?:\.span)?"')


def _spans_of_line(request: Any, where: str, state: ExportState) -> list[Span]:
    if is_sdk_export(request):
        return spans_of_export(request, where, state)
    return spans_of_request(request, where)


def _parsed(raw_line: bytes, where: str, problems: list[str]) -> Any:
    """A line as JSON, or None with its problem said."""
    try:
        text = raw_line.decode("utf-8")
    except UnicodeDecodeError:
        problems.append(f"{where}: not UTF-8 text; a trace file is UTF-8 JSON, one request per line")
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        problems.append(f"{where}: not JSON ({str(exc)[:80]}); an OTLP/JSON trace file holds one "
                        "ExportTraceServiceRequest per line (not a pretty-printed document)")
        return None


def read_spans(path: Path) -> tuple[list[Span], list[str]]:
    """(every span of the file, a problem per line that could not be read). Raises ConfigError only when the
    file itself cannot be opened."""
    if not path.is_file():
        raise ConfigError(f"{path}: trace file not found; check the path")
    spans: list[Span] = []
    problems: list[str] = []
    state = ExportState()
    try:
        with path.open("rb") as fh:
            for number, raw_line in enumerate(fh, 1):
                if not raw_line.strip():
                    continue
                where = f"{path}:{number}"
                request = _parsed(raw_line, where, problems)
                if request is None:
                    continue
                try:
                    spans += _spans_of_line(request, where, state)
                except BadLine as exc:
                    problems.append(f"{where}: {exc}")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the trace file: {exc.strerror or type(exc).__name__}") from None
    return spans, problems


def _is_trace_line(raw_line: bytes) -> bool:
    if not _MARKER.search(raw_line):
        return False
    try:
        request = json.loads(raw_line)
    except (ValueError, RecursionError):
        return False
    return isinstance(request, dict) and ("resourceSpans" in request or is_sdk_export(request))


def is_trace_file(path: Path) -> bool:
    """Whether a file is a trace file, from its content as a whole: more of its JSON-object lines are trace
    requests (OTLP/JSON or the Agents SDK's export) than anything else. Lines that cannot be read count for
    neither, so a broken or foreign first line does not decide. False when the file cannot be read."""
    traces = others = 0
    try:
        with path.open("rb") as fh:
            for raw_line in fh:
                line = raw_line.strip()
                if not line.startswith(b"{"):
                    continue
                if _is_trace_line(line):
                    traces += 1
                elif line.endswith(b"}"):
                    others += 1
    except OSError:
        return False
    return traces > others


def iter_files(paths: list[Path]) -> Iterator[Path]:
    """Trace files named directly, or every *.jsonl / *.json file of a folder (sorted)."""
    for path in paths:
        if path.is_dir():
            yield from sorted(p for p in path.iterdir() if p.suffix in (".jsonl", ".json") and p.is_file())
        else:
            yield path
