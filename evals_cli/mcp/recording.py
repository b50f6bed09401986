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
import threading
from pathlib import Path
from typing import Any

from evals_cli.endpoints.context import ReplayMiss
from evals_cli.endpoints.secrets import Redactor
from evals_cli.errors import ConfigError, refuse_newer

VERSION = 1
KIND = "mcp"


def mcp_key(server: str, op: str, request: Any) -> str:
    canonical = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(f"MCP {server} {op}\n{canonical}".encode()).hexdigest()


class Tape:
    """Writes MCP lines to the recording file (appending, one whole line per write, under a lock: calls come
    from the runner's thread and from python agents' threads)."""

    _lock = threading.Lock()

    def __init__(self, path: Path, redact: Redactor) -> None:
        self.path = path
        self.redact = redact

    def write(self, server: str, op: str, request: Any, result: Any, context: str) -> None:
        masked = self.redact.value(request)
        line = {"schema_version": VERSION, "kind": KIND, "key": mcp_key(server, op, masked), "server": server,
                "op": op, "context": self.redact(context), "request": masked, "result": self.redact.value(result)}
        text = json.dumps(line, ensure_ascii=False) + "\n"
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(text)


class Replayed:
    """The MCP lines of a recording file, by key."""

    def __init__(self, path: Path, redact: Redactor) -> None:
        self.path = path
        self.redact = redact
        self.entries: dict[str, list[Any]] = {}
        self.served: dict[str, int] = {}
        self._lock = threading.Lock()
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise ConfigError(f"--replay {path}: cannot read it ({exc.strerror or type(exc).__name__})") from None
        for number, text in enumerate(lines, 1):
            if '"kind": "mcp"' not in text and '"kind":"mcp"' not in text:
                continue
            try:
                entry = json.loads(text)
            except ValueError:
                raise ConfigError(f"{path}:{number}: not a recording line (expected JSON)") from None
            if not isinstance(entry, dict) or entry.get("kind") != KIND:
                continue
            refuse_newer(entry, VERSION, f"{path}:{number}", "MCP recording line")
            if not isinstance(entry.get("key"), str) or "result" not in entry:
                raise ConfigError(f"{path}:{number}: an MCP line without key or result; re-record with --record")
            self.entries.setdefault(entry["key"], []).append(entry["result"])

    def has(self, server: str, op: str, request: Any) -> bool:
        return mcp_key(server, op, self.redact.value(request)) in self.entries

    def next(self, server: str, op: str, request: Any, context: str, what: str) -> Any:
        key = mcp_key(server, op, self.redact.value(request))
        with self._lock:
            found = self.entries.get(key)
            if not found:
                raise ReplayMiss(f"{context}: MCP server '{server}': no recorded {what} in {self.path.name} (the "
                                 "suite, dataset, server or the agent's call changed since recording; re-record "
                                 "with --record)")
            index = min(self.served.get(key, 0), len(found) - 1)
            self.served[key] = index + 1
            return found[index]
