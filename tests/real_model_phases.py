"""The phases of `make test-real` (setup, server start, live run, replay), each with its own time budget.

On a busy machine every phase slows down, and a run that only had one bound for everything (a 1,200 s subprocess
timeout around the live run, pytest's timeout around the rest) ended in a bare TimeoutExpired that said neither
which phase was too slow nor how far it had got. Here a phase that runs out of time fails with one line naming
it and what it reached ("live run: 2 of 3 samples done, 7 agent calls and 2 judge calls answered when its
1200 s budget ran out"), and a suite run past its budget is interrupted the way a user would (SIGINT), so the
results it finished stay on disk to look at. Imported by real_model_server.py, which also runs as a script.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Seconds per phase. Measured (README, "Local models"): setup 15 s cold from a nearby package index, server start
# 2-10 s, live run 1-4 min with one llama.cpp thread at 1-minute load up to 14 on 2 cores, replay under 10 s.
# The budgets leave several times that, for a slower download or a busier machine; they exist to end a run that
# cannot finish with a message that says why, not to police speed.
BUDGETS: dict[str, float] = {"setup": 900.0, "server start": 300.0, "live run": 1200.0, "replay": 300.0}

FIX = "the machine is too busy (or the network too slow) for this phase: rerun when it is quieter, or raise its " \
      "budget in tests/real_model_phases.py"


class PhaseTimeout(RuntimeError):
    """A phase ran out of its budget; the message names the phase and what it reached."""


@dataclass
class Phase:
    """One phase's clock. `reached` is kept up to date as the phase goes, so running out of time can say it."""

    name: str
    budget: float
    reached: str = "nothing done yet"
    started: float = field(default_factory=time.monotonic)

    def remaining(self) -> float:
        return self.budget - (time.monotonic() - self.started)

    def timed_out(self, detail: str = "") -> PhaseTimeout:
        return PhaseTimeout(f"{self.name}: {self.reached} when its {self.budget:.0f} s budget ran out\n({FIX})"
                            + (f"\n{detail}" if detail else ""))

    def check(self) -> None:
        if self.remaining() <= 0:
            raise self.timed_out()

    def run(self, cmd: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        """A setup command within what is left of the budget (killed past it); a failure raises with its output."""
        self.check()
        try:
            done = subprocess.run(list(cmd), capture_output=True, text=True, timeout=self.remaining(), **kwargs)
        except subprocess.TimeoutExpired:
            raise self.timed_out() from None
        if done.returncode != 0:
            raise RuntimeError(f"{self.name}: {' '.join(map(str, cmd))} failed ({done.returncode}):\n"
                               f"{done.stdout}\n{done.stderr}")
        return done


def interrupt(proc: subprocess.Popen[str], grace: float = 5.0) -> tuple[str, str]:
    """Stop a run as Ctrl-C would: SIGINT (stop scheduling, keep what is finished), a second one (cancel what is
    in flight), then SIGKILL for a process that still does not exit. Returns what it printed."""
    for sig, wait in ((signal.SIGINT, grace), (signal.SIGINT, 30.0)):
        if proc.poll() is not None:
            break
        proc.send_signal(sig)
        try:
            return proc.communicate(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
    proc.kill()
    return proc.communicate()


def run_within(phase: Phase, cmd: Sequence[str], progress: Callable[[], str],
               **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """`cmd` run to its end within the phase's budget; past it, `progress()` says what it reached, the process is
    interrupted (see `interrupt`) and PhaseTimeout is raised with the last of its stderr."""
    proc = subprocess.Popen(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)
    try:
        stdout, stderr = proc.communicate(timeout=max(phase.remaining(), 0.0))
    except subprocess.TimeoutExpired:
        phase.reached = progress()  # counted when the budget ran out, before the interrupt changes anything
        _, stderr = interrupt(proc)
        raise phase.timed_out(f"its stderr ended with:\n{stderr[-2000:]}" if stderr.strip() else "") from None
    except BaseException:  # pytest's own timeout, Ctrl-C: never leave the run behind
        proc.kill()
        proc.wait()
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def is_judge(exchange: dict[str, Any]) -> bool:
    """A recorded exchange of the judge (its context names the grader, or the request offers no tools)."""
    return "judge '" in exchange.get("context", "") or "tools" not in exchange.get("request", {})


def _lines(path: Path | None) -> list[dict[str, Any]]:
    """The complete JSON lines of a file being written (a line cut off mid-write is not counted)."""
    if path is None or not path.is_file():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return rows


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def suite_progress(folder: Path, samples: int, recording: Path | None = None) -> str:
    """How far a suite run got: samples with a result in `folder`, and when recording, the model calls answered."""
    done = len(_lines(folder / "results.jsonl"))
    text = f"{done} of {samples} samples done"
    if recording is not None:
        exchanges = _lines(recording)
        judge = sum(map(is_judge, exchanges))
        text += f", {_count(len(exchanges) - judge, 'agent call')} and {_count(judge, 'judge call')} answered"
    return text
