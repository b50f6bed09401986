"""What an MCP server can send or leave behind, bounded: a workspace past the read-back bound is an error (never
a false pass of `deleted:`), one message past the size bound errors its sample before the SDK parses it, a
server's helper processes end with it, and workspaces a killed run left are cleaned by the next run."""

from __future__ import annotations

import os
import signal
import sys
import uuid
from pathlib import Path

import pytest

from tests.helpers import ROOT, run_cli
from tests.scripted_server import ScriptedServer, agent_script, call, text
from tests.test_mcp import _processes_with, calls_of, demo, http_server, mcp_suite, run

__all__ = ["http_server"]  # the fixture, used here by name


@pytest.mark.slow
def test_a_workspace_past_the_file_bound_is_an_error_never_a_pass_of_deleted(
        tmp_path: Path, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from evals_cli.mcp import workspace

    monkeypatch.setattr(workspace, "MAX_FILES", 50)  # the same bound, smaller: the test writes 60 files, not 2,060
    server.script = agent_script({"many": [call("many_files", {"count": 60}), text("done")]})
    suite = mcp_suite(tmp_path, server, [{"id": "many", "input": "many", "expected_state": {
        "deleted": ["zzz_must_go.txt"]}}], {"files": demo("--root", "{workspace}")},
        environment={"files": {"zzz_must_go.txt": "nobody touches me"}}, graders={"state": {"kind": "final_state"}})
    code, [line], said = run(tmp_path, suite)
    assert calls_of(line)[0]["result"] == "wrote 60 files"
    assert line["passed"] is not True and line["grades"] == {}, line["grades"]  # not graded on a cut list
    assert line["error"]["category"] == "tool_server"
    assert "more than 50 files" in line["error"]["message"]
    assert code != 0, said


FLOOD = str(ROOT / "tests" / "mcp_servers" / "flood_server.py")


def test_lines_past_the_bound_are_dropped_as_they_come_and_the_next_line_is_whole() -> None:
    from evals_cli.mcp.stdio import _Lines

    lines = _Lines(10)
    assert lines.feed(b'{"a":1}\n{"b"') == [b'{"a":1}']
    assert lines.feed(b":2}\n") == [b'{"b":2}'] and not lines.overflowed
    assert lines.feed(b"x" * 8) == [] and lines.feed(b"y" * 8) == [] and lines.overflowed
    assert len(lines.buffer) == 0  # never more than the bound held
    assert lines.feed(b"zz\nok\n") == [b"ok"]  # the rest of the long line is dropped up to its newline


@pytest.mark.slow
def test_a_stdio_message_past_the_bound_is_a_tool_server_error_before_it_is_parsed(
        tmp_path: Path, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALS_MAX_MCP_MESSAGE_BYTES", "50000")
    server.script = agent_script({"few": [call("numbers", {"count": 100}), text("done")],
                                  "many": [call("numbers", {"count": 20000}), text("done")]})
    flood = {"flood": {"command": sys.executable, "args": [FLOOD], "include": ["numbers"]}}
    suite = mcp_suite(tmp_path, server, [{"id": "few", "input": "few", "ground_truth": "done"}], flood)
    code, [line], said = run(tmp_path, suite)
    assert code == 0, said
    assert calls_of(line)[0]["result"] == "100 numbers"  # a message under the bound is read as before
    suite = mcp_suite(tmp_path, server, [{"id": "many", "input": "many", "ground_truth": "done"}], flood)
    code, [line], said = run(tmp_path, suite, out="many")  # a 110 KB line
    assert code == 3, said
    assert line["error"]["category"] == "tool_server" and line["passed"] is not True
    assert "over 50000 bytes (EVALS_MAX_MCP_MESSAGE_BYTES)" in line["error"]["message"]


@pytest.mark.slow
def test_an_http_message_past_the_bound_is_a_tool_server_error(tmp_path: Path, server: ScriptedServer,
                                                               http_server: str,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALS_MAX_MCP_MESSAGE_BYTES", "50000")
    server.script = agent_script({"big": [call("big", {"size": 200_000}), text("x")],
                                  "add": [call("add", {"a": 1, "b": 2}), text("3")]})
    rows = [{"id": "add", "input": "add", "ground_truth": "3"}]
    suite = mcp_suite(tmp_path, server, rows, {"remote": {"url": http_server, "include": ["big", "add"]}})
    code, [line], said = run(tmp_path, suite)
    assert code == 0 and calls_of(line)[0]["result"] == "3", said
    suite = mcp_suite(tmp_path, server, [{"id": "big", "input": "big", "ground_truth": "x"}],
                      {"remote": {"url": http_server, "include": ["big", "add"], "timeout": 10}})
    code, [line], said = run(tmp_path, suite, out="big")
    assert code == 3, said
    assert line["error"]["category"] == "tool_server"
    assert "over 50000 bytes (EVALS_MAX_MCP_MESSAGE_BYTES)" in line["error"]["message"], line["error"]


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process table from /proc")
def test_helpers_a_server_started_end_with_it_after_a_normal_run(tmp_path: Path, server: ScriptedServer) -> None:
    marker = f"evals-helper-check-{uuid.uuid4().hex[:8]}"
    server.script = agent_script({"spawn": [call("spawn_helper", {"marker": marker}), text("done")]})
    suite = mcp_suite(tmp_path, server, [{"id": "s", "input": "spawn", "ground_truth": "done"}],
                      {"demo": demo("--root", "{workspace}")}, environment={"files": {"a.txt": "a"}})
    try:
        code, [line], said = run(tmp_path, suite)
        assert code == 0 and calls_of(line)[0]["result"].startswith("helper "), said
        assert _processes_with(marker) == []  # ended with its server's group, before the run returned
    finally:
        for pid in _processes_with(marker):
            os.kill(pid, signal.SIGKILL)


def test_workspaces_a_killed_run_left_are_removed_at_the_next_start_and_only_those(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import socket
    import subprocess
    import tempfile

    from evals_cli.mcp import workspace

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    dead_pid = int(gone.stdout)  # a process that has exited (and been reaped)

    def left(name: str, owner: str | None) -> Path:
        root = tmp_path / name
        (root / "00001-s-r0").mkdir(parents=True)
        if owner is not None:
            (root / workspace.OWNER).write_text(owner, encoding="utf-8")
        return root

    killed = left(f"evals-mcp-{dead_pid}-abc", f"{dead_pid} {socket.gethostname()}")
    running = left(f"evals-mcp-{os.getppid()}-def", f"{os.getppid()} {socket.gethostname()}")
    elsewhere = left(f"evals-mcp-{dead_pid}-ghi", f"{dead_pid} another-host")
    unmarked = left("evals-mcp-old", None)
    root = workspace.new_root()
    try:
        assert not killed.exists()
        assert running.exists() and elsewhere.exists() and unmarked.exists()
        assert root.name.startswith(f"evals-mcp-{os.getpid()}-")
        assert (root / workspace.OWNER).read_text().split() == [str(os.getpid()), socket.gethostname()]
        assert root not in workspace.clean_orphans(tmp_path) and root.exists()  # its own is never removed
    finally:
        workspace.remove(root)


# --- what a slow or noisy server is told as -------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("how", ["hangs", "slower than its timeout"])
def test_a_server_that_misses_the_handshake_timeout_is_named_with_the_setting_to_raise(
        tmp_path: Path, server: ScriptedServer, how: str) -> None:
    entry = ({"command": sys.executable, "args": ["-c", "import time; time.sleep(60)"], "timeout": 1}
             if how == "hangs" else demo(timeout=0.05))
    suite = mcp_suite(tmp_path, server, [{"id": "a", "input": "a", "ground_truth": "x"}], {"slow": entry})
    code, lines, said = run(tmp_path, suite)
    assert code == 2 and lines == [], said
    assert f"did not finish the MCP handshake within timeout {entry['timeout']:g}s" in said
    assert "raise mcp_servers.slow.timeout" in said and "CancelledError" not in said


@pytest.mark.slow
def test_what_the_sdk_logs_is_one_warning_line_naming_the_server(tmp_path: Path, server: ScriptedServer) -> None:
    suite = mcp_suite(tmp_path, server, [{"id": "a", "input": "a", "ground_truth": "x"}],
                      {"noisy": {"command": sys.executable, "args": [FLOOD, "--bad-notification"]}})
    listed = run_cli("list", "tools", str(suite))
    assert listed.returncode == 0, listed.stderr
    assert "Traceback" not in listed.stderr + listed.stdout
    warned = [line for line in listed.stderr.splitlines() if "Failed to validate notification" in line]
    assert len(warned) == 1 and warned[0].startswith("warning: MCP server 'noisy': "), listed.stderr


@pytest.mark.slow
def test_a_file_over_the_read_back_bound_is_na_for_what_checks_it_and_a_big_declared_file_left_alone_is_unchanged(
        tmp_path: Path, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from evals_cli.mcp import workspace

    monkeypatch.setattr(workspace, "MAX_FILE_BYTES", 100)  # the same bound, smaller
    server.script = agent_script({"write": [call("write_note", {"name": "out.txt", "text": "y" * 500}), text("ok")],
                                  "look": [call("read_note", {"name": "seed.txt"}), text("ok")]})
    rows = [{"id": "write", "input": "write", "expected_state": {"files": {"out.txt": {"contains": "y"}}}},
            {"id": "look", "input": "look", "expected_state": {"unchanged": ["seed.txt"], "no_other_changes": True}}]
    suite = mcp_suite(tmp_path, server, rows, {"files": demo("--root", "{workspace}")}, concurrency=1,
                      environment={"files": {"seed.txt": "s" * 500}}, graders={"state": {"kind": "final_state"}})
    code, lines, said = run(tmp_path, suite)
    grades = {line["sample_id"]: line["grades"]["state"] for line in lines}
    assert grades["write"]["applicable"] is False, grades["write"]  # n/a: out of every average, never a pass
    assert next(line for line in lines if line["sample_id"] == "write")["passed"] is None  # no verdict
    assert "out.txt: over the workspace read-back bound" in grades["write"]["rationale"]
    assert grades["look"]["score"] == 1.0, grades["look"]  # the 500-byte seed, read back as declared
