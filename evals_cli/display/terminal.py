"""Where the display reads its environment (NO_COLOR, COLUMNS): one place, without Rich, for the Rich console
(display/console.py) and the quiet run's plain printing (display/plain.py), which must agree."""

from __future__ import annotations

import os
from typing import IO


def plain(stream: IO[str]) -> bool:
    """Whether the display writes plain text to `stream`: no terminal there, or NO_COLOR set."""
    return not stream.isatty() or bool(os.environ.get("NO_COLOR"))


def plain_width() -> int:
    """The width plain text is wrapped at: COLUMNS, else 160."""
    return int(os.environ.get("COLUMNS", "160"))
