"""The watch endpoint: OTLP/HTTP at POST /v1/traces (JSON or protobuf, gzip or deflate), /metrics and /healthz.

Every body is read with the shared bounds of traces/otlp_body.py (length known and within MAX_BODY, inflated a
step at a time, its decoded size taken before it is decoded) against one bound of bytes held across all the
requests in flight, so a flood is refused (503, the exporter retries later) rather than held. Off loopback the
endpoint is served only over TLS and with a bearer token: spans carry users' conversations.
"""

from __future__ import annotations

import hmac
import ipaddress
import socket
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from evals_cli.errors import ConfigError
from evals_cli.traces.otlp import BadLine, Span, spans_of_request
from evals_cli.traces.otlp_body import MAX_BODY, Refused, body_length, decode, inflate, read_body

READ_TIMEOUT_S = 30.0
HELD_BOUND = 64 * 1024 * 1024  # bytes all requests in flight may hold at once (bodies and their decoded form)


@dataclass(frozen=True)
class Listen:
    host: str
    port: int
    tls_cert: Path | None = None
    tls_key: Path | None = None
    token: str | None = None

    @property
    def loopback(self) -> bool:
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False

    def check(self) -> None:
        """ConfigError (exit 2) for an endpoint that would take conversations in the clear from the network."""
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ConfigError("--tls-cert and --tls-key go together: give both (a PEM certificate chain and its key)")
        if not self.loopback and (self.tls_cert is None or not self.token):
            raise ConfigError(f"--listen {self.host}:{self.port} is not a loopback address: spans carry your users' "
                              "conversations, so off loopback evals watch serves only over TLS with a bearer token; "
                              "give --tls-cert FILE --tls-key FILE and --token (or EVALS_WATCH_TOKEN), or listen on "
                              "127.0.0.1")


def parse_listen(value: str) -> tuple[str, int]:
    """HOST:PORT (IPv6 in brackets: [::1]:4318)."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535 or not host:
        raise ConfigError(f"--listen {value!r}: expected HOST:PORT, e.g. 127.0.0.1:4318 or 0.0.0.0:4318")
    return host.strip("[]"), int(port)


class HeldBytes:
    """The bound of bytes all requests in flight hold; a take past it refuses the request (503)."""

    def __init__(self, bound: int = HELD_BOUND) -> None:
        self.bound, self.held = bound, 0
        self._lock = threading.Lock()

    def take(self, n: int, ticket: list[int]) -> None:
        with self._lock:
            if self.held + n > self.bound:
                raise Refused(503, "evals watch is holding as much as it may; retry later")
            self.held += n
            ticket[0] += n

    def give_back(self, ticket: list[int]) -> None:
        with self._lock:
            self.held -= ticket[0]
        ticket[0] = 0


@dataclass
class Endpoints:
    """What the server hands on: the spans of a request, the metrics text, and whether spans are still taken."""

    spans: Callable[[list[Span]], None]
    metrics: Callable[[], str]
    taking: Callable[[], bool]
    refused: Callable[[int], None]  # a request refused, by status


class WatchServer:
    def __init__(self, listen: Listen, endpoints: Endpoints) -> None:
        listen.check()
        self.listen, self.endpoints, self.held = listen, endpoints, HeldBytes()
        self.httpd = ThreadingHTTPServer((listen.host, listen.port), _handler(self))
        self.httpd.daemon_threads = True
        if listen.tls_cert is not None and listen.tls_key is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            try:
                context.load_cert_chain(str(listen.tls_cert), str(listen.tls_key))
            except (OSError, ssl.SSLError) as exc:
                self.httpd.server_close()
                raise ConfigError(f"--tls-cert {listen.tls_cert} / --tls-key {listen.tls_key}: cannot be loaded "
                                  f"({exc}); give a PEM certificate chain and its private key") from None
            self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="evals-watch-http", daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        scheme = "https" if self.listen.tls_cert is not None else "http"
        text = host.decode() if isinstance(host, bytes) else str(host)
        shown = f"[{text}]" if ":" in text else text
        return f"{scheme}://{shown}:{port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def authorised(self, header: str | None) -> bool:
        token = self.listen.token
        if not token:
            return True
        return header is not None and hmac.compare_digest(header.encode(), f"Bearer {token}".encode())

    def receive(self, headers: Any, rfile: Any) -> tuple[int, str]:
        if not self.endpoints.taking():
            return 503, "evals watch is stopping; send the spans to another replica"
        ticket = [0]
        try:
            take = lambda n: self.held.take(n, ticket)  # noqa: E731
            raw = read_body(rfile, body_length(headers), MAX_BODY, take)
            raw = inflate(raw, headers.get("Content-Encoding", ""), MAX_BODY, take)
            request = decode(raw, headers.get("Content-Type", ""), take)
            spans = spans_of_request(request, "live")
        except Refused as refused:
            return refused.status, refused.reason
        except BadLine as exc:
            return 400, f"an OTLP export request could not be read: {exc}"
        finally:
            self.held.give_back(ticket)
        self.endpoints.spans(spans)
        return 200, ""


def _handler(server: WatchServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        timeout = READ_TIMEOUT_S
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # what the watch says is its own lines, not an access log
            return

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0].rstrip("/")
            if path == "/healthz":
                self._answer(200, "ok\n", "text/plain; charset=utf-8")
            elif path == "/metrics":
                if not server.authorised(self.headers.get("Authorization")):
                    self._answer(401, "a bearer token is required (Authorization: Bearer ...)\n")
                    return
                from evals_cli.watch.metrics import CONTENT_TYPE

                self._answer(200, server.endpoints.metrics(), CONTENT_TYPE)
            else:
                self._answer(404, "evals watch serves POST /v1/traces, GET /metrics and GET /healthz\n")

        def do_POST(self) -> None:
            if self.path.split("?", 1)[0].rstrip("/") != "/v1/traces":
                self._refuse(404, "evals watch takes spans at /v1/traces only")
                return
            if not server.authorised(self.headers.get("Authorization")):
                self._refuse(401, "a bearer token is required (Authorization: Bearer ...)")
                return
            status, reason = server.receive(self.headers, self.rfile)
            if status != 200:
                self._refuse(status, reason)
                return
            json_reply = "json" in self.headers.get("Content-Type", "")
            self._answer(200, "{}" if json_reply else "", "application/json" if json_reply else
                         "application/x-protobuf")

        def _refuse(self, status: int, reason: str) -> None:
            server.endpoints.refused(status)
            self.close_connection = True
            self._answer(status, reason + "\n")

        def _answer(self, status: int, body: str, content_type: str = "text/plain; charset=utf-8") -> None:
            data = body.encode("utf-8", "replace")
            try:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                if self.close_connection:
                    self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(data)
                if status >= 400 and self.close_connection:
                    self.connection.shutdown(socket.SHUT_WR)
            except OSError:
                self.close_connection = True

    return Handler
