"""Trace files in, conversations and problems out: the one entry point the CLI and the traces target use.

A problem is reported where it is (a file's line, a conversation) and the rest is still read: one broken export
line or one conversation cut off must not hide the others. Only when nothing at all could be read is it an
error (ConfigError, exit 2), with every problem listed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evals_cli.errors import ConfigError
from evals_cli.traces.conversations import Conversation, build_conversations
from evals_cli.traces.files import iter_files, read_spans
from evals_cli.traces.masking import TraceCleaner
from evals_cli.traces.otlp import Span
from evals_cli.traces.span_records import span_tree


@dataclass
class TraceSet:
    """What the files held."""

    conversations: list[Conversation]  # every conversation rebuilt, complete or not
    problems: list[str] = field(default_factory=list)  # per file line, and per conversation not graded
    files: list[Path] = field(default_factory=list)

    @property
    def complete(self) -> list[Conversation]:
        return [c for c in self.conversations if c.complete]

    def notes(self) -> list[str]:
        """Every problem, then what could not be rebuilt of the conversations that are still graded."""
        return [*self.problems, *(f"{c.where}: conversation {c.id!r}: {note}" for c in self.complete
                                  for note in c.notes)]


def read_traces(paths: list[Path] | Path, *, max_problems: int = 50) -> TraceSet:
    """Every conversation of the files (a folder: its *.jsonl / *.json files). Raises ConfigError when no
    conversation could be read from any of them."""
    paths = [paths] if isinstance(paths, Path) else list(paths)
    spans: list[Span] = []
    problems: list[str] = []
    files = list(iter_files(paths))
    if not files:
        raise ConfigError(f"{', '.join(map(str, paths))}: no trace files (*.jsonl, *.json) found")
    for path in files:
        found, bad = read_spans(path)
        spans += found
        problems += bad
    spans, duplicates = unique_spans(spans)
    problems += duplicates
    cleaner = TraceCleaner(spans)  # masked by the secrets the spans name
    conversations, notes = build_conversations(spans, cleaner, lambda members: span_tree(members, cleaner))
    problems += notes
    problems += [c.problem() for c in conversations if not c.complete]
    if len(problems) > max_problems:
        problems = [*problems[:max_problems], f"... and {len(problems) - max_problems} more problems"]
    if not any(c.complete for c in conversations):
        head = (f"{', '.join(map(str, files))}: no conversation could be read from the trace file(s) (expected "
                "OTLP/JSON: one ExportTraceServiceRequest per line, with GenAI or OpenInference LLM spans)")
        raise ConfigError([head, *problems])
    return TraceSet(conversations, problems, files)


def unique_spans(spans: list[Span]) -> tuple[list[Span], list[str]]:
    """The spans with each (trace id, span id) once, the first kept, and a warning naming the ids seen again (an
    export written twice, or two files of one trace): merged silently, a model call would count twice."""
    seen: dict[tuple[str, str], Span] = {}
    kept: list[Span] = []
    again: list[tuple[Span, Span]] = []
    for span in spans:
        key = (span.trace_id, span.span_id)
        if key in seen:
            again.append((seen[key], span))
            continue
        seen[key] = span
        kept.append(span)
    if not again:
        return kept, []
    named = "; ".join(f"{later.span_id} of trace {later.trace_id} ({later.where}, first at {first.where})"
                      for first, later in again[:5]) + (f"; and {len(again) - 5} more" if len(again) > 5 else "")
    return kept, [f"{len(again)} span id(s) appear more than once, each read once (the first): {named}"]


def dataset_rows(path: Path) -> list[dict[str, Any]]:
    """A trace file as dataset rows, for a traces suite that names no dataset: one per conversation (id = the
    conversation id, input = its user messages), in start order. A conversation that cannot be graded is a row
    too, so that it shows as an errored sample with its reason."""
    rows = []
    for conversation in read_traces(path).conversations:
        users = [t.user for t in conversation.trajectory.turns if t.user]
        started = datetime.fromtimestamp(conversation.started, UTC).isoformat(timespec="seconds")
        rows.append({"id": conversation.id, "input": users or "(the traced conversation)",
                     "metadata": {"trace": {"where": conversation.where, "started": started}}})
    return rows
