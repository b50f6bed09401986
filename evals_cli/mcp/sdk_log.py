"""What the MCP SDK logs, as one warning line naming the server instead of a traceback on the terminal.

The SDK logs the faults of a server it can survive (an event it cannot parse, a notification that fails
validation) with `logger.exception`; with no handler configured, Python prints each with its traceback to
stderr, in the middle of the run's progress, naming no server. Here a handler on the SDK's loggers prints
WARNING and above as `warning: MCP server 'NAME': <message> (<exception>)`, the server taken from the task that
runs the connection (`SERVER`, set by evals_cli/mcp/connection.py; the SDK's tasks inherit it)."""

from __future__ import annotations

import logging
import sys
from contextvars import ContextVar

SERVER: ContextVar[str | None] = ContextVar("evals_mcp_server", default=None)
MAX_CHARS = 300


class OneLine(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(line(record) + "\n")
        except Exception:  # noqa: BLE001 - logging must never break the run
            self.handleError(record)


def line(record: logging.LogRecord) -> str:
    from evals_cli.endpoints.secrets import mask_patterns

    server = SERVER.get()
    exc = record.exc_info[1] if record.exc_info else None
    why = f" ({type(exc).__name__}: {str(exc)[:MAX_CHARS]})" if exc is not None and str(exc) else (
        f" ({type(exc).__name__})" if exc is not None else "")
    who = f"MCP server '{server}'" if server else "MCP client"
    text = " ".join(f"{record.getMessage()[:MAX_CHARS]}{why}".split())  # one line, whatever the SDK wrote
    return mask_patterns(f"warning: {who}: {text}")


LOGGERS = ("mcp", "client")  # the SDK's modules log under their own names, its client session under "client"


def install() -> None:
    """Put the handler on the SDK's loggers once; their records no longer reach Python's last-resort printer."""
    for name in LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(h, OneLine) for h in logger.handlers):
            logger.addHandler(OneLine(logging.WARNING))
            logger.propagate = False
