"""The JSON Lines skeleton every reader of user files shares (datasets, recorded sessions): one row per line,
streamed, blank lines skipped, and every unreadable line turned into a problem naming file:line instead of an
exception, so a file with many broken rows reports them all at once."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from evals_cli.suite.problems import clip

BOM = b"\xef\xbb\xbf"

Line = tuple[str, int, Any, str | None]
"""(file:line, line number, the parsed value, None) or (file:line, line number, None, the problem)."""


def json_problem(exc: Exception, where: str, jsonl: bool, unit: str = "JSON object") -> str:
    """Why JSON could not be read, without a traceback: syntax, nesting past the parser's depth, an integer past
    Python's digit limit, NaN/Infinity. `unit` is what one JSONL line must hold ("JSON object", "session")."""
    if isinstance(exc, json.JSONDecodeError):
        more = f" (JSONL needs one complete {unit} per line)" if jsonl else ""
        return f"{where}: invalid JSON at column {exc.colno}: {exc.msg}{more}"
    if isinstance(exc, RecursionError):
        return f"{where}: the JSON is nested too deeply to read; flatten it (a sample needs only a few levels)"
    text = str(exc)
    if "digits" in text:
        return (f"{where}: a number has more than {sys.get_int_max_str_digits()} digits, more than Python reads; "
                "write long ids as strings")
    return f"{where}: invalid JSON: {clip(text, 200)}"


def iter_jsonl(path: Path, *, unit: str, utf8_fix: str, loads: Callable[[str], Any] = json.loads,
               skip_bom: bool = False, seen: Callable[[bytes, int], None] | None = None) -> Iterator[Line]:
    """Every non-blank line of a JSONL file, parsed, or the problem that kept it from parsing. `utf8_fix` ends
    the message for a line that is not UTF-8; `skip_bom` drops a byte-order mark before the first line.
    `seen(raw bytes, offset)` hears every line as read, blank ones too, before it is parsed (so the last call
    before a yield is that row's): what a caller needs to hash the file or find a row again without reading
    the file twice."""
    offset = 0
    with path.open("rb") as fh:
        for number, raw_line in enumerate(fh, 1):
            if seen is not None:
                seen(raw_line, offset)
                offset += len(raw_line)
            where = f"{path}:{number}"
            if skip_bom and number == 1 and raw_line.startswith(BOM):
                raw_line = raw_line[len(BOM):]
            if not raw_line.strip():
                continue
            try:
                text = raw_line.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield where, number, None, f"{where}: not valid UTF-8 (byte {exc.start} of the line); {utf8_fix}"
                continue
            try:
                yield where, number, loads(text), None
            except (ValueError, RecursionError) as exc:  # syntax, nesting past the parser's depth, a huge integer
                yield where, number, None, json_problem(exc, where, jsonl=True, unit=unit)
