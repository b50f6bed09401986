"""Issue 14 items 3 and 4: when stdout is not a terminal (a CI log), a plain progress line comes every 10% of the
samples or every 15 s, whichever comes first; the table has no ANSI codes, no padding, no trailing spaces, and at
80 columns no sample id or tool name is cut mid-word. The CI log is the one bench/terminal_captures.py writes."""

from __future__ import annotations

import io
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

from evals_cli.display.live import LiveProgress
from evals_cli.display.state import RunState
from evals_cli.models.results import SampleResult
from tests.helpers import ROOT, process_program
from tests.scripted_server import ScriptedServer

sys.path.insert(0, str(ROOT / "bench"))
import terminal_captures as captures  # noqa: E402


def plain_console() -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, force_terminal=False, width=80, color_system=None), buffer


def test_a_line_every_ten_percent() -> None:
    console, buffer = plain_console()
    state = RunState(["answer"], total_expected=30)
    with LiveProgress(console, state, enabled=True, interval_s=3600) as progress:
        for i in range(30):
            state.add(SampleResult(sample_id=f"s{i}", passed=True, score=1.0))
            progress.update()
    lines = buffer.getvalue().splitlines()
    assert [line.split()[1] for line in lines] == [f"{n}/30" for n in range(3, 31, 3)]
    assert lines[-1].startswith("progress: 30/30 (100%) · 0 errored · pass rate 100% · elapsed ")


def test_a_line_every_interval_when_samples_are_slow() -> None:
    console, buffer = plain_console()
    state = RunState(["answer"], total_expected=1000)
    with LiveProgress(console, state, enabled=True, interval_s=0.2):
        time.sleep(1.3)  # no result at all: the log still shows the run is alive
    lines = buffer.getvalue().splitlines()
    assert len(lines) >= 2 and all(line.startswith("progress: 0/1000 (0%)") for line in lines)


def test_quiet_prints_no_progress() -> None:
    console, buffer = plain_console()
    state = RunState(["answer"], total_expected=10)
    with LiveProgress(console, state, enabled=False) as progress:
        for i in range(10):
            state.add(SampleResult(sample_id=f"s{i}", passed=True))
            progress.update()
    assert buffer.getvalue() == ""


@pytest.mark.slow  # runs bench/terminal_captures.py's 30-sample suite: in `make test-slow`, which .ci/run runs
@pytest.mark.parametrize("columns", [80, 160])
def test_the_ci_log_capture(tmp_path: Path, columns: int) -> None:
    """30 samples (passing, failing a grader, calling a forbidden tool, erroring) with stdout piped to a file."""
    server = ScriptedServer(captures.script(delay=0.02)).start()
    try:
        suite = captures.write_suite(tmp_path, server.url, concurrency=6)
        log = tmp_path / f"ci-{columns}.log"
        code = captures.ci_log(suite, Path("results") / "ci", columns, log)
    finally:
        server.stop()
    text = log.read_text()
    assert code == 0, log.with_suffix(".err").read_text()
    assert captures.ci_log_problems(text, captures.sample_ids(), captures.CALLED, columns) == []
    lines = text.splitlines()
    progress = [line for line in lines if line.startswith("progress: ")]
    assert len(progress) >= 10 and progress[-1].startswith("progress: 30/30 (100%)")
    assert lines.index(progress[-1]) < lines.index("terminal-captures")  # all progress before the table
    table = lines[lines.index("terminal-captures"):]
    # every line fits, but the commands to paste, which stay whole on one line
    commands = ("results: ", "Run ", "full report: ", "every reason whole: ")
    assert max(len(line) for line in table if not line.startswith(commands)) <= columns
    assert "why 13 samples did not pass (3 errored):" in lines
    assert f"full report: {process_program()} report results/ci --html report.html" in lines
