"""Issue 14 item 2: the live view shows a progress bar with done/total, errors, the running pass rate, elapsed
time and ETA, and the samples in flight (id, turn, step) when there are few; Ctrl-C is acknowledged at once
("stopping: waiting for N in-flight samples (Ctrl-C again to abandon them)"), the interruption is told once,
and the run ends with the exact command that resumes it."""

from __future__ import annotations

import asyncio
import io
import json
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from evals_cli.display.live import LiveProgress, clock, stopping_message
from evals_cli.display.state import RunState
from evals_cli.models.results import ErrorInfo, SampleResult
from tests.helpers import process_program, read_jsonl, wait_for_lines, write_suite
from tests.helpers import start_run as start
from tests.scripted_server import Reply, ScriptedServer, call, steps_since_user, text

GRADERS = {"answer": {"kind": "tool", "function": "contains"}}


@dataclass
class Entry:
    sample_id: str
    repeat: int
    started: float
    where: str


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def terminal(width: int = 160) -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, force_terminal=True, width=width, color_system=None), buffer


def rendered(progress: LiveProgress, width: int = 160) -> str:
    console, buffer = terminal(width)
    console.print(progress._render())
    return buffer.getvalue()


def state_with(done: int, errored: int, passed: int, total: int = 30) -> RunState:
    state = RunState(["answer"], total_expected=total)
    for i in range(done):
        result = SampleResult(sample_id=f"s{i:02d}")
        if i < errored:
            result.error = ErrorInfo(category="endpoint", message="boom")
        else:
            result.passed = i - errored < passed
            result.score = 1.0 if result.passed else 0.0
        state.add(result)
    return state


def test_the_view_shows_bar_counts_rates_times_and_in_flight_samples() -> None:
    fake = Clock()
    flying = [Entry("refund-policy-07", 0, 1000.0, "turn 1, step 2"), Entry("db-port-08", 0, 1003.0, "grading")]
    console, _ = terminal()
    progress = LiveProgress(console, state_with(10, 1, 6), enabled=True, in_flight=lambda: flying, clock_fn=fake)
    fake.now = 1020.0  # 10 samples in 20 s: 20 left take 40 s
    view = rendered(progress)
    first = view.splitlines()[0]
    assert first.startswith("running ") and "━" in first
    assert "10/30 (33%)" in first and "1 errored" in first and "pass rate 67%" in first  # 6 of 9 graded
    assert "elapsed 0:20" in first and "ETA 0:40" in first
    assert "refund-policy-07" in view and "turn 1, step 2" in view and "20s" in view
    assert "db-port-08" in view and "grading" in view

    many = [Entry(f"s{i}", 0, 1000.0, "turn 1, step 1") for i in range(9)]  # more than 8: a count, not a list
    progress.in_flight = lambda: many
    view = rendered(progress)
    assert "9 samples in flight" in view and "s3 " not in view

    narrow = rendered(progress, width=80)  # the numbers go on their own line, never wrapped mid-phrase
    assert all(len(line) <= 80 for line in narrow.splitlines())
    assert "elapsed 0:20 · ETA 0:40" in narrow


def test_eta_ignores_results_kept_from_a_resumed_run() -> None:
    fake = Clock()
    console, _ = terminal()
    progress = LiveProgress(console, state_with(20, 0, 20), enabled=True, resumed=lambda: 15, clock_fn=fake)
    fake.now = 1010.0  # 5 new samples in 10 s: the 10 left take 20 s (not 5 s, as 20 done in 10 s would say)
    assert progress.eta() == 20.0
    assert clock(3725) == "1:02:05" and clock(65) == "1:05"


def test_in_flight_reports_sample_turn_and_step(server: ScriptedServer, tmp_path: Path) -> None:
    """The runner's hook: while samples run, Execution.in_flight() names each with the step its target is on."""
    from evals_cli.run_options import RunOptions
    from evals_cli.runner.execution import Execution
    from evals_cli.runner.run import prepare

    def slow(path: str, body: dict[str, Any]) -> Reply:
        step = steps_since_user(body)
        return Reply(call("list_files", {"directory": "."}) if step < 2 else text("fine"), delay=0.15)

    server.script = slow
    rows = [{"id": f"s{i}", "input": f"q{i}", "ground_truth": "fine"} for i in range(6)]
    suite = write_suite(tmp_path, rows, base_url=server.url, graders=GRADERS, concurrency=3)
    prepared = prepare(suite, RunOptions(output=tmp_path / "out"))
    seen: list[tuple[str, str]] = []
    execution = Execution(prepared, None)  # type: ignore[arg-type]

    async def watch() -> None:
        while True:
            seen.extend((e.sample_id, e.where) for e in execution.in_flight())
            await asyncio.sleep(0.05)

    async def main() -> None:
        watcher = asyncio.create_task(watch())
        await execution.run()
        watcher.cancel()

    asyncio.run(main())
    assert {sid for sid, _ in seen} == {f"s{i}" for i in range(6)}
    wheres = {where for _, where in seen}
    assert {"turn 1, step 1", "turn 1, step 2", "turn 1, step 3"} <= wheres, wheres
    assert not execution.in_flight()


def test_stopping_messages() -> None:
    assert stopping_message(3) == "stopping: waiting for 3 in-flight samples (Ctrl-C again to abandon them)"
    assert stopping_message(1) == "stopping: waiting for 1 in-flight sample (Ctrl-C again to abandon them)"
    assert stopping_message(2, presses=2) == "stopping now: abandoning 2 in-flight samples"


@pytest.mark.slow  # a real process with signals or 20 MB of output: seconds; make test-slow runs it
def test_ctrl_c_is_acknowledged_at_once_told_once_and_ends_with_the_resume_command(
        server: ScriptedServer, tmp_path: Path) -> None:
    def script(path: str, body: dict[str, Any]) -> Reply:  # three quick samples, then slow ones (3 s each)
        quick = any(f"question {i}\"" in json.dumps(body) for i in range(3))
        return Reply(text("fine"), delay=0.0 if quick else 3.0)

    server.script = script
    rows = [{"id": f"s{i:02d}", "input": f"question {i}", "ground_truth": "fine"} for i in range(24)]
    suite = write_suite(tmp_path, rows, base_url=server.url, graders=GRADERS, concurrency=3)
    out = tmp_path / "out"
    proc = start(suite, out, "--grace", "5")
    wait_for_lines(out / "results.jsonl", 3)
    proc.send_signal(signal.SIGINT)
    sent = time.monotonic()
    assert proc.stderr is not None
    first = proc.stderr.readline()  # said at once, before the in-flight samples finish
    assert time.monotonic() - sent < 1.5, "the stopping message waited for the samples in flight (3 s)"
    stdout, rest = proc.communicate(timeout=30)
    stderr = first + rest
    assert proc.returncode == 130, stderr
    assert first.startswith("stopping: waiting for ") and first.rstrip().endswith(
        "in-flight samples (Ctrl-C again to abandon them)"), first
    assert stderr.count("stopping: ") == 1
    everything = stdout + stderr
    assert everything.count("stopped by SIGINT") == 1, everything  # told once (the footer), not twice
    assert "error: stopped by" not in stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert lines[-1] == f"to finish the run: {process_program()} run {suite} --resume {out}"
    assert len(read_jsonl(out / "results.jsonl")) < 24
    assert "(Ctrl-C again to abandon them)" in first and first.split()[3] in ("2", "3")  # the slow ones
