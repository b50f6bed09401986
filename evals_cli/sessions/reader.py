"""Read a session file: JSONL (one session per line, streamed), a JSON list of sessions, or one JSON session.

Every problem names the file and the line the session starts on, and the field, like the dataset reader:
recordings are exported by other tools, and "line 5312: turns.2.agent_interactions.0.agent_id" is what makes
a broken export fixable. `.jsonl` files are always read as JSONL; otherwise a file whose first line is a
whole JSON object is JSONL, one starting with '[' a list, anything else a single (pretty-printed) session.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from evals_cli.datasets.jsonl import iter_jsonl, json_problem
from evals_cli.errors import ConfigError
from evals_cli.sessions.models import AgentSession
from evals_cli.suite.problems import format_validation_error
from evals_cli.suite.yaml_file import read_text

Row = tuple[str, AgentSession | list[str]]  # ("file:line", the session or its problems)


def _validate(raw: Any, where: str) -> AgentSession | list[str]:
    if not isinstance(raw, dict):
        return [f"{where}: expected a session object (id, task, agents, turns), got {type(raw).__name__}"]
    try:
        return AgentSession.model_validate(raw)
    except ValidationError as exc:
        named = f"{where}: session {raw['id']!r}" if isinstance(raw.get("id"), str) else where
        return format_validation_error(exc, AgentSession, named)


def _first_line(path: Path) -> str:
    with path.open("rb") as fh:
        for raw in fh:
            if raw.strip():
                return raw.decode("utf-8", "replace").strip()
    return ""


def _is_jsonl(path: Path, first: str) -> bool:
    if path.suffix == ".jsonl":
        return True
    if not first.startswith("{"):
        return False
    try:
        return isinstance(json.loads(first), dict)
    except (ValueError, RecursionError):  # too deep or a huge integer: _jsonl reports it at its line
        return first.endswith("}")


def _jsonl(path: Path) -> Iterator[Row]:
    for where, _, raw, problem in iter_jsonl(path, unit="session", utf8_fix="save the file as UTF-8"):
        yield where, [problem] if problem is not None else _validate(raw, where)


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _json(path: Path) -> Iterator[Row]:
    text = read_text(path, "session file")
    decoder = json.JSONDecoder()
    pos = _skip(text, 0)
    try:
        if not text.startswith("[", pos):
            value, end = decoder.raw_decode(text, pos)
            if text[_skip(text, end):].strip():
                raise json.JSONDecodeError("extra data after the session", text, _skip(text, end))
            yield f"{path}:{text.count(chr(10), 0, pos) + 1}", _validate(value, f"{path}:{text.count(chr(10), 0, pos) + 1}")
            return
        pos, line, counted = _skip(text, pos + 1), 1, 0
        while pos < len(text) and text[pos] != "]":
            value, end = decoder.raw_decode(text, pos)
            line, counted = line + text.count("\n", counted, pos), pos
            where = f"{path}:{line}"
            yield where, _validate(value, where)
            pos = _skip(text, end)
            if text.startswith(",", pos):
                pos = _skip(text, pos + 1)
            elif not text.startswith("]", pos):
                raise json.JSONDecodeError("expected ',' or ']' after a session", text, pos)
        if pos >= len(text):
            raise json.JSONDecodeError("the list is not closed with ']'", text, pos)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}: invalid JSON at column {exc.colno}: {exc.msg}") from None
    except (ValueError, RecursionError) as exc:  # nested past the parser's depth, an integer too long
        raise ConfigError(json_problem(exc, str(path), jsonl=False)) from None


def iter_rows(path: Path) -> Iterator[Row]:
    """Every session of the file, lazily (JSONL) or from the parsed file (JSON), or its problems."""
    if not path.is_file():
        raise ConfigError(f"{path}: session file not found; check the path")
    first = _first_line(path)
    yield from (_jsonl(path) if _is_jsonl(path, first) else _json(path))


def iter_sessions(path: Path) -> Iterator[AgentSession]:
    """Valid sessions, lazily; the first invalid one raises ConfigError naming file:line and field."""
    for _, row in iter_rows(path):
        if isinstance(row, list):
            raise ConfigError(row)
        yield row


def check_sessions(path: Path, limit: int = 50) -> tuple[int, list[str]]:
    """(valid sessions, problems): every row read once, at most `limit` problems listed, ids unique."""
    count, extra = 0, 0
    problems: list[str] = []
    seen: dict[str, str] = {}
    for where, row in iter_rows(path):
        found = row if isinstance(row, list) else []
        if not isinstance(row, list):
            count += 1
            if row.id in seen:
                found = [f"{where}: duplicate session id {row.id!r} (first at line {seen[row.id].rsplit(':', 1)[-1]}); "
                         "give every session a unique id"]
            seen.setdefault(row.id, where)
        if len(problems) + len(found) <= limit:
            problems += found
        else:
            extra += len(found)
    if extra:
        problems.append(f"{path}: ... and {extra} more problems")
    if count == 0 and not problems:
        problems.append(f"{path}: the file holds no session")
    return count, problems
