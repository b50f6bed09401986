"""How the `evals` process holds its heap and how it ends: costs a short run pays for nothing.

A run imports thousands of classes (the openai SDK's types, our pydantic models) that live until the process
ends. Two costs follow that buy nothing, measured with bench/run.py (scenario a, 200 samples, about 1 s of CPU
in all): the cyclic garbage collector walking those objects again and again while samples run, and the
interpreter's teardown freeing them one by one at exit (about 0.2 s of CPU, a fifth of such a run; the bare
openai-SDK loop pays about 0.1 s of it for the SDK alone).
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
import threading

_held: tuple[int, int, int] | None = None
HELD_THRESHOLD = 400_000


def hold_collections() -> None:
    """Collect rarely while the command starts: importing the SDK's and our classes and loading the suite makes
    hundreds of thousands of objects that all live on, and the default thresholds walk them in some 150 young
    and two full collections (about 30 ms more than the bare SDK loop pays). A young collection walks every
    object made since the last one, so any threshold a run's start crosses still walks them all: at 50,000 a
    start of about 250,000 objects ran five (some 20 ms); at `HELD_THRESHOLD` it runs none. Collections still
    happen, every `HELD_THRESHOLD` new objects: a command that never reaches `settle_heap` keeps a bounded heap
    (only cyclic garbage waits for a collection; the rest is freed when its last reference goes)."""
    global _held
    if _held is None:
        _held = gc.get_threshold()
        gc.set_threshold(max(_held[0], HELD_THRESHOLD), _held[1], _held[2])


def settle_heap() -> None:
    """Move everything alive now (modules, classes, the prepared suite) out of the collector's sight: it lives
    until the process ends, so walking it at every full collection is wasted work. Objects made later (each
    sample's) are collected as before, at the thresholds `hold_collections` raised for the start. Call once
    preparation is done, before the samples run."""
    global _held
    gc.freeze()
    if _held is not None:
        gc.set_threshold(*_held)
        _held = None


def exit_now(code: int) -> None:
    """End the process with `code` without tearing the interpreter down.

    Nothing is lost: what the run writes (results lines, recordings) is flushed line by line and closed by the
    run itself; stdout and stderr are flushed here; atexit handlers (logging, an OpenTelemetry exporter, ones the
    suite's code registered) run as at any exit. When a non-daemon thread is still running (only a caller's own
    thread can be: ours are daemons), the ordinary exit waits for it, so that path is kept; so it is under a
    profiler or a tracer (`python -m cProfile -m evals_cli`), which writes what it found after `main` returns."""
    if sys.getprofile() is not None or sys.gettrace() is not None or any(
            t is not threading.main_thread() and not t.daemon and t.is_alive() for t in threading.enumerate()):
        sys.exit(code)
    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                if stream is not None:
                    stream.flush()
            except (OSError, ValueError):  # a closed pipe (`evals list | head`) or a closed stream: nothing to add
                pass
        os._exit(code)


def exit_code(code: object) -> int:
    """A SystemExit's code as the process exit status, as the interpreter maps it: None is 0, an int is itself,
    anything else (a message) is printed to stderr and is 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    try:
        print(code, file=sys.stderr)
    except (OSError, ValueError):
        pass
    return 1
