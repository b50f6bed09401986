"""`evals view`: the history of a results folder and every run's report, served on this machine only.

The standard library's http.server on 127.0.0.1 (nothing to install; nobody else on the network can read the
runs). Every request scans the folder again, so a run that starts or ends shows at the next reload, and a page
of a run in flight reloads itself. Only runs the scan finds are served: an address never becomes a path.

The pages themselves (pages.py: the history page, and each run's report by the renderers of `evals report
--html`) are handed over by `evals view`: serving a folder on this machine does not depend on how a report is
drawn.
"""

from __future__ import annotations

import errno
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

from evals_cli.errors import ConfigError
from evals_cli.history.entries import RunEntry, Trend, trends
from evals_cli.history.runs import inside, read_run, scan_runs

HOST = "127.0.0.1"
MAX_POST = 64 * 1024  # one label line, with a note


class Pages(Protocol):
    """What the viewer serves (the module `evals_cli.history.pages` is one): the history of the folder, and the
    report of one run the scan found."""

    def history_page(self, entries: list[RunEntry], found: list[Trend], root: str) -> str: ...

    def run_page(self, entry: RunEntry, folder: Path, rel: str) -> str: ...

    def save_label(self, entry: RunEntry, body: bytes) -> tuple[int, str]:
        """A label clicked in a run's report, into the run's labels.jsonl: (HTTP status, what to tell the page)."""
        ...


def _lookup(root: Path, rel: str) -> RunEntry | None:
    """The run (or the model of a run over several models) named `rel`, as the scan finds it."""
    for entry in scan_runs(root):
        if entry.rel == rel:
            return entry
        for line in entry.per_model:
            folder = (entry.path / line.folder).resolve()
            # matrix.json names the folder: one that leads out of the root (`../..`) is never served
            if f"{entry.rel}/{line.folder}" == rel and inside(folder, root):
                return read_run(folder, root.resolve())
    return None


