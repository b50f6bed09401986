"""Worker threads: a custom call is awaited, never run on the run's event loop. A sync function runs in a daemon
thread of its own, an async one on one event loop kept on a thread of its own for custom code, and the run's
loop only awaits the result, up to the sample's deadline (`SAMPLE_DEADLINE`); past it, or when the sample is
cancelled, the call is given up on (a sync one gets `Abandoned` raised in its thread).

Apart from containment (containment.py), which each call runs under, because this is about time and threads:
whether a call may end the run is not the same question as how long the run waits for it.
"""

from __future__ import annotations

import contextvars
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from evals_cli.custom_code.containment import EXIT_GUARD, CustomCodeError, contained, run_guarded

if TYPE_CHECKING:  # imported where used: `evals --help` holds the guard and needs no event loop
    import asyncio

SAMPLE_DEADLINE: contextvars.ContextVar[tuple[float, float] | None] = contextvars.ContextVar(
    "evals_sample_deadline", default=None)
"""(time.monotonic() deadline, the sample_timeout it comes from) of the sample being run; set by the runner at
the start of each sample, None when the sample has no time limit."""


def _remaining() -> tuple[float, float] | None:
    """(seconds left, the sample_timeout) of the sample being run; None without a time limit."""
    deadline = SAMPLE_DEADLINE.get()
    if deadline is None:
        return None
    return max(deadline[0] - time.monotonic(), 0.0), deadline[1]


def _timed_out(where: str, limit: float) -> CustomCodeError:
    return CustomCodeError(where, f"was still running when the sample's sample_timeout ({limit:g}s, counted from the "
                                  "sample's start) ran out",
                           "it was stopped and the run went on; raise sample_timeout or make it return sooner")


class _CodeLoop:
    """One event loop, on a daemon thread of its own, for every async custom function: an async agent that blocks
    (a `while True` that never awaits) blocks this loop, never the run's, and the clients an agent keeps across
    samples (an AsyncOpenAI made at import) always meet the loop they were first used on.

    A call given up on is cancelled; a coroutine that never awaits ignores that, and the loop stays stuck in it.
    Such a loop is retired (later calls get a fresh one; the stuck one spins on in its daemon thread until the run
    ends): `suspect` when a call on it was given up on, and stuck when it has also not run its heartbeat lately,
    or when the cancelled call has not ended STUCK_AFTER_S later."""

    HEARTBEAT_S = 0.05

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.beat = 0.0
        self.suspect = False

    def get(self) -> asyncio.AbstractEventLoop:
        import asyncio

        with self.lock:
            if self.loop is not None and self.suspect and time.monotonic() - self.beat > 4 * self.HEARTBEAT_S:
                self.loop = None  # stuck in a call given up on: see the class docstring
            if self.loop is None or self.loop.is_closed():
                loop = asyncio.new_event_loop()
                self.beat, self.suspect = time.monotonic(), False
                threading.Thread(target=loop.run_forever, name="evals-custom-async", daemon=True).start()
                loop.call_soon_threadsafe(self._heartbeat, loop)
                self.loop = loop
            return self.loop

    def _heartbeat(self, loop: asyncio.AbstractEventLoop) -> None:
        if self.loop is loop:
            self.beat = time.monotonic()
            loop.call_later(self.HEARTBEAT_S, self._heartbeat, loop)

    def given_up(self, loop: asyncio.AbstractEventLoop) -> None:
        with self.lock:
            if self.loop is loop:
                self.suspect = True

    def cleared(self, loop: asyncio.AbstractEventLoop) -> None:
        with self.lock:
            if self.loop is loop:
                self.suspect = False

    def retire(self, loop: asyncio.AbstractEventLoop) -> None:
        with self.lock:
            if self.loop is loop:
                self.loop = None


_CODE_LOOP = _CodeLoop()
STUCK_AFTER_S = 1.0  # how long a cancelled async call may take to end before its loop counts as stuck


async def _await_elsewhere(make: Callable[[asyncio.Future[Any]], None], bounded: bool, where: str) -> Any:
    """Await a result another thread settles (`make` starts that work and is handed the future to settle),
    up to the sample's deadline when `bounded`."""
    import asyncio

    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    make(future)
    left = _remaining() if bounded else None
    if left is None:
        return await future
    seconds, limit = left
    try:
        return await asyncio.wait_for(future, timeout=seconds)
    except TimeoutError:
        raise _timed_out(where, limit) from None


def _settler(future: asyncio.Future[Any]) -> Callable[[Any, BaseException | None], None]:
    """A function any thread may call to settle `future` on its own loop (once; a no-op when nobody waits)."""
    loop = future.get_loop()

    def settle(value: Any, error: BaseException | None) -> None:
        def on_loop() -> None:
            if not future.done():  # cancelled meanwhile (deadline, Ctrl-C): nobody is waiting any more
                future.set_exception(error) if error is not None else future.set_result(value)

        try:
            loop.call_soon_threadsafe(on_loop)
        except RuntimeError:  # the run's loop is closed: the run is over
            pass

    return settle


class Abandoned(BaseException):
    """Raised inside a custom call's thread once nobody waits for it any more (past the sample's deadline, or
    cancelled by Ctrl-C), so that a pure-Python loop stops at its next instruction instead of running on and
    taking the interpreter's lock from the rest of the run. A BaseException, so `except Exception` does not swallow
    it; code that catches BaseException and goes on, or waits in C (a socket, a sleep), still runs on until it
    returns or the run ends."""


