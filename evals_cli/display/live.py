"""Progress while a run goes.

On a terminal: a live view (a bar with done/total, errors, the running pass rate, elapsed time and ETA, and the
samples in flight with their turn and step when there are few). Elsewhere (CI logs, pipes): a plain line every
10% of the samples or every 15 s, whichever comes first; no ANSI codes, nothing redrawn.

Ctrl-C is acknowledged at once, whatever the mode: the run may take the whole grace period to stop."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.markup import escape
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from evals_cli.display.plain import stopping_message
from evals_cli.display.state import RunState

MAX_SHOWN_IN_FLIGHT = 8
CI_INTERVAL_S = 15.0
CI_STEPS = 10  # a line per 10% of the samples


class FlightEntry(Protocol):
    sample_id: str
    repeat: int
    started: float
    where: str


InFlightSource = Callable[[], Sequence[FlightEntry]]


def clock(seconds: float) -> str:
    seconds = max(int(seconds), 0)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


class LiveProgress:
    """The progress view of one run; `update()` after every result, `interrupted()` from the signal handler."""

    def __init__(self, console: Console, state: RunState, enabled: bool, *,
                 in_flight: InFlightSource | None = None, resumed: Callable[[], int] | None = None,
                 err: Console | None = None, interval_s: float = CI_INTERVAL_S,
                 clock_fn: Callable[[], float] = time.monotonic) -> None:
        self.console = console
        self.state = state
        self.terminal = enabled and console.is_terminal
        self.ci = enabled and not console.is_terminal
        self.in_flight = in_flight
        self.resumed = resumed
        self.err = err
        self.interval_s = interval_s
        self.now = clock_fn
        self.started = clock_fn()
        self.stopping: str | None = None
        self._live: Any = None
        self._lock = threading.Lock()
        self._last_line = self.started
        self._next_mark = 0
        self._ticker: threading.Thread | None = None
        self._done = threading.Event()

    # --- numbers --------------------------------------------------------------------------------------

    def _flight(self) -> list[FlightEntry]:
        if self.in_flight is None:
            return []
        try:
            return list(self.in_flight())
        except Exception:  # the view must never break the run
            return []

    def eta(self) -> float | None:
        s = self.state
        if not s.total_expected or s.done >= s.total_expected:
            return None if not s.total_expected else 0.0
        fresh = s.done - (self.resumed() if self.resumed else 0)  # kept results came at once, not at this pace
        elapsed = self.now() - self.started
        if fresh <= 0 or elapsed <= 0:
            return None
        return elapsed / fresh * (s.total_expected - s.done)

    def _numbers(self) -> str:
        s = self.state
        rate = "—" if s.pass_rate is None else f"{s.pass_rate:.0%}"
        eta = self.eta()
        parts = [f"{s.errored} errored", f"pass rate {rate}", f"elapsed {clock(self.now() - self.started)}",
                 f"ETA {'—' if eta is None else clock(eta)}"]
        return " · ".join(parts)

    def _count(self) -> str:
        s = self.state
        if not s.total_expected:
            return f"{s.done} done"
        return f"{s.done}/{s.total_expected} ({s.done / s.total_expected:.0%})"

    def line(self) -> str:
        """The plain progress line (CI logs)."""
        flying = len(self._flight())
        return f"progress: {self._count()} · {self._numbers()} · {flying} in flight"

    # --- the terminal view ----------------------------------------------------------------------------

    def _render(self) -> RenderableType:
        return _View(self)

    def view(self, width: int) -> RenderableType:
        """The view at this width (Live re-renders it on every refresh, at the terminal's current width)."""
        s = self.state
        head = Table.grid(padding=(0, 1))
        for _ in range(3):
            head.add_column(no_wrap=True)
        label = Text("stopping" if self.stopping else "running", style="bold yellow" if self.stopping else "bold")
        total = s.total_expected or max(s.done, 1)
        bar = ProgressBar(total=total, completed=min(s.done, total), width=24, pulse=not s.total_expected)
        count, numbers = Text(self._count()), Text(self._numbers())
        parts: list[RenderableType] = [head]
        if 8 + 1 + 24 + 1 + len(count) + 1 + len(numbers) <= width:  # one line on a wide terminal
            head.add_column(no_wrap=True)
            head.add_row(label, bar, count, numbers)
        else:  # the numbers on a line of their own: never wrapped mid-phrase
            head.add_row(label, bar, count)
            parts.append(Text("  ") + numbers)
        flying = self._flight()
        if flying and len(flying) <= MAX_SHOWN_IN_FLIGHT:
            now = self.now()
            table = Table.grid(padding=(0, 2))
            table.add_column(no_wrap=True)
            table.add_column(no_wrap=True)
            table.add_column(justify="right", no_wrap=True)
            for entry in flying:
                name = entry.sample_id + (f" (repeat {entry.repeat + 1})" if s.repeats > 1 else "")
                table.add_row(Text("  " + name), Text(entry.where, style="dim"),
                              Text(f"{max(now - entry.started, 0):.0f}s", style="dim"))
            parts.append(table)
        elif flying:
            parts.append(Text(f"  {len(flying)} samples in flight", style="dim"))
        return Group(*parts)

    # --- lifecycle ------------------------------------------------------------------------------------

    def __enter__(self) -> LiveProgress:
        self.started = self._last_line = self.now()
        if self.terminal:
            from rich.live import Live

            # refreshed by our own ticker, under our lock: Rich's own refresh thread could write to the terminal
            # between the cursor moves of a message printed above the view (Ctrl-C), leaving a stale view line
            self._live = Live(console=self.console, auto_refresh=False, transient=True, get_renderable=self._render)
            self._live.__enter__()
        elif self.ci:
            self._next_mark = self._step()
        if self.terminal or self.ci:
            self._ticker = threading.Thread(target=self._tick, name="evals-progress", daemon=True)
            self._ticker.start()
        return self

    def _step(self) -> int:
        total = self.state.total_expected
        return max(1, math.ceil(total / CI_STEPS)) if total else CI_STEPS

    def _emit(self) -> None:
        """One plain line now (the caller holds the lock)."""
        self.console.print(self.line(), markup=False, highlight=False, soft_wrap=True)
        try:
            self.console.file.flush()  # a pipe is block-buffered: a log must show the line now
        except (OSError, ValueError):
            pass
        self._last_line = self.now()

    def _tick(self) -> None:
        while not self._done.wait(0.25 if self._live is not None else 0.5):  # 4 refreshes a second at most
            with self._lock:
                if self._done.is_set():
                    return
                if self._live is not None:
                    self._live.refresh()
                elif self.now() - self._last_line >= self.interval_s:
                    self._emit()

    def update(self) -> None:
        if self._live is not None:
            return  # the ticker redraws the view; a redraw per result would flood a fast run
        elif self.ci:
            with self._lock:
                if self.state.done >= self._next_mark:
                    step = self._step()
                    self._next_mark = (self.state.done // step + 1) * step
                    self._emit()

    def interrupted(self, presses: int, in_flight: int) -> None:
        """Ctrl-C (or SIGTERM): say at once what happens now."""
        message = stopping_message(in_flight, presses)
        self.stopping = message
        with self._lock:
            if self._live is not None:
                self._live.console.print(f"[yellow]{escape(message)}[/]", highlight=False)
                self._live.refresh()
            elif self.err is not None:
                self.err.print(message, markup=False, highlight=False, soft_wrap=True)
                try:
                    self.err.file.flush()
                except (OSError, ValueError):
                    pass

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        if self._ticker is not None:
            self._ticker.join(timeout=2)
        if self._live is not None:
            with self._lock:
                self._live.__exit__(*exc)


class _View:
    def __init__(self, progress: LiveProgress) -> None:
        self.progress = progress

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.progress.view(options.max_width)
