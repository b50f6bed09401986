"""Which call is being made (for messages), and the replay-miss error: light, so that error
classification does not import the HTTP stack."""

from __future__ import annotations

from contextvars import ContextVar

CALL_CONTEXT: ContextVar[str] = ContextVar("evals_call_context", default="unknown call")


class ReplayMiss(Exception):
    """A request that the recording does not hold."""
