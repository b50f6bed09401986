"""The HTTP side of the OTLP receiver (receiver.py): a threading server on 127.0.0.1 whose handler takes
`POST /v1/traces`, asks a bound receiver whose episode the connection is before anything of it is read, and
answers what the receiver decided. A connection that fails is counted as the receiver's problem, never printed:
nothing of a broken client reaches the run's output."""

from __future__ import annotations

import socket
import sys
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import BufferedIOBase
from typing import Any, Protocol

READ_TIMEOUT_S = 10.0  # a client silent this long mid-request is dropped (408)
DRAIN_BYTES = 1024 * 1024  # an unread body is read and dropped up to this much before the connection is closed
DRAIN_S = 0.2


class Receiving(Protocol):
    """What the server asks of the receiver it serves."""

    @property
    def bound(self) -> bool: ...

    def arrive(self) -> int: ...

    def leave(self, arrival: int) -> None: ...

    def problem(self, text: str) -> None: ...

    def place(self, client: tuple[str, int]) -> tuple[str | None, str]: ...

    def refuse_foreign(self, link: str) -> str: ...

    def receive(self, headers: Message, rfile: BufferedIOBase, episode: str | None = None) -> tuple[int, str]: ...


def serve(address: tuple[str, int], receiver: Receiving) -> ThreadingHTTPServer:
    """The server bound to `address` (OSError when it cannot listen), not yet serving."""
    return _Server(address, _handler(receiver), receiver)


class _Server(ThreadingHTTPServer):
    """The receiver's server: a connection that fails is counted as the receiver's problem, never printed."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler],
                 receiver: Receiving) -> None:
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


def _handler(receiver: Receiving) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        timeout = READ_TIMEOUT_S  # each read of the socket (a silent client is dropped)

        def log_message(self, *args: Any) -> None:  # the run's output is the report, not an access log
            return

        def do_POST(self) -> None:
            if self.path.rstrip("/") != "/v1/traces":
                self._answer(404, "the receiver takes spans at /v1/traces only")
                return
            episode = None
            if receiver.bound:  # bound: the kernel says whose process sent it, before it is read
                episode, link = receiver.place(self.client_address)
                if episode is None:
                    self._answer(403, receiver.refuse_foreign(link))
                    return
            status, reason = receiver.receive(self.headers, self.rfile, episode)
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
