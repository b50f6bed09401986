"""The event loop the servers' connections live on, in a daemon thread of its own: the SDK's task groups then
never mix with the runner's tasks, and a sample cancelled by its timeout cannot tear a shared connection down.

Apart from the hub (hub.py) because how a call crosses from one loop to another, and stays deaf to neither
Ctrl-C nor SIGTERM while it waits, is the same whichever server it is for: the run's start and end wait on this
loop (`run`), a sample awaits its calls from the run's loop (`awaited`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import signal
import threading
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

T = TypeVar("T")


class HubLoop:
    """One hub's loop, started on first use (`on_start` is told, once), stopped by `shutdown`."""

    def __init__(self, on_start: Callable[[], None]) -> None:
        self._on_start = on_start
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(target=self._loop.run_forever, name="evals-mcp", daemon=True)
            self._thread.start()
            self._on_start()
        return self._loop

    def run(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        """`coro` run on the loop, waited for from this thread (the run's start and end)."""
        future = asyncio.run_coroutine_threadsafe(coro, self.start())
        return _interruptible(future, timeout + 30)  # the coroutine bounds itself; this guards against a stuck loop

    async def awaited(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        """`coro` run on the hub's loop, awaited from the caller's (the run's) loop without blocking it; the
        caller's cancellation cancels it there. Bounded like `run`."""
        future = asyncio.run_coroutine_threadsafe(coro, self.start())
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), timeout + 30)
        except BaseException:
            future.cancel()
            raise

    def shutdown(self, last: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run `last()` on the loop (what stops the servers still up), then stop the loop and its thread; nothing
        when the loop never started."""
        loop = self._loop
        if loop is None or not loop.is_running():
            return
        with contextlib.suppress(BaseException):
            self.run(last(), 30)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(10)
        if not loop.is_running():
            loop.close()


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """While the servers start (before the run installs its own handlers), SIGTERM is a Ctrl-C: the
    KeyboardInterrupt unwinds through PreparedRun, which stops what was started, instead of killing evals-cli
    with its servers still up."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt()

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class _Interrupted(Exception):
    pass


def _interruptible(future: concurrent.futures.Future[T], timeout: float) -> T:
    """Wait for a call on the hub's loop without deafening the run to Ctrl-C and SIGTERM: the runner's handlers
    live on its event loop, which this wait blocks. A signal meanwhile (the loop still gets it, through its
    wakeup fd, once it runs again) stops the wait and cancels the call; the sample is cancelled, as an
    interrupted one is, and its server is stopped with the others when the run ends."""
    if threading.current_thread() is not threading.main_thread():
        return future.result(timeout)

    def stop_waiting(signum: int, frame: Any) -> None:
        raise _Interrupted()

    previous = {sig: signal.signal(sig, stop_waiting) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        return future.result(timeout)
    except _Interrupted:
        future.cancel()
        raise asyncio.CancelledError("interrupted during an MCP call") from None
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
