"""Small wording rules shared by every message that counts things ("1 session", not "1 sessions")."""

from __future__ import annotations

import json
from typing import Any


def plural(n: int, noun: str, *, count: bool = True) -> str:
    """`noun` agreeing with `n` (regular English plurals only: every noun we count takes an s), with the number
    in front unless `count` is False."""
    word = noun if n == 1 else noun + "s"
    return f"{n} {word}" if count else word


def short(value: Any, limit: int = 60) -> str:
    """A JSON value as a person reads it in a rationale, cut to `limit` characters."""
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
