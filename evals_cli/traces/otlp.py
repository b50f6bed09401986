"""OTLP/JSON trace files as the OpenTelemetry collector's file exporter writes them: one
`ExportTraceServiceRequest` per line (resourceSpans / scopeSpans / spans), ids in hex, attribute values in OTLP's
`AnyValue` form (`{"stringValue": ...}`, `{"intValue": "3"}`, arrays, kvlists).

Only the shape is read here; what the attributes mean is conventions.py's, and the files (lines of OTLP/JSON or
of the OpenAI Agents SDK's export) are files.py's.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any

_MAX_DEPTH = 64  # AnyValue nesting past this is a hostile file, not a trace


@dataclass
class Span:
    """One span, its attributes decoded to plain Python values (strings, numbers, lists, dicts)."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int
    end_ns: int | None
    attributes: dict[str, Any]
    where: str  # "file:line", for messages
    status_error: str | None = None  # the status message of a span whose status is ERROR ("" when it has none)
    resource: dict[str, Any] = field(default_factory=dict)

    @property
    def start_s(self) -> float:
        return self.start_ns / 1e9

    @property
    def duration_s(self) -> float:
        return max(0.0, (self.end_ns - self.start_ns) / 1e9) if self.end_ns else 0.0


class BadLine(ValueError):
    """A line that is not an OTLP/JSON ExportTraceServiceRequest; the message says what was expected."""


def any_value(value: Any, depth: int = 0) -> Any:
    """An OTLP AnyValue as a Python value (an int64 comes as a JSON string in OTLP/JSON)."""
    if depth > _MAX_DEPTH:
        raise BadLine("attribute values nested too deep")
    if not isinstance(value, dict):
        raise BadLine(f"an attribute value is {type(value).__name__}, not an AnyValue object "
                      '(e.g. {"stringValue": "..."})')
    if not value:
        return None
    kind, raw = next(iter(value.items()))
    if kind == "stringValue":
        return str(raw)
    if kind == "boolValue":
        return bool(raw)
    if kind == "intValue":
        try:
            return int(raw)
        except (TypeError, ValueError):
            raise BadLine(f"intValue {raw!r} is not an integer") from None
    if kind == "doubleValue":
        try:
            return float(raw)
        except (TypeError, ValueError):
            raise BadLine(f"doubleValue {raw!r} is not a number") from None
    if kind == "bytesValue":
        return str(raw)
    if kind == "arrayValue":
        return [any_value(v, depth + 1) for v in (raw or {}).get("values") or []]
    if kind == "kvlistValue":
        return key_values((raw or {}).get("values") or [], depth + 1)
    raise BadLine(f"unknown AnyValue kind {kind!r} (expected stringValue, intValue, doubleValue, boolValue, "
                  "bytesValue, arrayValue or kvlistValue)")


def key_values(items: Any, depth: int = 0) -> dict[str, Any]:
    """OTLP's list of {key, value} as a dict."""
    if not isinstance(items, list):
        raise BadLine(f"attributes is {type(items).__name__}, expected a list of {{key, value}}")
    out: dict[str, Any] = {}
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            raise BadLine("an attribute is not a {key, value} object")
        out[item["key"]] = any_value(item.get("value") or {}, depth)
    return out


def span_id(raw: Any, size: int, what: str) -> str:
    """A trace or span id as lowercase hex: OTLP/JSON writes hex; protobuf's own JSON mapping writes base64,
    which is accepted too so that a trace converted by another tool still reads."""
    if not isinstance(raw, str) or not raw:
        raise BadLine(f"{what} is missing")
    if len(raw) == size * 2:
        try:
            bytes.fromhex(raw)
            return raw.lower()
        except ValueError:
            pass
    try:
        decoded = base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        decoded = b""
    if len(decoded) == size:
        return decoded.hex()
    raise BadLine(f"{what} {raw[:40]!r} is neither {size * 2} hex digits nor base64 of {size} bytes")


def _nanos(raw: Any, what: str) -> int:
    try:
        return int(raw)
    except (TypeError, ValueError):
        raise BadLine(f"{what} {str(raw)[:40]!r} is not a number of nanoseconds") from None


def spans_of_request(request: Any, where: str) -> list[Span]:
    """The spans of one ExportTraceServiceRequest."""
    if not isinstance(request, dict) or "resourceSpans" not in request:
        raise BadLine("not an OTLP/JSON ExportTraceServiceRequest (expected an object with resourceSpans, one per "
                      "line, as the OpenTelemetry collector's file exporter writes them; or the OpenAI Agents SDK's "
                      'trace export, {"data": [...]} or its trace and trace.span objects)')
    spans: list[Span] = []
    for resource_spans in request.get("resourceSpans") or []:
        if not isinstance(resource_spans, dict):
            raise BadLine("resourceSpans holds something that is not an object")
        resource = key_values((resource_spans.get("resource") or {}).get("attributes") or [])
        for scope_spans in resource_spans.get("scopeSpans") or resource_spans.get("instrumentationLibrarySpans") or []:
            for raw in (scope_spans or {}).get("spans") or []:
                if not isinstance(raw, dict):
                    raise BadLine("a span is not an object")
                status = raw.get("status") or {}
                code = status.get("code")
                error = str(status.get("message") or "") if code in (2, "STATUS_CODE_ERROR") else None
                parent = raw.get("parentSpanId")
                end = raw.get("endTimeUnixNano")
                spans.append(Span(
                    trace_id=span_id(raw.get("traceId"), 16, "traceId"),
                    span_id=span_id(raw.get("spanId"), 8, "spanId"),
                    parent_id=span_id(parent, 8, "parentSpanId") if parent else None,
                    name=str(raw.get("name") or ""),
                    start_ns=_nanos(raw.get("startTimeUnixNano"), "startTimeUnixNano"),
                    end_ns=_nanos(end, "endTimeUnixNano") if end not in (None, "", "0", 0) else None,
                    attributes=key_values(raw.get("attributes") or []),
                    where=where, status_error=error, resource=resource))
    return spans
