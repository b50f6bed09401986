"""A loopback OTLP/HTTP trace receiver: an external agent (a command or an HTTP agent) exports its spans here while
it runs, and each episode takes back the spans tagged with its id, so its trajectory is rebuilt from what the
agent itself reported (the same reader as trace files: conversations.py).

It listens on 127.0.0.1 only, takes `POST /v1/traces` as OTLP/JSON or OTLP/protobuf (the OpenTelemetry SDK's
default, `http/protobuf`, decoded with the `opentelemetry-proto` package of the `otel` extra), and keeps each
request as OTLP/JSON (what a recording stores and replays). An episode's spans are those whose resource carries
`evals.episode=<id>` (a command agent: evals-cli sets OTEL_RESOURCE_ATTRIBUTES) or whose trace holds a span
naming the id as its session (`session.id`, `gen_ai.conversation.id`: an HTTP agent given the id).

The agent is a program evals-cli does not control, so what it can make the run hold is bounded: each body
(otlp_body.py: its length known, MAX_BODY as sent and inflated) and everything held at once, MAX_HELD bytes of
requests kept and being read. An episode takes its spans out when it ends, so the bound is on what the episodes
running hold, not on the run's length. A request refused for any reason (too big, the bound reached, a body that
does not read) may have held an episode's spans: every episode open when one was refused (when its start is not
given, every episode ending after it) is an error naming why (`requests_for`), never a verdict on spans the
receiver dropped. Nothing of a broken client reaches the run's
output: the receiver answers or closes the connection, and counts the problem.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import BufferedIOBase
from typing import Any

from evals_cli.endpoints.errors import InvalidResponse
from evals_cli.errors import ConfigError
from evals_cli.traces.otlp import BadLine, Span, spans_of_request
from evals_cli.traces.otlp_body import MAX_BODY, Refused, body_length, decode, footprint, inflate, read_body

EPISODE_ATTRIBUTE = "evals.episode"
SESSION_ATTRIBUTES = ("session.id", "gen_ai.conversation.id")
MAX_HELD = 256 * 1024 * 1024  # bytes held at once: the requests kept (their decoded form) and those being read
SETTLE_S = 5.0  # an episode's end waits this long, at most, for the requests still being received
READ_TIMEOUT_S = 10.0  # a client silent this long mid-request is dropped (408)
DRAIN_BYTES = 1024 * 1024  # an unread body is read and dropped up to this much before the connection is closed
DRAIN_S = 0.2
MAX_PROBLEMS = 20  # problems kept as text; all are counted
POLL_S = 0.1  # how soon the server's loop sees `stop`

Resources = list[tuple[dict[str, Any], list[Span]]]


@dataclass
class _Held:
    """One request kept: its resources with their spans (parsed once, on arrival) and the bytes they take."""

    resources: Resources
    size: int


class OtlpReceiver:
    """The run's receiver (one per target, started on first use); thread-safe, its server in a daemon thread.
    `max_held` and `max_body` default to the module's bounds (read when the receiver is made)."""

    def __init__(self, port: int = 0, max_held: int | None = None, max_body: int | None = None) -> None:
        self.port = port
        self.max_held = MAX_HELD if max_held is None else max_held
        self.max_body = MAX_BODY if max_body is None else max_body
        self.accepted = 0  # requests kept, in the run
        self.held_bytes = 0  # what the requests kept take
        self.reserved = 0  # what the requests being read or decoded have taken of the bound
        self.peak_bytes = 0  # the most held and reserved at once
        self.refused = 0  # requests refused, in the run
        self.problems: list[str] = []  # the first MAX_PROBLEMS, as text
        self.problem_count = 0
        self._held: list[_Held] = []
        self._refusals: deque[tuple[float, str]] = deque(maxlen=100)  # (when, why), the latest
        self._in_flight: set[int] = set()
        self._arrivals = 0
        self._decoding = threading.Lock()  # one decode at a time: its memory comes once, not once per connection
        self.changed = threading.Condition()
        self._server: ThreadingHTTPServer | None = None

    @property
    def endpoint(self) -> str:
        """The base URL an agent's OTLP exporter is pointed at (OTEL_EXPORTER_OTLP_ENDPOINT)."""
        if self._server is None:
            raise RuntimeError("the receiver is not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> OtlpReceiver:
        if self._server is None:
            try:
                self._server = _Server(("127.0.0.1", self.port), _handler(self), self)
            except OSError as exc:
                raise ConfigError(f"target.otlp_port: cannot listen on 127.0.0.1:{self.port} for the agent's spans "
                                  f"({exc.strerror or exc}); free the port or choose another otlp_port") from None
            threading.Thread(target=self._server.serve_forever, args=(POLL_S,), name="otlp-receiver",
                             daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def problem(self, text: str) -> None:
        with self.changed:
            self.problem_count += 1
            if len(self.problems) < MAX_PROBLEMS:
                self.problems.append(text)
            self.changed.notify_all()

    def receive(self, headers: Message, rfile: BufferedIOBase) -> tuple[int, str]:
        """One POST /v1/traces read, decoded and kept: the status to answer and, for a refusal, why. The refusal
        is on record before the exporter is answered (an episode ending after that answer sees it)."""
        ticket = _Ticket(self)
        try:
            self._keep(self._read(headers, rfile, ticket), ticket)
            return 200, ""
        except Refused as refusal:
            self._refuse(refusal)
            return refusal.status, refusal.reason
        finally:
            with self.changed:
                self.reserved -= ticket.size

    @property
    def in_flight(self) -> int:
        """Connections accepted and not yet done with."""
        with self.changed:
            return len(self._in_flight)

    def arrive(self) -> int:
        """A connection accepted (its number): until it `leave`s, an episode ending waits for it (SETTLE_S)."""
        with self.changed:
            self._arrivals += 1
            self._in_flight.add(self._arrivals)
            self.changed.notify_all()
            return self._arrivals

    def leave(self, arrival: int) -> None:
        with self.changed:
            self._in_flight.discard(arrival)
            self.changed.notify_all()

    def _read(self, headers: Message, rfile: BufferedIOBase, ticket: _Ticket) -> _Held:
        length = body_length(headers)
        try:
            raw = read_body(rfile, length, self.max_body, ticket.take)
        except OSError as exc:  # the client went silent (READ_TIMEOUT_S) or away mid-body
            raise Refused(408, f"the body stopped arriving ({type(exc).__name__})") from None
        body = inflate(raw, headers.get("Content-Encoding", ""), self.max_body, ticket.take)
        if body is not raw:
            ticket.give(len(raw))
        del raw
        with self._decoding:
            request = decode(body, headers.get("Content-Type", "application/x-protobuf"), ticket.take)
            del body
            try:
                resources = _resources(request)
            except (BadLine, TypeError, AttributeError) as exc:
                raise Refused(400, f"an OTLP export request could not be read: {str(exc)[:200]}") from None
            return _Held(resources, footprint(request, resources))

    def _keep(self, held: _Held, ticket: _Ticket) -> None:
        with self.changed:
            self.reserved -= ticket.size
            ticket.size = 0
            if held.resources:  # an empty export is answered, and nothing of it kept
                if self.held_bytes + self.reserved + held.size > self.max_held:
                    raise Refused(507, self._full(held.size))
                self.held_bytes += held.size
                self.peak_bytes = max(self.peak_bytes, self.held_bytes + self.reserved)
                self._held.append(held)
            self.accepted += 1
            self.changed.notify_all()

    def _take(self, size: int) -> None:
        with self.changed:
            if self.held_bytes + self.reserved + size > self.max_held:
                raise Refused(507, self._full(size))
            self.reserved += size
            self.peak_bytes = max(self.peak_bytes, self.held_bytes + self.reserved)

    def _full(self, size: int) -> str:
        return (f"the run's OTLP receiver holds {_size(self.held_bytes + self.reserved)} of its bound of "
                f"{_size(self.max_held)} (MAX_HELD); this request's {_size(size)} more is refused (the episodes "
                "running export more spans than that at once)")

    def _refuse(self, refusal: Refused) -> None:
        self.problem(f"an OTLP export request was refused ({refusal.status}): {refusal.reason}")
        with self.changed:
            self.refused += 1
            self._refusals.append((time.monotonic(), f"{refusal.status}: {refusal.reason}"))
            self.changed.notify_all()

    def requests_for(self, tag: str, trace_ids: frozenset[str] = frozenset(),
                     opened: float | None = None) -> list[dict[str, Any]]:
        """The export requests that hold spans of episode `tag` (or of the traces evals-cli started for it, by the
        traceparent it sent), each cut down to those spans' resources, taken out of the receiver: an episode
        reads its spans once, when it ends. First the requests still arriving are waited for (SETTLE_S at most).
        InvalidResponse when a request was refused since the episode was `opened` (time.monotonic(); None: in
        the whole run) or one is still arriving: a refused request's spans are nobody's to know, and a trajectory
        graded without them could pass on what the agent did not report."""
        with self.changed:
            before = self._arrivals
            settled = self.changed.wait_for(lambda: all(a > before for a in self._in_flight), SETTLE_S)
            requests = self._take_out(tag, trace_ids)
            refusals = [why for when, why in self._refusals if opened is None or when >= opened]
            count = self.refused if opened is None else len(refusals)
        if refusals:
            since = "during the run" if opened is None else "while this episode ran"
            raise InvalidResponse(f"the agent's telemetry is incomplete: the run's OTLP receiver refused {count} "
                                  f"export request(s) {since} (the last: {refusals[-1]}); its spans may have been "
                                  "this episode's, so its trajectory is not graded")
        if not settled:
            raise InvalidResponse(f"the agent's telemetry is incomplete: an export request was still arriving at the "
                                  f"run's OTLP receiver {SETTLE_S:g}s after the episode ended")
        return requests

    def _take_out(self, tag: str, trace_ids: frozenset[str]) -> list[dict[str, Any]]:
        """The episode's resources out of the requests held (under the lock); a request left empty is let go."""
        traces = {span.trace_id for held in self._held for _, spans in held.resources for span in spans
                  if _names_session(span, tag)}
        traces |= trace_ids
        out, kept = [], []
        for held in self._held:
            mine = [rs for rs, spans in held.resources
                    if any(_resource_tag(span) == tag or span.trace_id in traces for span in spans)]
            if mine:
                out.append({"resourceSpans": mine})
                held.resources = [(rs, spans) for rs, spans in held.resources if all(rs is not m for m in mine)]
            if held.resources:
                kept.append(held)
            else:
                self.held_bytes -= held.size
        self._held = kept
        return out

    def wait_quiet(self, tag: str, quiet_s: float, bound_s: float, trace_ids: frozenset[str] = frozenset()) -> None:
        """Until spans of `tag` arrived and no request was kept for `quiet_s` (an HTTP agent's exporter sends in
        batches after its reply), at most `bound_s`. Woken by each request (a condition, not a poll)."""
        deadline = time.monotonic() + bound_s
        with self.changed:
            seen, quiet_from = self.accepted, time.monotonic()
            while True:
                now = time.monotonic()
                if self.accepted != seen:
                    seen, quiet_from = self.accepted, now
                if now >= deadline:
                    return
                quiet_left = quiet_from + quiet_s - now
                if quiet_left <= 0 and self._has(tag, trace_ids):
                    return
                self.changed.wait(min(quiet_left, deadline - now) if quiet_left > 0 else deadline - now)

    def _has(self, tag: str, trace_ids: frozenset[str]) -> bool:
        return any(_names_session(s, tag) or s.trace_id in trace_ids
                   for held in self._held for _, spans in held.resources for s in spans)


class _Ticket:
    """What one request being received has taken of the receiver's bound (given back when it is done)."""

    def __init__(self, receiver: OtlpReceiver) -> None:
        self.receiver = receiver
        self.size = 0

    def take(self, size: int) -> None:
        self.receiver._take(size)
        self.size += size

    def give(self, size: int) -> None:
        with self.receiver.changed:
            self.receiver.reserved -= size
            self.size -= size


def _resources(request: dict[str, Any]) -> Resources:
    """Each resource of the request with its spans; BadLine for a request that is not OTLP/JSON."""
    if "resourceSpans" not in request:
        spans_of_request(request, "otlp receiver")  # raises, naming the shape expected
    return [(rs, spans_of_request({"resourceSpans": [rs]}, "otlp receiver"))
            for rs in request.get("resourceSpans") or []]


def _size(size: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} bytes"


def _resource_tag(span: Span) -> str | None:
    value = span.resource.get(EPISODE_ATTRIBUTE)
    return str(value) if value is not None else None


def _names_session(span: Span, tag: str) -> bool:
    return _resource_tag(span) == tag or any(str(span.attributes.get(key)) == tag for key in SESSION_ATTRIBUTES
                                             if span.attributes.get(key) is not None)


class _Server(ThreadingHTTPServer):
    """The receiver's server: a connection that fails is counted as the receiver's problem, never printed."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler],
                 receiver: OtlpReceiver) -> None:
        self.receiver = receiver
        self._arrivals: dict[Any, int] = {}  # each connection open, by its socket: its number at the receiver
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        self._arrivals[request] = self.receiver.arrive()
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        arrival = self._arrivals.pop(request, None)
        super().shutdown_request(request)
        if arrival is not None:
            self.receiver.leave(arrival)

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        self.receiver.problem(f"a connection to the OTLP receiver failed: {type(error).__name__}: {str(error)[:200]}")


def _handler(receiver: OtlpReceiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        timeout = READ_TIMEOUT_S  # each read of the socket (a silent client is dropped)

        def log_message(self, *args: Any) -> None:  # the run's output is the report, not an access log
            return

        def do_POST(self) -> None:
            if self.path.rstrip("/") != "/v1/traces":
                self._answer(404, "the receiver takes spans at /v1/traces only")
                return
            status, reason = receiver.receive(self.headers, self.rfile)
            self._answer(status, reason)

        def _answer(self, status: int, reason: str) -> None:
            """The reply; after a refusal the connection is closed, what is left of the body read and dropped
            (bounded) first so that the client reads the reply rather than a reset."""
            json_reply = "json" in self.headers.get("Content-Type", "")
            body = (b"{}" if json_reply else b"") if status == 200 else reason.encode("utf-8", "replace")
            try:
                self.send_response(status)
                self.send_header("Content-Type", ("application/json" if json_reply else "application/x-protobuf")
                                 if status == 200 else "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                if status != 200:
                    self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(body)
                if status != 200:
                    self._drain()
            except OSError:  # the client is gone: nothing to answer
                self.close_connection = True

        def _drain(self) -> None:
            self.connection.shutdown(socket.SHUT_WR)
            self.connection.settimeout(DRAIN_S)
            left = DRAIN_BYTES
            while left > 0:
                data = self.rfile.read1(min(64 * 1024, left))
                if not data:
                    return
                left -= len(data)

    return Handler
