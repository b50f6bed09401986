"""Spans held per trace until its conversation is finished, within a bound on what is held.

A trace is finished when its root span (no parent) has ended and no span came for `quiet` seconds, or when its
first span is `max_age` old whatever its root did (the result says it was cut there). Spans of a trace not
sampled are never held: only its timing is kept, so that it is counted once when it finishes. Past `max_spans`
held, the oldest trace is shed whole (a part of a conversation graded as the whole would be a false grade), and
counted. A span that arrives for a trace already finished is counted as late and not held.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from evals_cli.traces.otlp import Span
from evals_cli.watch.recent import Recent

Finish = Literal["quiet", "max_age", "shutdown"]


@dataclass
class Pending:
    """One trace not finished yet."""

    trace_id: str
    keep: bool  # sampled: its spans are held
    first_seen: float
    last_seen: float
    root_ended: bool = False
    spans: dict[str, Span] = field(default_factory=dict)  # span id -> span (a span sent twice is held once)


@dataclass(frozen=True)
class Finished:
    """A trace whose conversation is finished, and why it is deemed so."""

    trace_id: str
    spans: list[Span]
    sampled: bool
    reason: Finish
    root_ended: bool  # False: cut off (max_age, shutdown) before its root span ended

    @property
    def root_id(self) -> str | None:
        return next((s.span_id for s in self.spans if s.parent_id is None), None)


@dataclass
class Counts:
    traces: int = 0  # distinct traces whose spans arrived
    spans: int = 0
    late_spans: int = 0
    shed_traces: int = 0  # shed for the span bound
    shed_spans: int = 0


class Assembler:
    """Thread-safe: the server's threads add, the service's loop takes what is finished."""

    def __init__(self, quiet: float, max_age: float, max_spans: int, keep: Callable[[str], bool],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.quiet, self.max_age, self.max_spans = quiet, max_age, max_spans
        self.keep, self.clock = keep, clock
        self.counts = Counts()
        self._by_activity: OrderedDict[str, Pending] = OrderedDict()  # least recently active first
        self._by_age: OrderedDict[str, Pending] = OrderedDict()  # oldest first
        self._recent = Recent()  # finished traces, to tell a late span from a new trace
        self.held = 0  # spans held
        self._lock = threading.Lock()

    def add(self, spans: list[Span]) -> None:
        now = self.clock()
        with self._lock:
            for span in spans:
                self._add(span, now)
            while self.held > self.max_spans and self._by_age:
                self._shed_oldest()

    def _add(self, span: Span, now: float) -> None:
        self.counts.spans += 1
        pending = self._by_activity.get(span.trace_id)
        if pending is None:
            if span.trace_id in self._recent:
                self.counts.late_spans += 1
                return
            pending = Pending(span.trace_id, self.keep(span.trace_id), now, now)
            self._by_age[span.trace_id] = pending
            self._by_activity[span.trace_id] = pending
            self.counts.traces += 1
        else:
            pending.last_seen = now
            self._by_activity.move_to_end(span.trace_id)
        if span.parent_id is None and span.end_ns is not None:
            pending.root_ended = True
        if pending.keep and span.span_id not in pending.spans:
            pending.spans[span.span_id] = span
            self.held += 1

    def _shed_oldest(self) -> None:
        trace_id, pending = self._by_age.popitem(last=False)
        del self._by_activity[trace_id]
        self._forget(pending)
        self.counts.shed_traces += 1
        self.counts.shed_spans += len(pending.spans)

    def _forget(self, pending: Pending) -> None:
        self.held -= len(pending.spans)
        self._recent.add(pending.trace_id)

    def due(self) -> list[Finished]:
        """The traces finished by now, each once."""
        now = self.clock()
        out: list[Finished] = []
        with self._lock:
            for pending in list(self._by_activity.values()):
                if now - pending.last_seen < self.quiet:
                    break  # the rest were active later still
                if pending.root_ended:
                    out.append(self._finish(pending, "quiet"))
            for pending in list(self._by_age.values()):
                if now - pending.first_seen < self.max_age:
                    break
                out.append(self._finish(pending, "max_age"))
        return out

    def drain(self) -> list[Finished]:
        """Every trace still held, finished as it stands (shutdown)."""
        with self._lock:
            return [self._finish(p, "shutdown") for p in list(self._by_age.values())]

    def _finish(self, pending: Pending, reason: Finish) -> Finished:
        del self._by_activity[pending.trace_id]
        del self._by_age[pending.trace_id]
        self._forget(pending)
        spans = sorted(pending.spans.values(), key=lambda s: s.start_ns)
        return Finished(pending.trace_id, spans, pending.keep, reason, pending.root_ended)

    @property
    def pending(self) -> int:
        return len(self._by_age)
