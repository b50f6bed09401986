"""The stand-in for a file a live workspace held but evals-cli did not read back (over the size bound): its
final text is unknown, so no expectation about it can be met or missed (final_state says n/a, naming it)."""

from __future__ import annotations

import re

_NOTE = re.compile(r"\[a file of \d+ bytes, not read back: over \d+ bytes\]")


def note(size: int, limit: int) -> str:
    return f"[a file of {size} bytes, not read back: over {limit} bytes]"


def is_unread(text: object) -> bool:
    return isinstance(text, str) and len(text) < 120 and _NOTE.fullmatch(text) is not None
