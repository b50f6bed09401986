"""MCP traffic in the --record / --replay file, beside the model calls: each server's tool list, every call
with its result, and each workspace as the episode left it, so a suite with live MCP tools replays offline with
no server started (and grades the same files).

A line is `{"kind": "mcp", "key", "server", "op", "context", "request", "result"}`; the key hashes the server,
the operation and the masked request (as model calls are keyed), so identical calls are served in recorded
order, the last one repeating. The episode's workspace path is written as `{workspace}` both ways, so a
replay in another folder still matches. Secrets are masked with the run's Redactor before anything is stored.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from evals_cli.endpoints.secrets import Redactor
from evals_cli.endpoints.tape_lines import KindLines, LineTape

VERSION = 1
KIND = "mcp"


def mcp_key(server: str, op: str, request: Any) -> str:
    canonical = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(f"MCP {server} {op}\n{canonical}".encode()).hexdigest()


class Tape:
    """Writes MCP lines to the recording file (endpoints/tape_lines.py: one whole line per write, under a lock)."""

    def __init__(self, path: Path, redact: Redactor) -> None:
        self.path = path
        self.redact = redact
        self._tape = LineTape(path)

    def write(self, server: str, op: str, request: Any, result: Any, context: str) -> None:
        masked = self.redact.value(request)
        self._tape.append({"schema_version": VERSION, "kind": KIND, "key": mcp_key(server, op, masked),
                           "server": server, "op": op, "context": self.redact(context), "request": masked,
                           "result": self.redact.value(result)})


class Replayed:
    """The MCP lines of a recording file, by key."""

    def __init__(self, path: Path, redact: Redactor) -> None:
        self.path = path
        self.redact = redact
        self._lines = KindLines(path, KIND, VERSION, "MCP", "an MCP line", lambda entry: "result" in entry)

    def has(self, server: str, op: str, request: Any) -> bool:
        return mcp_key(server, op, self.redact.value(request)) in self._lines

    def next(self, server: str, op: str, request: Any, context: str, what: str) -> Any:
        return self._lines.take(mcp_key(server, op, self.redact.value(request)),
                                f"{context}: MCP server '{server}': no recorded {what} in {self.path.name} (the "
                                "suite, dataset, server or the agent's call changed since recording; re-record "
                                "with --record)")
