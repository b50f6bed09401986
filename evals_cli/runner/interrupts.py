"""Where Ctrl-C and SIGTERM go while a run runs: to the run of one model (execution.py), or to a run over several
models (models_matrix.py), which takes them for all its models at once and tells each one."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Iterator


@contextlib.contextmanager
def interrupts_to(handler: Callable[[signal.Signals], None]) -> Iterator[None]:
    """SIGINT and SIGTERM go to `handler` while the block runs (one run, or every model's run at once); where the
    loop cannot take signal handlers (not the main thread), nothing is installed."""
    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, handler, sig)
            installed.append(sig)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no such signal
            pass
    try:
        yield
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