class _Worker:
    """The thread of one sync custom call, and whether its function still runs (only then is it stopped)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None
        self.finished = False

    def finish(self) -> None:
        with self.lock:
            self.finished = True

    def stop(self) -> None:
        """Raise Abandoned in the thread (CPython's PyThreadState_SetAsyncExc), once, if the call still runs
        Python code: a watcher looks at the thread's position and raises it only once it moves. A thread that
        waits in C (a sleep, a socket) is left alone until it comes back: an exception left pending on it stalls
        every other thread that runs a trace function (CPython 3.11; the rubric renderer's time bound is one)
        until it wakes, an hour for a tool sleeping an hour."""
        with self.lock:
            thread, self.thread = self.thread, None
            if self.finished or thread is None or thread.ident is None:
                return
        threading.Thread(target=self._stop_when_running, args=(thread,), name="evals-abandon", daemon=True).start()

    def _stop_when_running(self, thread: threading.Thread) -> None:
        last, delay = _position(thread), 0.02
        while thread.is_alive():
            time.sleep(delay)
            now = _position(thread)
            if now is not None and now != last:
                with self.lock:
                    if not self.finished and thread.ident is not None:
                        import ctypes

                        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident),
                                                                   ctypes.py_object(Abandoned))
                return
            last, delay = now, min(delay * 2, 1.0)


def _position(thread: threading.Thread) -> tuple[int, int, int] | None:
    """Where the thread's Python code is (its top frame and instruction); the same twice: it waits in C."""
    frame = sys._current_frames().get(thread.ident or -1)
    return None if frame is None else (id(frame), id(frame.f_code), frame.f_lasti)


async def call(fn: Callable[..., Any], *args: Any, where: str, bounded: bool = True, thread_name: str = "",
               keywords: dict[str, Any] | None = None) -> Any:
    """fn(*args, **keywords) under the guard, awaited without blocking the run's event loop: a sync function in a
    daemon thread of its own (never a shared pool: a hung call must not make others queue), an async one (or a
    sync one returning an awaitable) on the custom-code loop. SystemExit and KeyboardInterrupt inside it become
    CustomCodeError, and so does running past the sample's deadline when `bounded` (a python agent is bounded by
    the runner's own sample_timeout instead). A sync call given up on (deadline, cancellation) is stopped with
    `Abandoned`."""
    import inspect

    context = contextvars.copy_context()  # the caller's context variables go with it (as asyncio.to_thread)
    kwargs = keywords or {}
    if _is_async(fn):
        return await _on_code_loop(lambda: fn(*args, **kwargs), context, where, bounded)

    worker = _Worker()

    def start(future: asyncio.Future[Any]) -> None:
        settle = _settler(future)

        def work() -> None:
            try:
                try:
                    value, error = context.run(run_guarded, fn, *args, where=where, **kwargs), None
                except BaseException as exc:  # handed to the awaiting task, which decides
                    value, error = None, exc
                worker.finish()
            except Abandoned:  # stopped as it returned: nobody waits for it any more
                worker.finish()
                return
            settle(value, error)

        worker.thread = threading.Thread(target=work, name=thread_name or f"evals-custom-{where}"[:60], daemon=True)
        worker.thread.start()

    try:
        result = await _await_elsewhere(start, bounded, where)
    except BaseException:  # past the deadline, or cancelled (sample_timeout, Ctrl-C): stop the thread if it runs
        worker.stop()
        raise
    if inspect.isawaitable(result):
        awaitable = result  # a sync wrapper (functools.partial, a lambda) around an async function

        async def finish() -> Any:
            return await awaitable

        return await _on_code_loop(finish, context, where, bounded)
    return result


async def _on_code_loop(make: Callable[[], Any], context: contextvars.Context, where: str, bounded: bool) -> Any:
    """The coroutine `make()` returns, run to the end on the custom-code loop in `context`, awaited from here."""
    import asyncio

    code_loop = _CODE_LOOP.get()
    tasks: list[asyncio.Task[Any]] = []

    async def guarded() -> Any:
        with EXIT_GUARD:
            try:
                return await make()
            except (SystemExit, KeyboardInterrupt) as exc:  # never out of the task: asyncio would re-raise it
                raise contained(exc, where) from None      # out of the loop, ending the loop's thread

    def start(future: asyncio.Future[Any]) -> None:
        settle = _settler(future)

        def begin() -> None:
            task = code_loop.create_task(guarded(), context=context)
            tasks.append(task)
            task.add_done_callback(done)

        def done(task: asyncio.Task[Any]) -> None:
            if task.cancelled():
                settle(None, asyncio.CancelledError())
            elif task.exception() is not None:
                settle(None, task.exception())
            else:
                settle(task.result(), None)

        code_loop.call_soon_threadsafe(begin)

    try:
        return await _await_elsewhere(start, bounded, where)
    except BaseException:  # the sample gave up on it (deadline, cancellation): so does its task
        _CODE_LOOP.given_up(code_loop)
        code_loop.call_soon_threadsafe(lambda: [task.cancel() for task in tasks])

        def check() -> None:
            if not tasks or any(not task.done() for task in tasks):  # never started, or ignoring its cancel
                _CODE_LOOP.retire(code_loop)
            else:  # it ended when cancelled: the loop is fine
                _CODE_LOOP.cleared(code_loop)

        watchdog = threading.Timer(STUCK_AFTER_S, check)
        watchdog.daemon = True
        watchdog.start()
        raise


def _is_async(fn: Callable[..., Any]) -> bool:
    import inspect

    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)

