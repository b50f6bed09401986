"""Lines of a kind of their own in the --record / --replay file, beside the model calls (MCP traffic, computer
tool calls and checks): appended whole under a lock, and read back by key, the entries of one key served in
recorded order with the last one repeating. Each kind brings its key and its line's fields (mcp/recording.py,
computer/recording.py); how lines are written and served is said once here."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evals_cli.endpoints.context import ReplayMiss
from evals_cli.errors import ConfigError, refuse_newer


class LineTape:
    """Appends lines to the recording file, one whole line per write, under a lock shared by every tape: calls
    come from the runner's thread and from python agents' threads."""

    _lock = threading.Lock()

    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, line: dict[str, Any]) -> None:
        text = json.dumps(line, ensure_ascii=False) + "\n"
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(text)


class KindLines:
    """The lines of one `kind` in a recording file, their results by key. `label` names the kind in messages
    ("MCP", "computer") and `a_line` one of its lines ("an MCP line"); `result_ok` says whether a line's result has
    the shape its kind stores."""

    def __init__(self, path: Path, kind: str, version: int, label: str, a_line: str,
                 result_ok: Callable[[dict[str, Any]], bool]) -> None:
        self.path = path
        self.entries: dict[str, list[Any]] = {}
        self.served: dict[str, int] = {}
        self._lock = threading.Lock()
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise ConfigError(f"--replay {path}: cannot read it ({exc.strerror or type(exc).__name__})") from None
        for number, text in enumerate(lines, 1):
            if f'"kind": "{kind}"' not in text and f'"kind":"{kind}"' not in text:
                continue
            try:
                entry = json.loads(text)
            except ValueError:
                raise ConfigError(f"{path}:{number}: not a recording line (expected JSON)") from None
            if not isinstance(entry, dict) or entry.get("kind") != kind:
                continue
            refuse_newer(entry, version, f"{path}:{number}", f"{label} recording line")
            if not isinstance(entry.get("key"), str) or not result_ok(entry):
                raise ConfigError(f"{path}:{number}: {a_line} without key or result; re-record with --record")
            self.entries.setdefault(entry["key"], []).append(entry["result"])

    def __contains__(self, key: str) -> bool:
        return key in self.entries

    def take(self, key: str, miss: str) -> Any:
        """The next recorded result of `key` (the last one again once all were served); ReplayMiss(`miss`) when
        the recording holds none."""
        with self._lock:
            found = self.entries.get(key)
            if not found:
                raise ReplayMiss(miss)
            index = min(self.served.get(key, 0), len(found) - 1)
            self.served[key] = index + 1
            return found[index]
