"""Computer tool calls and sandbox checks in the --record / --replay file, beside the model calls and MCP lines,
so a recorded coding run replays in CI with no sandbox and no model.

A line is `{"kind": "computer", "key", "op", "context", "request", "result"}`. The request names the sample and
the repeat with the call (`bash`, `edit`: its arguments; `check`: its name and argument vector): the same
command gives different output in different episodes, so one episode is never served another's answer, while
the calls of one episode, made one after the other, are served in recorded order (the last one repeating).
Secrets are masked with the run's Redactor before anything is stored or hashed.
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
KIND = "computer"


def computer_key(op: str, request: Any) -> str:
    canonical = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(f"COMPUTER {op}\n{canonical}".encode()).hexdigest()


class ComputerTape:
    """Appends computer lines to the recording file, one whole line per write, under a lock."""

    _lock = threading.Lock()

    def __init__(self, path: Path, redact: Redactor) -> None:
        self.path = path
        self.redact = redact

    def write(self, op: str, request: Any, result: Any, context: str) -> None:
        masked = self.redact.value(request)
        line = {"schema_version": VERSION, "kind": KIND, "key": computer_key(op, masked), "op": op,
                "context": self.redact(context), "request": masked, "result": self.redact.value(result)}
        text = json.dumps(line, ensure_ascii=False) + "\n"
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(text)


class ComputerReplay:
    """The computer lines of a recording file, by key."""

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
            if f'"kind": "{KIND}"' not in text and f'"kind":"{KIND}"' not in text:
                continue
            try:
                entry = json.loads(text)
            except ValueError:
                raise ConfigError(f"{path}:{number}: not a recording line (expected JSON)") from None
            if not isinstance(entry, dict) or entry.get("kind") != KIND:
                continue
            refuse_newer(entry, VERSION, f"{path}:{number}", "computer recording line")
            if not isinstance(entry.get("key"), str) or not isinstance(entry.get("result"), dict):
                raise ConfigError(f"{path}:{number}: a computer line without key or result; re-record with --record")
            self.entries.setdefault(entry["key"], []).append(entry["result"])

    def has(self, op: str, request: Any) -> bool:
        return computer_key(op, self.redact.value(request)) in self.entries

    def next(self, op: str, request: Any, what: str) -> dict[str, Any]:
        key = computer_key(op, self.redact.value(request))
        with self._lock:
            found = self.entries.get(key)
            if not found:
                raise ReplayMiss(f"no recorded {what} in {self.path.name} (the suite, dataset or the agent's call "
                                 "changed since recording; re-record with --record)")
            index = min(self.served.get(key, 0), len(found) - 1)
            self.served[key] = index + 1
            result: dict[str, Any] = found[index]
            return result
