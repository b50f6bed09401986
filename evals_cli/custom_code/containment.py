"""Containment: custom code may not end or interrupt the run. While anyone holds `EXIT_GUARD`, `os._exit`,
`posix._exit` and `sys.exit` raise `ExitAttempt` when custom code calls them, and `SystemExit` or
`KeyboardInterrupt` raised inside custom code becomes `CustomCodeError`, that sample's error.

Apart from the worker threads (workers.py) because it holds for code run in the calling thread too: a file's
import, a letta-evals helper called from custom code, the synchronous entry points kept for Python callers.
"""

from __future__ import annotations

import contextlib
import os
import posix
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

CATEGORY = "custom_code"


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


def contained(exc: BaseException, where: str) -> CustomCodeError:
    """The sample's error for an exit or an interrupt custom code raised at `where`."""
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
            raise contained(exc, where) from None


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
            raise contained(exc, where) from None
        except SystemExit as exc:
            raise contained(exc, where) from None
