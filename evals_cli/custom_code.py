"""The one guard around the suite's own Python code: custom extractors (`extractor: file.py:func`), `@grader`
functions, custom rewards (`gate: {kind: custom}`, letta-evals' `reward: {kind: custom}`) and python agents
(`target: {kind: python}`).

That code runs in our process, so left to itself it could end or hold the run: `sys.exit(0)` or `os._exit(0)`
left CI a 0 with no results and no summary, a `KeyboardInterrupt` it raised read as Ctrl-C (130, no summary),
and a `while True` ignored `--sample-timeout`, SIGINT and SIGTERM (the event loop that hears them never ran
again). Under this guard:

- **Exits raise.** While custom code can run (from its import to the end of the command), `os._exit`,
  `posix._exit` and `sys.exit` are replaced by functions that raise `ExitAttempt` (a SystemExit, so the code's
  own `except Exception` does not swallow it) when called from custom code: from a thread other than the main
  one (custom calls run in threads of their own, and so do the threads they start), or with a frame of a custom
  file on the stack (import time). The harness's own exit (the main thread, no custom frame) and a forked child
  (another pid) exit for real. The originals are put back when the last user of the guard leaves it (`evals`
  holds it for the whole command, so a thread custom code leaves running cannot exit the run later either).
- **Its failure is that sample's error.** `SystemExit` and `KeyboardInterrupt` raised inside custom code become
  `CustomCodeError` (category `custom_code`), naming the file:function and what it did; at import time a load
  error (exit 2). A real Ctrl-C during an import is told apart (a handler notes it) and stops the command.
- **Its time counts.** A call runs in a daemon thread of its own (an async function: on one event loop kept on a
  thread of its own for custom code), and the run's event loop only awaits it, up to the sample's deadline
  (`sample_timeout`, counted from the sample's start: `SAMPLE_DEADLINE`). Past it the sample errors, and the run
  goes on; the loop stays free meanwhile, so SIGINT and SIGTERM stop the run as they stop any run.

Why threads and not a subprocess, and what that leaves: a subprocess per call could be killed, but every call
would pickle the sample and the trajectory across a pipe, custom code could no longer keep state between calls (a
python agent's client, a module-level cache), and letta-evals' files expect to run in the evaluator's process.
Python cannot kill a thread, but it can raise in one: a sync call given up on (past the deadline, or cancelled
by Ctrl-C) gets `Abandoned` raised in its thread, which stops a pure-Python loop at its next instruction. Code
that catches BaseException and goes on, or waits in C (a socket, a sleep), runs on in its daemon thread until it
returns or the process exits: it never keeps the process alive and cannot change a result already written. An
async call given up on is cancelled; a coroutine that never awaits ignores that, so its loop is retired and
later calls get a fresh one. Code set on fooling its evaluator still can (`os.kill`, `os.abort`, an `atexit`
hook, ctypes); the guard makes sure that ordinary code ending, interrupting or hanging cannot make a run look
finished or passed.

An installed module named `module:attr` (`acme_graders.checks:fn`) is not a file of the suite: it is not
confined to the suite's folders, but it runs under the same guard (`import_module_guarded`), and `evals validate`
without --import-code only checks that it can be found (`find_module`, which imports nothing).

Which files may run at all is decided here too: a custom file must lie inside the suite's folder or a folder
the suite lists in `code_dirs` (or, for a python agent named by a `--target` file, that file's folder), as
dataset rows' rubric paths are confined; and `evals validate` only reads them (`check_source`) unless asked
with `--import-code` (`policy`).
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import posix
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where used: `evals --help` holds the guard and needs no event loop
    import asyncio

CATEGORY = "custom_code"

SAMPLE_DEADLINE: contextvars.ContextVar[tuple[float, float] | None] = contextvars.ContextVar(
    "evals_sample_deadline", default=None)
"""(time.monotonic() deadline, the sample_timeout it comes from) of the sample being run; set by the runner at
the start of each sample, None when the sample has no time limit."""


class CustomCodeError(Exception):
    """Custom code did what a suite's function may not: ended the process (`sys.exit`, `os._exit`), raised
    SystemExit or KeyboardInterrupt, or ran past the sample's time. An error of that sample (category
    `custom_code`), never the run's exit code; `where` names the code (`custom extractor checks.py:grab`),
    `did` what it did (`called sys.exit(0)`)."""

    category = CATEGORY

    def __init__(self, where: str, did: str, consequence: str = "custom code cannot end the run") -> None:
        super().__init__(f"{where} {did}; {consequence}")
        self.where = where
        self.did = did


class ExitAttempt(SystemExit):
    """Custom code called os._exit, posix._exit or sys.exit. A SystemExit, so that the code's own `except
    Exception` does not swallow it; should it escape every handler anyway, the process exits with 3 (the run
    could not complete), never with the code asked for."""

    def __init__(self, how: str, code: Any) -> None:
        super().__init__(f"called {how}({code!r})")
        self.how = how
        self.requested = code
        self.code = 3


def what_it_did(exc: BaseException) -> str:
    """'called sys.exit(0)', 'raised SystemExit(3)', 'raised KeyboardInterrupt': for messages."""
    if isinstance(exc, ExitAttempt):
        return f"called {exc.how}({exc.requested!r})"
    if isinstance(exc, SystemExit):
        return f"raised SystemExit({exc.code!r})"
    return f"raised {type(exc).__name__}" + (f" ({exc})" if str(exc) else "")


# --- exits ----------------------------------------------------------------------------------------------

_FILES: set[str] = set()  # co_filename of every custom file loaded: a frame from one is custom code


def register_file(path: Path | str) -> None:
    """Mark a file as custom code (its frames count as custom code's for the exit guard)."""
    _FILES.add(str(path))


def _from_custom_code(frame: FrameType | None) -> bool:
    if threading.current_thread() is not threading.main_thread():
        return True  # custom calls run in threads of their own; the harness exits only from the main thread
    while frame is not None:
        if frame.f_code.co_filename in _FILES:
            return True
        frame = frame.f_back
    return False


class _ExitGuard:
    """Replaces os._exit, posix._exit and sys.exit while anyone holds it (counted: custom calls overlap), and
    puts the originals back when the last one leaves. Thread-safe."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.active = 0
        self.pid = 0
        self.originals: dict[tuple[Any, str], Any] = {}
        self.installed: dict[tuple[Any, str], Any] = {}

    def _guarded(self, how: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def guarded(code: Any = 0) -> Any:
            if os.getpid() != self.pid or not _from_custom_code(sys._getframe(1)):
                return real(code)  # a child custom code forked, or the harness itself: a real exit
            raise ExitAttempt(how, code)

        guarded.__name__ = getattr(real, "__name__", how)
        return guarded

    def __enter__(self) -> _ExitGuard:
        """Installs the guarded exits, again where something put another function back while the guard was held
        (a call given up on still holds it, and an embedding program may restore its own exits): a guard that is
        counted as held but no longer installed would let the next custom call end the process."""
        with self.lock:
            if self.active == 0:
                self.pid = os.getpid()
            for owner, name, how in ((os, "_exit", "os._exit"), (posix, "_exit", "posix._exit"),
                                     (sys, "exit", "sys.exit")):
                current = getattr(owner, name)
                if current is not self.installed.get((owner, name)):
                    self.originals[(owner, name)] = current
                    self.installed[(owner, name)] = self._guarded(how, current)
                    setattr(owner, name, self.installed[(owner, name)])
            self.active += 1
        return self

    def __exit__(self, *exc: object) -> None:
        with self.lock:
            self.active -= 1
            if self.active == 0:
                for (owner, name), real in self.originals.items():
                    setattr(owner, name, real)
                self.originals.clear()
                self.installed.clear()


EXIT_GUARD = _ExitGuard()


def _contained(exc: BaseException, where: str) -> CustomCodeError:
    return CustomCodeError(where, what_it_did(exc))


def run_guarded(fn: Callable[..., Any], *args: Any, where: str, **kwargs: Any) -> Any:
    """fn(*args, **kwargs) in this thread, exits refused: SystemExit (an exit call included) and KeyboardInterrupt
    raised inside it become CustomCodeError; its time is not bounded. For `call`'s worker, for custom code called
    from custom code (a letta-evals helper), and for the synchronous entry points kept for Python callers
    (GradeContext.submission, Gate.judge_sample); a run goes through `call`."""
    with EXIT_GUARD:
        try:
            return fn(*args, **kwargs)
        except (SystemExit, KeyboardInterrupt) as exc:
            raise _contained(exc, where) from None


@contextlib.contextmanager
def _noting_interrupts() -> Iterator[list[int]]:
    """The real SIGINTs that arrive while the block runs (main thread only, where Python delivers them), so that
    the KeyboardInterrupt a Ctrl-C raises is told apart from one the code raised. The handler in place still
    runs; only where no Python handler is in place (SIG_IGN, SIG_DFL) nothing is installed."""
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return
    previous = signal.getsignal(signal.SIGINT)
    if not callable(previous):
        yield received
        return

    def noting(signum: int, frame: FrameType | None) -> Any:
        received.append(signum)
        return previous(signum, frame)

    signal.signal(signal.SIGINT, noting)
    try:
        yield received
    finally:
        signal.signal(signal.SIGINT, previous)


def import_guarded(run: Callable[[], Any], where: str) -> None:
    """Run a custom file's module-level code (its import) in this thread, exits refused (CustomCodeError). A
    KeyboardInterrupt a real Ctrl-C raised goes on up: the user stopped the command, the file did nothing wrong."""
    with EXIT_GUARD, _noting_interrupts() as interrupts:
        try:
            run()
        except KeyboardInterrupt as exc:
            if interrupts:
                raise
            raise _contained(exc, where) from None
        except SystemExit as exc:
            raise _contained(exc, where) from None


# --- time -----------------------------------------------------------------------------------------------

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
                raise _contained(exc, where) from None      # out of the loop, ending the loop's thread

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


# --- which files, and whether they run ------------------------------------------------------------------

@dataclass(frozen=True)
class CodePolicy:
    """Where custom files may come from besides the folder their loader is given (the suite's), and whether
    they may run at all (`evals validate` without --import-code only reads them: `read` collects which)."""

    roots: tuple[Path, ...] = ()
    run: bool = True
    read: list[str] = field(default_factory=list)


_POLICY: contextvars.ContextVar[CodePolicy | None] = contextvars.ContextVar("evals_code_policy", default=None)
_DEFAULT_POLICY = CodePolicy()  # no policy set (a grader built from Python): the loader's folder only, and run


def _policy() -> CodePolicy:
    return _POLICY.get() or _DEFAULT_POLICY


@contextlib.contextmanager
def policy(roots: Iterable[Path] = (), run: bool = True, read: list[str] | None = None) -> Iterator[None]:
    """Load custom files under these rules while the block runs (a context variable, so that the loaders of
    every grader, gate and target kind read it without each constructor taking two more settings). Files only
    read (not run) are appended to `read`."""
    token = _POLICY.set(CodePolicy(tuple(Path(r).resolve() for r in roots), run, read if read is not None else []))
    try:
        yield
    finally:
        _POLICY.reset(token)


def may_run() -> bool:
    """Whether custom files may be imported now (False under `evals validate` without --import-code)."""
    return _policy().run


def locate(file_part: str, base_dir: Path, what: str) -> Path:
    """The resolved file of a custom reference's `file.py` part (relative to `base_dir`, the suite's folder),
    after checking that it lies inside that folder or a folder of the policy (symlinks resolved first); ValueError
    naming the file otherwise. A suite is often written by others: `../../elsewhere/x.py` or an absolute path
    must not run code the suite's folder does not hold."""
    raw = Path(file_part).expanduser()
    path = (raw if raw.is_absolute() else base_dir / raw).resolve()
    roots = [base_dir.resolve(), *_policy().roots]
    if not any(path.is_relative_to(root) for root in roots):
        names = ", ".join(dict.fromkeys(str(r) for r in roots))
        raise ValueError(f"{what} file {file_part} resolves outside the suite's folder{'s' if len(roots) > 1 else ''} "
                         f"({names}); custom code is loaded only from there: move the file into the suite's folder, "
                         "or list its folder in the suite's code_dirs")
    return path


def is_module_ref(ref: str) -> bool:
    """`package.module:attr`: custom code from an installed module, where a suite may also write `file.py:attr`."""
    module, sep, attr = ref.rpartition(":")
    return bool(sep) and attr.isidentifier() and not module.endswith(".py") \
        and all(part.isidentifier() for part in module.split("."))


def find_module(name: str) -> Any:
    """The ModuleSpec of an installed module, found without running any code (importlib.util.find_spec would
    import the parent packages of a dotted name); None when it is not installed."""
    import importlib.machinery
    import importlib.util

    parts = name.split(".")
    if parts[0] in sys.modules and len(parts) == 1:
        return getattr(sys.modules[parts[0]], "__spec__", None)
    found = importlib.util.find_spec(parts[0])
    for depth in range(1, len(parts)):
        if found is None or found.submodule_search_locations is None:
            return None
        found = importlib.machinery.PathFinder.find_spec(".".join(parts[:depth + 1]),
                                                         list(found.submodule_search_locations))
    return found


def import_module_guarded(ref: str, what: str) -> Any:
    """The attribute `module:attr` names, its module imported under the guard (exits refused: a load error);
    ValueError naming the reference and how to fix it when the module is missing, fails to import or lacks it."""
    import importlib

    name, _, attr = ref.rpartition(":")
    found = find_module(name)
    if found is None:
        raise ValueError(f"{what} {ref}: no module '{name}' is installed (a path to a file of the suite must end "
                         "in .py: path/to/file.py:function); install the package that provides it, or fix the name")
    if found.origin:
        register_file(found.origin)  # its frames count as custom code's for the exit guard
    imported: list[Any] = []
    try:
        import_guarded(lambda: imported.append(importlib.import_module(name)), f"{what} {ref}")
    except CustomCodeError as exc:
        raise ValueError(f"{what} {ref}: importing {name} failed: it {exc.did} at import; custom code cannot end "
                         "the run") from None
    except Exception as exc:  # the module's code: report, never crash
        raise ValueError(f"{what} {ref}: importing {name} failed: {type(exc).__name__}: {exc}") from None
    value = getattr(imported[0], attr, None)
    if value is None:
        raise ValueError(f"{what} {ref}: module {name} has no attribute '{attr}'")
    return value


def check_module(ref: str, what: str) -> StaticDef | None:
    """`evals validate` without --import-code: the module of `module:attr` can be found (nothing is run);
    ValueError otherwise. When it is a .py source, it is read as a suite's file is (`check_source`)."""
    name, _, attr = ref.rpartition(":")
    found = find_module(name)
    if found is None:
        raise ValueError(f"{what} {ref}: no module '{name}' is installed (a path to a file of the suite must end "
                         "in .py: path/to/file.py:function); install the package that provides it, or fix the name")
    origin = Path(found.origin) if found.origin and found.origin.endswith(".py") else None
    if origin is None or not origin.is_file():
        _policy().read.append(ref)
        return None
    return check_source(origin, attr, ref, what)


PASS_THROUGH = frozenset({"grader", "extractor", "reward_composer"})
"""Decorators that leave a function's signature as it is: evals_cli.grader and letta-evals' (stand-ins)."""


@dataclass(frozen=True)
class StaticDef:
    """What reading a file tells of a function it defines with a plain `def` (undecorated, or decorated only by
    PASS_THROUGH decorators), so that `evals validate` checks its signature without running the file."""

    signature: Any  # inspect.Signature; defaults are placeholders (their values are never evaluated)
    is_async: bool
    decorators: tuple[str, ...]


def check_source(path: Path, name: str, file_part: str, what: str) -> StaticDef | None:
    """Without running it: the file is readable UTF-8 Python that parses and binds `name` at its top level (a
    def, a class, an assignment or an import; a star import is taken on trust). ValueError otherwise. Returns
    the function's static signature when a plain `def` binds it last (None: it cannot be known by reading)."""
    import ast

    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{what} file {file_part} cannot be read ({type(exc).__name__})") from None
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise ValueError(f"{file_part}:{exc.lineno}: {what} file is not valid Python: {exc.msg}") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise ValueError(f"{what} file {file_part} cannot be parsed ({type(exc).__name__})") from None
    if name not in _top_level_names(tree) and not _star_import(tree):
        raise ValueError(f"{file_part} has no function '{name}' at its top level (evals validate reads the file "
                         "without running it; --import-code runs it)")
    _policy().read.append(f"{file_part}:{name}")
    return _static_def(tree, name)


class _Unread:
    """A default value not evaluated (the file was only read): shown as `...` in messages."""

    def __repr__(self) -> str:
        return "..."


def _static_def(tree: Any, name: str) -> StaticDef | None:
    import ast
    import inspect

    last = None
    for node in tree.body:  # the last statement of the module's own body that binds the name
        bound = _top_level_names(ast.Module(body=[node], type_ignores=[]))
        if name in bound:
            last = node
    if not isinstance(last, ast.FunctionDef | ast.AsyncFunctionDef) or last.name != name:
        return None
    decorators = tuple(ast.unparse(d.func if isinstance(d, ast.Call) else d) for d in last.decorator_list)
    if any(d.rpartition(".")[2] not in PASS_THROUGH for d in decorators):
        return None  # a decorator that may change the signature: only running the file can tell
    args = last.args
    kind = inspect.Parameter
    default = _Unread()  # a placeholder: which parameters have a default is what matters, not its value
    positional = [*args.posonlyargs, *args.args]
    first_default = len(positional) - len(args.defaults)
    params = [kind(a.arg, kind.POSITIONAL_ONLY if i < len(args.posonlyargs) else kind.POSITIONAL_OR_KEYWORD,
                   default=default if i >= first_default else kind.empty) for i, a in enumerate(positional)]
    if args.vararg is not None:
        params.append(kind(args.vararg.arg, kind.VAR_POSITIONAL))
    params += [kind(a.arg, kind.KEYWORD_ONLY, default=kind.empty if d is None else default)
               for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)]
    if args.kwarg is not None:
        params.append(kind(args.kwarg.arg, kind.VAR_KEYWORD))
    try:
        signature = inspect.Signature(params)
    except ValueError:  # duplicate names and alike: Python itself would refuse the file
        return None
    return StaticDef(signature, isinstance(last, ast.AsyncFunctionDef), decorators)


def _top_level_names(tree: Any) -> set[str]:
    import ast

    names: set[str] = set()
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.If | ast.Try | ast.With | ast.For | ast.While):  # bodies still at top level
            for field in ("body", "orelse", "finalbody", "handlers"):
                stack.extend(getattr(node, field, []) or [])
            if isinstance(node, ast.With):
                names.update(n.id for item in node.items if item.optional_vars is not None
                             for n in ast.walk(item.optional_vars) if isinstance(n, ast.Name))
            if isinstance(node, ast.For):
                names.update(n.id for n in ast.walk(node.target) if isinstance(n, ast.Name))
        elif isinstance(node, ast.ExceptHandler):
            stack.extend(node.body)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Expr):  # a walrus at top level
            names.update(n.target.id for n in ast.walk(node) if isinstance(n, ast.NamedExpr))
    return names


def _star_import(tree: Any) -> bool:
    import ast

    return any(isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names) for node in tree.body)
