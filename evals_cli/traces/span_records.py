"""Spans read from a trace or the receiver, kept on the trajectory: bounded and masked (models/trajectory.py gives the
bounds), so that a span query can read them and the results can show them without carrying a production
payload or a secret the trace named."""

from __future__ import annotations

import json
from typing import Any, Protocol

from evals_cli.models.trajectory import MAX_ATTRIBUTE_CHARS, MAX_ATTRIBUTES, MAX_SPANS, MAX_VALUE_CHARS, SpanRecord, SpanTree
from evals_cli.text_caps import cap, cap_value
from evals_cli.traces.otlp import Span


class Cleaner(Protocol):
    """What a text or JSON value taken from a trace becomes before it is kept (masked and capped)."""

    def text(self, value: str | None) -> str | None: ...

    def value(self, value: Any) -> Any: ...


def _record(span: Span, cleaner: Cleaner, budget: int) -> SpanRecord:
    keys = list(span.attributes)
    kept = {key: cap_value(cleaner.value(span.attributes[key]), MAX_VALUE_CHARS) for key in keys[:MAX_ATTRIBUTES]}
    if len(json.dumps(kept, ensure_ascii=False, default=str)) > budget:
        kept = {}  # the episode's budget is spent: the span keeps its name, links, times and status
    error = span.status_error
    return SpanRecord(
        name=cap(cleaner.text(span.name) or "", MAX_VALUE_CHARS), span_id=span.span_id, parent_id=span.parent_id,
        trace_id=span.trace_id, start=span.start_s,
        duration_s=span.duration_s if span.end_ns is not None else None,
        error=None if error is None else cap(cleaner.text(error) or "", MAX_VALUE_CHARS),
        attributes=kept, attributes_left_out=len(keys) - len(kept))


def span_tree(spans: list[Span], cleaner: Cleaner) -> SpanTree:
    """The spans in start order, the earliest `MAX_SPANS` kept and the rest counted; attributes kept while the
    episode's `MAX_ATTRIBUTE_CHARS` last."""
    ordered = sorted(spans, key=lambda s: s.start_ns)
    records: list[SpanRecord] = []
    budget = MAX_ATTRIBUTE_CHARS
    for span in ordered[:MAX_SPANS]:
        record = _record(span, cleaner, budget)
        budget -= len(json.dumps(record.attributes, ensure_ascii=False, default=str))
        records.append(record)
    return SpanTree(spans=records, left_out=max(0, len(ordered) - MAX_SPANS))
