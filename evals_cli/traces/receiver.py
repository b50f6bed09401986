"""A loopback OTLP/HTTP trace receiver: an external agent (a command or an HTTP agent) exports its spans here while
it runs, and each episode takes back the spans tagged with its id, so its trajectory is rebuilt from what the
agent itself reported (the same reader as trace files: conversations.py).

It listens on 127.0.0.1 only, takes `POST /v1/traces` as OTLP/JSON or OTLP/protobuf (the OpenTelemetry SDK's
default, `http/protobuf`, decoded with the `opentelemetry-proto` package of the `otel` extra), bounds every body,
and keeps each request as OTLP/JSON (what a recording stores and replays). An episode's spans are those whose
resource carries `evals.episode=<id>` (a command agent: evals-cli sets OTEL_RESOURCE_ATTRIBUTES) or whose trace
holds a span naming the id as its session (`session.id`, `gen_ai.conversation.id`: an HTTP agent given the id).
"""

from __future__ import annotations

import gzip
import json
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from evals_cli.errors import ConfigError
from evals_cli.traces.otlp import BadLine, Span, spans_of_request

EPISODE_ATTRIBUTE = "evals.episode"
SESSION_ATTRIBUTES = ("session.id", "gen_ai.conversation.id")
MAX_BODY = 16 * 1024 * 1024  # one export request; a bigger one is refused (413), never read whole
INSTALL_OTEL = "pip install 'evals-cli[otel]'"


def protobuf_decoder() -> Any:
    """The protobuf message class of an export request; ConfigError naming the install command without it."""
    try:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    except ImportError:
        raise ConfigError(f"target.telemetry: receiving OpenTelemetry spans needs the opentelemetry-proto package; "
                          f"install it with {INSTALL_OTEL}, or set telemetry: false to grade the replies "
                          "alone") from None
    return ExportTraceServiceRequest


def decode_body(raw: bytes, content_type: str, encoding: str) -> dict[str, Any]:
    """One export request as OTLP/JSON (ids in hex or base64, both read by otlp.py)."""
    if encoding == "gzip":
        raw = gzip.decompress(raw)
    elif encoding == "deflate":
        raw = zlib.decompress(raw)
    if "json" in content_type:
        data = json.loads(raw.decode("utf-8"))
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        return data
    from google.protobuf.json_format import MessageToDict  # type: ignore[import-untyped]

    message = protobuf_decoder()()
    message.ParseFromString(raw)
    return dict(MessageToDict(message))


class OtlpReceiver:
    """The run's receiver (one per target, started on first use); thread-safe, its server in a daemon thread."""

    def __init__(self, port: int = 0) -> None:
        self.port = port
        self.requests: list[dict[str, Any]] = []
        # each request's resources with their spans, parsed once on arrival: every episode looks through them all
        self._resources: list[list[tuple[dict[str, Any], list[Span]]]] = []
        self.problems: list[str] = []
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
                self._server = ThreadingHTTPServer(("127.0.0.1", self.port), _handler(self))
            except OSError as exc:
                raise ConfigError(f"target.otlp_port: cannot listen on 127.0.0.1:{self.port} for the agent's spans "
                                  f"({exc.strerror or exc}); free the port or choose another otlp_port") from None
            self._server.daemon_threads = True
            threading.Thread(target=self._server.serve_forever, name="otlp-receiver", daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def accept(self, request: dict[str, Any]) -> None:
        resources = [(rs, _spans({"resourceSpans": [rs]})) for rs in request.get("resourceSpans") or []
                     if isinstance(rs, dict)]
        with self.changed:
            self.requests.append(request)
            self._resources.append(resources)
            self.changed.notify_all()

    def problem(self, text: str) -> None:
        with self.changed:
            self.problems.append(text)
            self.changed.notify_all()

    def requests_for(self, tag: str, trace_ids: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
        """The export requests that hold spans of episode `tag` (or of the traces evals-cli started for it, by the
        traceparent it sent), each cut down to those spans' resources."""
        with self.changed:
            held = list(self._resources)
        traces = {span.trace_id for resources in held for _, spans in resources for span in spans
                  if _names_session(span, tag)}
        traces |= trace_ids
        out = []
        for resources in held:
            kept = [rs for rs, spans in resources
                    if any(_resource_tag(span) == tag or span.trace_id in traces for span in spans)]
            if kept:
                out.append({"resourceSpans": kept})
        return out

    def wait_quiet(self, tag: str, quiet_s: float, bound_s: float, trace_ids: frozenset[str] = frozenset()) -> None:
        """Until spans of `tag` arrived and nothing came for `quiet_s` (an HTTP agent's exporter sends in batches
        after its reply), at most `bound_s`. Woken by each request (a condition, not a poll)."""
        deadline = time.monotonic() + bound_s
        with self.changed:
            while True:
                seen = len(self.requests)
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self.changed.wait(min(quiet_s, left))
                if len(self.requests) == seen and time.monotonic() < deadline and self._has(tag, trace_ids):
                    return

    def _has(self, tag: str, trace_ids: frozenset[str]) -> bool:
        return any(_names_session(s, tag) or s.trace_id in trace_ids
                   for resources in self._resources for _, spans in resources for s in spans)


def _spans(request: dict[str, Any]) -> list[Span]:
    try:
        return spans_of_request(request, "otlp receiver")
    except BadLine:
        return []


def _resource_tag(span: Span) -> str | None:
    value = span.resource.get(EPISODE_ATTRIBUTE)
    return str(value) if value is not None else None


def _names_session(span: Span, tag: str) -> bool:
    return _resource_tag(span) == tag or any(str(span.attributes.get(key)) == tag for key in SESSION_ATTRIBUTES
                                             if span.attributes.get(key) is not None)


def _handler(receiver: OtlpReceiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # the run's output is the report, not an access log
            return

        def do_POST(self) -> None:
            content_type = self.headers.get("Content-Type", "application/x-protobuf")
            length = int(self.headers.get("Content-Length") or 0)
            if self.path.rstrip("/") != "/v1/traces" or length > MAX_BODY:
                self.send_error(404 if length <= MAX_BODY else 413)
                return
            raw = self.rfile.read(length)
            try:
                request = decode_body(raw, content_type, self.headers.get("Content-Encoding", ""))
                spans_of_request(request, "otlp receiver")  # refused here, not later: the agent's log says why
            except ConfigError as exc:
                receiver.problem(str(exc))
                self.send_error(415, str(exc).splitlines()[0][:200])
                return
            except (BadLine, ValueError, UnicodeDecodeError, OSError, Exception) as exc:  # noqa: BLE001 (any bad body)
                receiver.problem(f"an OTLP export request could not be read: {str(exc)[:200]}")
                self.send_error(400)
                return
            receiver.accept(request)
            json_reply = "json" in content_type
            body = b"{}" if json_reply else b""
            self.send_response(200)
            self.send_header("Content-Type", "application/json" if json_reply else "application/x-protobuf")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler
