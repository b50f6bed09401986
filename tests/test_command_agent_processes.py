"""`kind: command` against hostile programs: what an agent starts never outlives its episode (a grandchild in a
session of its own that ignores SIGTERM, a background child holding stdout, an `evals` killed mid-episode), and its
output pipes are read to their bounds whatever it writes (huge stderr lines, a huge stdout line), so a correct
agent is never blocked, nor evals' memory filled. Real agent programs written into tmp_path, a real `evals run`."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from tests.helpers import read_jsonl, run_cli, start_run
from tests.test_command_agent import alive, command_suite

# One program, its behaviour chosen by environment variables: it answers every user message with "echo: ..." and
# exits at end of input, after doing what the variables ask.
AGENT = r'''
import json, os, signal, subprocess, sys, time

def orphan(path):
    """A grandchild in a session of its own that ignores SIGTERM, orphaned (its parent exits), its pid in path."""
    r, w = os.pipe()
    sys.stdout.flush()
    if os.fork() == 0:
        os.close(r)
        if os.fork() == 0:
            os.setsid()
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            os.write(w, str(os.getpid()).encode())
            os.close(w)
            time.sleep(600)
        os._exit(0)
    os.close(w)
    pid = os.read(r, 32).decode()
    with open(path + ".tmp", "w") as fh:
        fh.write(pid)
    os.replace(path + ".tmp", path)

env = os.environ
if env.get("ORPHAN"):
    orphan(env["ORPHAN"])
if env.get("BACKGROUND"):  # a child in the agent's own group that holds stdout and stderr open
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    with open(env["BACKGROUND"], "w") as fh:
        fh.write(str(child.pid))
for spec in filter(None, env.get("STDERR", "").split(",")):  # COUNTxBYTES: lines of one byte repeated
    count, size = (int(n) for n in spec.split("x"))
    for _ in range(count):
        sys.stderr.buffer.write(b"e" * size + b"\n")
sys.stderr.buffer.write(env.get("LAST_WORDS", "").encode() + b"\n")
sys.stderr.flush()
if env.get("STDOUT_LINE"):
    sys.stdout.write("x" * int(env["STDOUT_LINE"]) + "\n")
    sys.stdout.flush()
if env.get("EXIT"):
    sys.exit(int(env["EXIT"]))
for line in sys.stdin:
    print(json.dumps({"type": "assistant", "content": "echo: " + json.loads(line)["content"]}), flush=True)
while env.get("HANG_AT_END"):
    time.sleep(1)
'''


def _run(tmp: Path, env: dict[str, str], **target: Any) -> dict[str, Any]:
    """One sample ("hello", expecting the echo) of a suite whose target is the agent above; its results line."""
    (tmp / "agent.py").write_text(AGENT, encoding="utf-8")
    spec = {"kind": "command", "command": [sys.executable, "agent.py"], "telemetry": False, "env": env,
            "exit_timeout": 2, "sample_timeout": 30, **target}
    rows = [{"id": "s", "input": "hello", "ground_truth": "echo: hello"}]
    graders = {"answer": {"kind": "match", "function": "exact_match", "extractor": "last_assistant"}}
    result = run_cli("run", str(command_suite(tmp, spec, rows, graders)), "-o", str(tmp / "out"))
    assert (tmp / "out" / "results.jsonl").exists(), result.stdout + result.stderr
    [row] = read_jsonl(tmp / "out" / "results.jsonl")
    return row


def _passed(row: dict[str, Any]) -> bool:
    return row["error"] is None and row["passed"] is True and row["grades"]["answer"]["score"] == 1.0


def test_an_orphan_in_its_own_session_ignoring_sigterm_is_gone_when_the_run_returns(tmp_path: Path) -> None:
    row = _run(tmp_path, {"ORPHAN": str(tmp_path / "orphan.pid")})
    orphan = int((tmp_path / "orphan.pid").read_text())
    assert not alive(orphan)  # setsid, SIGTERM ignored, re-parented: found and killed all the same
    assert _passed(row), row["error"]  # and the episode it outlived is a pass: the agent itself exited


def test_a_stopped_agents_orphan_in_its_own_session_is_gone_too(tmp_path: Path) -> None:
    row = _run(tmp_path, {"ORPHAN": str(tmp_path / "orphan.pid"), "HANG_AT_END": "1"}, exit_timeout=0.3)
    assert "did not exit within exit_timeout (0.3s)" in row["error"]["message"]
    assert not alive(int((tmp_path / "orphan.pid").read_text()))


def test_a_background_child_holding_stdout_does_not_change_a_finished_episode(tmp_path: Path) -> None:
    row = _run(tmp_path, {"BACKGROUND": str(tmp_path / "child.pid")})
    assert _passed(row), row["error"]  # the agent exited at end of input: the child's open stdout is not its fault
    assert not alive(int((tmp_path / "child.pid").read_text()))


def test_forty_stderr_lines_of_2_mb_keep_a_bounded_tail(tmp_path: Path) -> None:
    row = _run(tmp_path, {"STDERR": "40x2000000", "LAST_WORDS": "giving up", "EXIT": "3"})
    message = row["error"]["message"]
    assert "exited (code 3)" in message and message.rstrip().endswith("giving up")
    assert len(message.encode()) < 80 * 1024  # 80 MB written; a bounded tail kept
    assert "… [cut 1,995,904 bytes]" in message  # each line's head (4 KiB) kept, the cut said


def test_the_stderr_tail_after_a_5_mb_line_is_kept(tmp_path: Path) -> None:
    row = _run(tmp_path, {"STDERR": "1x5242880", "LAST_WORDS": "the last words", "EXIT": "3"})
    message = row["error"]["message"]
    assert "… [cut 5,238,784 bytes]" in message and message.rstrip().endswith("the last words")


def test_a_5_mb_stderr_line_then_ordinary_logs_does_not_block_a_correct_agent(tmp_path: Path) -> None:
    row = _run(tmp_path, {"STDERR": "1x5242880,10000x1000", "LAST_WORDS": "done"})  # 15 MB, more than any buffer
    assert _passed(row), row["error"]


def test_a_stdout_line_over_the_limit_fails_the_episode_saying_so(tmp_path: Path) -> None:
    row = _run(tmp_path, {"STDOUT_LINE": str(5 * 2**20)})
    message = row["error"]["message"]
    assert row["error"]["category"] == "agent" and row["passed"] is not True
    assert "wrote a stdout line over 4 MiB" in message and "write long logs to stderr" in message


def test_a_killed_evals_leaves_no_process_of_its_agent_behind(tmp_path: Path) -> None:
    orphan_file = tmp_path / "orphan.pid"
    (tmp_path / "agent.py").write_text(AGENT.replace("for line in sys.stdin:", "time.sleep(600)\nfor line in []:"),
                                       encoding="utf-8")
    target = {"kind": "command", "command": [sys.executable, "agent.py"], "telemetry": False,
              "env": {"ORPHAN": str(orphan_file)}}
    suite = command_suite(tmp_path, target, [{"id": "s", "input": "hello"}], {"n": {"kind": "no_loops"}})
    run = start_run(suite, tmp_path / "out")
    try:
        deadline = time.monotonic() + 60
        while not orphan_file.exists() and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)  # the file appears once the agent has started its orphan
        assert orphan_file.exists(), run.communicate()
        orphan = int(orphan_file.read_text())
        os.kill(run.pid, signal.SIGKILL)  # no cleanup of its own: the reaper's death signal does it
    finally:
        run.kill()
        run.communicate()
    deadline = time.monotonic() + 10
    while alive(orphan) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not alive(orphan)


def test_a_program_that_cannot_be_executed_is_the_samples_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "agent.sh").write_text("#!/bin/sh\n", encoding="utf-8")  # no execute bit: even root cannot run it
    target = {"kind": "command", "command": ["./agent.sh"], "telemetry": False}
    rows = [{"id": "s", "input": "hello"}]
    result = run_cli("run", str(command_suite(tmp_path, target, rows, {"n": {"kind": "no_loops"}})),
                     "-o", str(tmp_path / "out"))
    [row] = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert f"cannot start './agent.sh' in {tmp_path}: Permission denied" in row["error"]["message"]
    assert result.returncode == 3, result.stdout