class HistoryServer:
    """Serves `root`'s `pages` on 127.0.0.1:`port` (0: a free port; `url` says which). `serve_forever()` until
    `shutdown()` (from another thread) or Ctrl-C (`serve_until_interrupted`)."""

    def __init__(self, root: Path, port: int = 0, *, pages: Pages) -> None:
        if not root.is_dir():
            raise ConfigError(f"{root}: no such folder; give the folder your runs are written to (default: results)")
        self.root = root = root.resolve()  # `results`, the default, is relative: every path found is compared with it
        handler = _handler(root, pages)
        try:
            self.httpd = _Server((HOST, port), handler)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ConfigError(f"--port {port}: already in use on {HOST}; choose another port, or --port 0 for "
                                  "any free one") from None
            raise ConfigError(f"--port {port}: cannot listen on {HOST} ({exc.strerror or exc})") from None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.httpd.server_address[1]}/"

    def serve_forever(self) -> None:
        self.httpd.serve_forever(poll_interval=0.1)

    def serve_until_interrupted(self) -> None:
        """Serve in this thread until Ctrl-C; the port is closed on the way out."""
        try:
            self.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            self.httpd.server_close()

    def start(self) -> HistoryServer:
        """Serve from a thread of its own (tests, Python callers); `shutdown()` stops it."""
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def shutdown(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class _Server(ThreadingHTTPServer):
    daemon_threads = True


def _local_host(header: str | None) -> bool:
    """The Host header names this machine: a web page elsewhere that rebinds its own name to 127.0.0.1
    (DNS rebinding) sends its own name, and must not read the runs' prompts and answers."""
    host = (header or "").strip().lower()
    name = host.rsplit(":", 1)[0] if not host.startswith("[") else host.split("]")[0] + "]"
    return name in ("127.0.0.1", "localhost", "[::1]")


def _respond(handler: BaseHTTPRequestHandler, status: int, body: str, kind: str) -> None:
    data = body.encode("utf-8")
    handler.send_response(status)
    handler.send_header("Content-Type", kind)
    handler.send_header("Content-Length", str(len(data)))
    handler.send_header("Cache-Control", "no-store")  # a run in flight changes between two loads
    handler.end_headers()
    try:
        handler.wfile.write(data)
    except (BrokenPipeError, ConnectionResetError):
        pass


def _handler(root: Path, pages: Pages) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "evals-view"

        def log_message(self, *args: Any) -> None:  # the terminal shows where to look, not every request
            pass

        def do_GET(self) -> None:
            if not _local_host(self.headers.get("Host")):
                self._send(403, "evals view answers only requests addressed to 127.0.0.1 or localhost", "text/plain")
                return
            path = unquote(urlsplit(self.path).path)
            try:
                if path in ("/", "/index.html"):
                    entries = scan_runs(root)
                    self._send(200, pages.history_page(entries, trends(entries), str(root)))
                elif path == "/runs.json":
                    entries = scan_runs(root)
                    self._send(200, json.dumps([e.as_json() for e in entries], indent=2), "application/json")
                elif path.startswith("/run/"):
                    self._run(path[len("/run/"):].strip("/"))
                else:
                    self._send(404, _not_found(path))
            except Exception as exc:  # one page failing must not stop the viewer
                self._send(500, f"<!doctype html><p>could not render {_esc(path)}: {_esc(type(exc).__name__)}: "
                                f"{_esc(str(exc))}</p><p><a href='/'>all runs</a></p>")

        def do_POST(self) -> None:
            status, text = _post_label(self, root, pages)
            self._send(status, text, "text/plain; charset=utf-8")

        def _run(self, rel: str) -> None:
            entry = _lookup(root, rel or ".")
            if entry is None:
                self._send(404, _not_found(f"/run/{rel}/"))
                return
            self._send(200, pages.run_page(entry, entry.path, entry.rel))

        def _send(self, status: int, body: str, kind: str = "text/html; charset=utf-8") -> None:
            _respond(self, status, body, kind)

    return Handler


def _same_origin(request: BaseHTTPRequestHandler) -> bool:
    """A POST from this viewer's own pages: its Origin is this Host (a page of another site, even one that rebinds
    its name to 127.0.0.1, sends its own Origin; a browser always sends Origin on a POST)."""
    origin = (request.headers.get("Origin") or "").strip().lower()
    host = (request.headers.get("Host") or "").strip().lower()
    site = (request.headers.get("Sec-Fetch-Site") or "same-origin").strip().lower()
    return bool(host) and origin == f"http://{host}" and site == "same-origin"


def _post_label(request: Any, root: Path, pages: Pages) -> tuple[int, str]:
    """A label clicked in a run's report, POSTed to /run/RUN/labels: (status, what to tell the page). Only from
    this viewer's own pages, addressed to this machine, one small JSON object, for a run the scan finds."""
    path = unquote(urlsplit(request.path).path)
    if not _local_host(request.headers.get("Host")) or not _same_origin(request):
        return 403, ("evals view saves labels only from its own pages (same origin, addressed to 127.0.0.1 or "
                     "localhost)")
    if not (path.startswith("/run/") and path.rstrip("/").endswith("/labels")):
        return 404, "no such address; labels are posted to /run/RUN/labels"
    length = request.headers.get("Content-Length") or ""
    if not length.isdigit() or int(length) > MAX_POST:
        return 413, f"a label is one JSON object of at most {MAX_POST} bytes"
    if not (request.headers.get("Content-Type") or "").lower().startswith("application/json"):
        return 415, "post a label as application/json"
    body = request.rfile.read(int(length))
    entry = _lookup(root, path[len("/run/"):].rstrip("/")[: -len("/labels")].strip("/") or ".")
    if entry is None:
        return 404, "no such run under this folder"
    try:
        return pages.save_label(entry, body)
    except Exception as exc:  # one request failing must not stop the viewer
        return 500, f"{type(exc).__name__}: {exc}"


def _esc(text: str) -> str:
    import html

    return html.escape(text)


def _not_found(path: str) -> str:
    return (f"<!doctype html><title>not found</title><p>{_esc(path)}: no such run under this folder (it may have "
            "been moved or deleted).</p><p><a href='/'>all runs</a></p>")
