"""Grades back out as OpenTelemetry, next to the trace they grade: per graded conversation one span in its own
trace (a child of the conversation's root span), with one `gen_ai.evaluation.result` event per grader, in the
GenAI semantic conventions' names (`gen_ai.evaluation.name`, `gen_ai.evaluation.score.value`,
`gen_ai.evaluation.score.label`, `gen_ai.evaluation.explanation`, `error.type`). Written as OTLP/JSON with the
standard library and POSTed to `{endpoint}/v1/traces` from a thread of its own, through a bounded queue: a
backend that is slow or down costs grading nothing, and what could not be sent is counted.
"""

from __future__ import annotations

import json
import os
import queue
import threading
import time
import urllib.request
from typing import Any

from evals_cli.models.results import Grade, SampleResult

QUEUE = 1000  # export requests waiting; past it a grade's span is dropped, and counted
BATCH = 100
TIMEOUT_S = 10.0
SCOPE = {"name": "evals-cli.watch"}


def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": str(value)}}


def _event(name: str, grade: Grade, at_ns: int) -> dict[str, Any]:
    attrs = [_attr("gen_ai.evaluation.name", name)]
    if grade.error:  # no score: never sent as a zero
        attrs.append(_attr("error.type", "grader_error"))
        attrs.append(_attr("gen_ai.evaluation.explanation", grade.error[:2000]))
    elif not grade.applicable:  # nothing to check: its 1.0 is a convention, not a score
        attrs.append(_attr("gen_ai.evaluation.score.label", "not_applicable"))
    elif grade.score is not None:
        attrs.append(_attr("gen_ai.evaluation.score.value", float(grade.score)))
    if not grade.error and grade.rationale:
        attrs.append(_attr("gen_ai.evaluation.explanation", grade.rationale[:2000]))
    return {"name": "gen_ai.evaluation.result", "timeUnixNano": str(at_ns), "attributes": attrs}


def evaluation_span(result: SampleResult, suite: str, trace_id: str, parent_id: str | None) -> dict[str, Any]:
    """The span of one graded conversation, in its trace."""
    now = time.time_ns()
    attrs = [_attr("evals.suite", suite), _attr("evals.sample_id", result.sample_id)]
    if result.passed is not None:
        attrs.append(_attr("evals.passed", result.passed))
    if result.score is not None:
        attrs.append(_attr("evals.score", float(result.score)))
    if result.error is not None:
        attrs.append(_attr("error.type", result.error.category))
    span: dict[str, Any] = {
        "traceId": trace_id, "spanId": os.urandom(8).hex(), "name": f"evaluate {suite}", "kind": 1,
        "startTimeUnixNano": str(now), "endTimeUnixNano": str(now), "attributes": attrs,
        "events": [_event(name, grade, now) for name, grade in result.grades.items()],
        "status": {"code": 2, "message": result.error.message[:500]} if result.error is not None else {}}
    if parent_id:
        span["parentSpanId"] = parent_id
    return span


class GradeExporter:
    def __init__(self, endpoint: str, service: str = "evals-watch") -> None:
        self.url = endpoint.rstrip("/") + ("" if endpoint.rstrip("/").endswith("/v1/traces") else "/v1/traces")
        self.resource = {"attributes": [_attr("service.name", service)]}
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue(QUEUE)
        self.sent = self.dropped = self.failed = 0
        self._thread = threading.Thread(target=self._run, name="evals-watch-export", daemon=True)
        self._thread.start()

    def send(self, span: dict[str, Any]) -> None:
        try:
            self._queue.put_nowait(span)
        except queue.Full:
            self.dropped += 1

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            while len(batch) < BATCH:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    self._post(batch)
                    return
                batch.append(item)
            self._post(batch)

    def _post(self, spans: list[dict[str, Any]]) -> None:
        body = json.dumps({"resourceSpans": [{"resource": self.resource,
                                              "scopeSpans": [{"scope": SCOPE, "spans": spans}]}]}).encode()
        request = urllib.request.Request(self.url, data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as reply:  # noqa: S310 (the user's endpoint)
                reply.read()
            self.sent += len(spans)
        except (OSError, ValueError):
            self.failed += len(spans)

    def close(self, timeout: float = TIMEOUT_S) -> None:
        """Send what is queued (within `timeout`), then stop."""
        try:
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            pass
        self._thread.join(timeout)
