"""`kind: none` (sandbox/host.py), the stand-in the computer tools run on: real processes, their time bounded
with everything they started, their output bounded with the cut said."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from evals_cli.computer.bash import bash_argv, bash_text
from evals_cli.sandbox.base import SandboxUnavailable
from evals_cli.sandbox.host import HostSandbox


def _gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:  # a zombie child of ours is gone too: reap it if it is ours
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        time.sleep(0.01)
    return False


def test_a_command_past_its_timeout_is_killed_with_what_it_started(tmp_path: Path) -> None:
    sandbox = HostSandbox(tmp_path)
    argv, timeout, note = bash_argv({"command": "sleep 300 & echo $! > child.pid; echo started; sleep 300",
                                     "timeout": 1})
    started = time.monotonic()
    result = asyncio.run(sandbox.exec(argv, timeout=timeout))
    assert time.monotonic() - started < 30
    assert result.timed_out and result.exit_code is None
    assert _gone(int((tmp_path / "child.pid").read_text()))  # the background sleeper went with it
    said, is_error = bash_text(result, timeout, note)
    assert is_error and said.startswith("Error: the command did not finish within 1s") and "started" in said


def test_output_past_the_bound_is_cut_and_the_cut_said(tmp_path: Path) -> None:
    sandbox = HostSandbox(tmp_path)
    result = asyncio.run(sandbox.exec(["bash", "-c", "yes abcdefgh | head -c 5000000; echo done >&2"],
                                      timeout=60, max_output=1000))
    assert result.exit_code == 0 and result.cut
    assert result.stdout.startswith("abcdefgh\n") and "[output cut: more than 1000 bytes" in result.stdout
    assert len(result.stdout) < 1200 and result.stderr == "done\n"
    said, is_error = bash_text(result, 60)
    assert not is_error and said.endswith("[stderr]\ndone\n[exit code 0]")


def test_a_background_child_holding_the_pipes_does_not_hold_the_call(tmp_path: Path) -> None:
    sandbox = HostSandbox(tmp_path)
    started = time.monotonic()
    result = asyncio.run(sandbox.exec(["bash", "-c", "sleep 300 & echo quick"], timeout=120))
    assert result.exit_code == 0 and result.stdout == "quick\n" and not result.timed_out
    assert time.monotonic() - started < 60


def test_a_missing_program_or_a_closed_sandbox_cannot_run(tmp_path: Path) -> None:
    sandbox = HostSandbox()
    folder = sandbox.workspace
    with pytest.raises(SandboxUnavailable, match="no-such-program"):
        asyncio.run(sandbox.exec(["no-such-program"], timeout=5))
    asyncio.run(sandbox.close())
    assert not folder.exists()  # its own folder goes with it
    with pytest.raises(SandboxUnavailable, match="closed"):
        asyncio.run(sandbox.exec(["true"], timeout=5))
