"""`evals watch` as a real subprocess for the tests: started on a free loopback port (the one it reports), its
stderr read as it comes, /metrics read with Prometheus' own parser, and every wait bounded."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from tests.helpers import ROOT

_URL = re.compile(r"taking OTLP/HTTP at (\S+)/v1/traces")


def write_watch_suite(tmp: Path, watch: dict[str, Any] | None = None, *, graders: dict[str, Any] | None = None,
                      gate: dict[str, Any] | None = None, extra: dict[str, Any] | None = None,
                      name: str = "live") -> Path:
    """A watch suite: the given graders (default: tool_order, no_loops), a pass-rate gate, a fast `watch:`."""
    suite = {"name": name,
             "graders": graders or {"reads_first": {"kind": "tool_order", "expected": ["read_file"]},
                                    "loops": {"kind": "no_loops", "max_repeats": 2}},
             "gate": gate or {"kind": "weighted_average", "weights": {"reads_first": 1, "loops": 1},
                              "aggregation": "pass_rate", "op": "gte", "value": 0.5, "pass_value": 1.0},
             "watch": {"quiet": "200ms", "evaluate_every": "100ms", "window": {"last": 100, "min_samples": 1},
                       **(watch or {})},
             **(extra or {})}
    path = tmp / "watch.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False))
    return path


STARTED: list[WatchProcess] = []  # every process a test started: the conftest-free fixture below ends them all


class WatchProcess:
    def __init__(self, suite: Path, out: Path, *extra: str, env: dict[str, str] | None = None) -> None:
        full_env = {k: v for k, v in os.environ.items() if not k.startswith(("EVAL_JUDGE_", "OPENAI_"))}
        full_env.update({"NO_COLOR": "1", "COLUMNS": "200", **(env or {})})
        self.proc = subprocess.Popen([sys.executable, "-m", "evals_cli", "watch", str(suite), "-o", str(out),
                                      "--listen", "127.0.0.1:0", *extra], cwd=ROOT, env=full_env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        STARTED.append(self)
        self.lines: list[str] = []
        self._new = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.url = self.wait_line(_URL).group(1)

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            with self._new:
                self.lines.append(line.rstrip("\n"))
                self._new.notify_all()
        with self._new:
            self._new.notify_all()

    def wait_line(self, pattern: re.Pattern[str], timeout: float = 30) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        with self._new:
            while True:
                for line in self.lines:
                    match = pattern.search(line)
                    if match:
                        return match
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self._reader.is_alive()):
                    raise AssertionError(f"evals watch never said {pattern.pattern!r}; it said: {self.lines}")
                self._new.wait(min(left, 0.5))

    def metrics(self, headers: dict[str, str] | None = None) -> dict[str, float]:
        """/metrics as Prometheus parses it: `name{label="v"}` -> value."""
        from prometheus_client.parser import text_string_to_metric_families

        request = urllib.request.Request(f"{self.url}/metrics", headers=headers or {})
        with urllib.request.urlopen(request, timeout=10) as reply:
            text = reply.read().decode()
        out: dict[str, float] = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                labels = ",".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items()))
                out[f"{sample.name}{{{labels}}}" if labels else sample.name] = sample.value
        return out

    def wait_metric(self, name: str, check: Callable[[float], bool], timeout: float = 30) -> dict[str, float]:
        deadline = time.monotonic() + timeout
        seen: dict[str, float] = {}
        while time.monotonic() < deadline:
            seen = self.metrics()
            if name in seen and check(seen[name]):
                return seen
            time.sleep(0.05)
        raise AssertionError(f"{name} never got there: {seen.get(name)}; stderr: {self.lines}")

    def stop(self, sig: signal.Signals = signal.SIGTERM, timeout: float = 60) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        code = self.proc.wait(timeout)
        self._reader.join(10)
        return code

    def wait(self, timeout: float = 60) -> int:
        code = self.proc.wait(timeout)
        self._reader.join(10)
        return code


def end_all() -> None:
    """Kill every watch process a test left running (a failed assertion before its stop), by its own pid."""
    while STARTED:
        watch = STARTED.pop()
        if watch.proc.poll() is None:
            watch.proc.kill()
            watch.proc.wait(30)


def results_of(folder: Path) -> list[dict[str, Any]]:
    """Every result line of every window under `folder`."""
    return [json.loads(line) for path in sorted(folder.rglob("results.jsonl"))
            for line in path.read_text().splitlines() if line.strip()]


class Catcher:
    """A loopback HTTP server that keeps every POST body (a webhook, an OTLP receiver for the exported grades)."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.arrived = threading.Condition()
        catcher = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with catcher.arrived:
                    catcher.bodies.append(body)
                    catcher.arrived.notify_all()
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def wait(self, n: int = 1, timeout: float = 30) -> list[bytes]:
        deadline = time.monotonic() + timeout
        with self.arrived:
            while len(self.bodies) < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{len(self.bodies)} of {n} POSTs arrived")
                self.arrived.wait(left)
            return list(self.bodies)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
