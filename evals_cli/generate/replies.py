"""Rows out of a generator model's reply. Asked for `{"rows": [...]}`, models also answer with a bare list, one
object per line, or any of those in a ```json fence with words around it; each is read. Anything else is a
malformed reply: the request is spent (it counts against the bound) and the reason is printed."""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```[A-Za-z0-9_-]*\s*\n(?P<body>.*?)```", re.S)


class MalformedReply(Exception):
    """The reply holds no rows that can be read: the message says what it held instead."""


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _rows_of(value: Any) -> list[Any] | None:
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        rows = value.get("rows")
        if isinstance(rows, list):
            return rows
        if "goal" in value:  # a single row, not wrapped
            return [value]
    return None


def _lines(text: str) -> list[Any] | None:
    """One JSON object per line (JSONL), blank lines aside."""
    found = [_json(line) for line in text.splitlines() if line.strip()]
    return found if found and all(isinstance(item, dict) for item in found) else None


def _outermost(text: str) -> str | None:
    """From the first { or [ to the last } or ]: a JSON value with words around it."""
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    end = max(text.rfind("}"), text.rfind("]"))
    if not starts or end <= min(starts):
        return None
    return text[min(starts):end + 1]


def read_rows(reply: str) -> list[Any]:
    """The candidate rows of a reply (each still to be checked); MalformedReply when none can be read."""
    text = (reply or "").strip()
    if not text:
        raise MalformedReply("the reply was empty")
    fence = _FENCE.search(text)
    bodies = [fence.group("body").strip()] if fence else []
    bodies.append(text)
    for body in bodies:
        rows = _rows_of(_json(body))
        if rows is None:
            rows = _lines(body)
        if rows is None and (inner := _outermost(body)) is not None:
            rows = _rows_of(_json(inner))
        if rows is not None:
            return rows
    head = text[:120].replace("\n", " ")
    raise MalformedReply(f"the reply is not JSON rows ({{\"rows\": [...]}}, a list, or one object per line): "
                         f"it begins {head!r}")
