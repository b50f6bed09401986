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
from pathlib import Path
from typing import Any

from evals_cli.endpoints.secrets import Redactor
from evals_cli.endpoints.tape_lines import KindLines, LineTape

VERSION = 1
KIND = "computer"


def computer_key(op: str, request: Any) -> str:
    canonical = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(f"COMPUTER {op}\n{canonical}".encode()).hexdigest()


class ComputerTape:
    """Appends computer lines to the recording file (endpoints/tape_lines.py: one whole line per write, under a
    lock)."""

    def __init__(self, path: Path, redact: Redactor) -> None:
        self.path = path
        self.redact = redact
        self._tape = LineTape(path)

    def write(self, op: str, request: Any, result: Any, context: str) -> None:
        masked = self.redact.value(request)
        self._tape.append({"schema_version": VERSION, "kind": KIND, "key": computer_key(op, masked), "op": op,
                           "context": self.redact(context), "request": masked, "result": self.redact.value(result)})


class ComputerReplay:
    """The computer lines of a recording file, by key."""

    def __init__(self, path: Path, redact: Redactor) -> None:
        self.path = path
        self.redact = redact
        self._lines = KindLines(path, KIND, VERSION, "computer", "a computer line",
                                lambda entry: isinstance(entry.get("result"), dict))

    def has(self, op: str, request: Any) -> bool:
        return computer_key(op, self.redact.value(request)) in self._lines

    def next(self, op: str, request: Any, what: str) -> dict[str, Any]:
        result: dict[str, Any] = self._lines.take(
            computer_key(op, self.redact.value(request)),
            f"no recorded {what} in {self.path.name} (the suite, dataset or the agent's call changed since "
            "recording; re-record with --record)")
        return result
