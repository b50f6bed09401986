"""`sandbox: {kind: bwrap}` with real bubblewrap: the world filled into and read back from the sandbox's
/workspace, setup and a command agent run inside, and the walls hold against hostile input (a host file, the
network, a fork bomb, a command writing without end, one ignoring SIGTERM, a symlink out of /workspace)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from evals_cli.models.sandbox import BwrapSandboxSpec
from evals_cli.sandbox.base import SandboxUnavailable
from evals_cli.sandbox.bwrap import BwrapSandbox
from evals_cli.sandbox.folders import PREFIX, Folders
from tests.helpers import ROOT, read_jsonl, run_cli, start_run

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed: "
                                "apt-get install bubblewrap")

AGENT = (ROOT / "tests" / "agents" / "sandbox_agent.py").read_text(encoding="utf-8")
ANSWER = {"answer": {"kind": "match", "function": "contains", "extractor": "last_assistant"}}


def sandbox_suite(tmp: Path, rows: list[dict[str, Any]], *, agent_name: str = "agent.py",
                  sandbox: dict[str, Any] | None = None, **target: Any) -> Path:
    """A suite whose command agent (tests/agents/sandbox_agent.py, put in the workspace) runs in bwrap."""
    (tmp / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    suite = {"name": "sandboxed", "dataset": "rows.jsonl", "concurrency": 2,
             "sandbox": sandbox or {"kind": "bwrap"}, "environment": {"files": {agent_name: AGENT}},
             "target": {"kind": "command", "command": ["python3", agent_name], "telemetry": False, **target},
             "graders": ANSWER, "gate": {"kind": "weighted_average", "aggregation": "avg_score", "op": "gte",
                                         "value": 0.5}}
    (tmp / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    return tmp / "suite.yaml"


def results(out: Path) -> dict[str, dict[str, Any]]:
    return {r["sample_id"]: r for r in read_jsonl(out / "results.jsonl")}


def replies(row: dict[str, Any]) -> list[str]:
    return [s["content"] for t in row["trajectory"]["turns"] for s in t["steps"] if s.get("content")]


def running_with(token: str) -> list[int]:
    """The live processes whose command line holds `token` (a name unique to one test)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
            state = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if token.encode() in cmdline and state != "Z":
            found.append(int(name))
    return found


def test_an_agent_in_bwrap_changes_its_workspace_and_reaches_only_the_receiver(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("host secret", encoding="utf-8")
    listener = socket.create_server(("127.0.0.1", 0))  # a host loopback service the agent must not reach
    port = listener.getsockname()[1]
    rows = [{"id": "a", "input": ["write new.txt hello", "delete old.txt", "probe"], "ground_truth": "export: 200",
             "environment": {"files": {"old.txt": "bye", "keep.txt": "same"},
                             "setup": {"commands": [["sh", "-c", "echo made > setup.txt; id -u > uid.txt"]]}}}]
    suite = sandbox_suite(tmp_path, rows, telemetry=True, env={"HOST_FILE": str(secret), "HOST_PORT": str(port)})
    try:
        done = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    finally:
        listener.close()
    assert done.returncode == 0, done.stdout + done.stderr
    row = results(tmp_path / "out")["a"]
    said = replies(row)[-1]
    assert "host-file: unreadable" in said and "host secret" not in said
    assert "net 127.0.0.1: unreachable" in said and "net 1.1.1.1: unreachable" in said
    assert "export: 200" in said  # the receiver is reached through the sandbox's socket, and only it
    assert "1 span(s)" in row["trajectory"]["not_observed"]  # the span arrived (it holds no model call)
    setup = {c["target"]: c for c in row["trajectory"]["setup_changes"]}
    assert setup["setup.txt"]["after"] == "made\n" and setup["setup.txt"]["actor"] == "setup"
    if os.geteuid() == 0:  # root runs each sandbox as a user of its own
        assert int(setup["uid.txt"]["after"]) >= 1_600_000_000
    changes = {c["target"]: (c["before"], c["after"]) for c in row["trajectory"]["state_changes"]}
    assert changes == {"new.txt": (None, "hello"), "old.txt": ("bye", None)}
    assert not list(Path(tempfile.gettempdir()).glob(f"{PREFIX}{os.getpid()}-*"))  # the run's folders removed


def test_a_fork_bomb_is_held_by_the_pids_limit_and_only_its_sample_errors(tmp_path: Path) -> None:
    token = f"bomb{uuid.uuid4().hex[:8]}"
    bomb = f"i=0; while [ $i -lt 5000 ]; do sh {token}.sh & i=$((i+1)); done; wait"
    rows: list[dict[str, Any]] = [{"id": "bomb", "input": "hi", "ground_truth": "echo: hi",
             "environment": {"files": {f"{token}.sh": "sleep 300\n"},
                             "setup": {"commands": [["sh", "-c", bomb]], "timeout": 60}}},
            {"id": "calm", "input": "hi", "ground_truth": "echo: hi"}]
    started = time.monotonic()
    done = run_cli("run", str(sandbox_suite(tmp_path, rows, sandbox={"kind": "bwrap", "pids": 64})),
                   "-o", str(tmp_path / "out"))
    found = results(tmp_path / "out")
    assert time.monotonic() - started < 60
    assert found["bomb"]["error"]["category"] == "setup" and "fork" in found["bomb"]["error"]["message"].lower()
    assert found["bomb"]["passed"] is not True and found["calm"]["passed"] is True
    assert running_with(token) == []  # the bomb's processes went with its sandbox
    assert done.returncode == 3, done.stdout  # an errored sample: the verdict is not given on the rest


def test_a_command_writing_without_end_stops_at_the_file_bound(tmp_path: Path) -> None:
    rows = [{"id": "flood", "input": "hi", "ground_truth": "echo: hi",
             "environment": {"setup": {"commands": [["sh", "-c", "yes > flood.txt"]], "timeout": 60}}}]
    started = time.monotonic()
    run_cli("run", str(sandbox_suite(tmp_path, rows, sandbox={"kind": "bwrap", "max_file_mb": 2})),
            "-o", str(tmp_path / "out"))
    error = results(tmp_path / "out")["flood"]["error"]
    assert error["category"] == "setup" and "File size limit exceeded" in error["message"]
    assert time.monotonic() - started < 30


def test_an_agent_ignoring_sigterm_is_killed_at_the_timeout_and_nothing_is_left(tmp_path: Path) -> None:
    name = f"hang{uuid.uuid4().hex[:8]}.py"
    rows = [{"id": "hang", "input": "hang", "ground_truth": "x"}]
    started = time.monotonic()
    run_cli("run", str(sandbox_suite(tmp_path, rows, agent_name=name, sample_timeout=2)), "-o", str(tmp_path / "out"))
    assert results(tmp_path / "out")["hang"]["error"]["category"] == "timeout"
    assert time.monotonic() - started < 30
    assert running_with(name) == []


def test_a_symlink_out_of_the_workspace_is_not_followed_by_the_read_back(tmp_path: Path) -> None:
    rows = [{"id": "links", "input": ["link leak /etc/hostname", "link out /etc", "write mine.txt ok"],
             "ground_truth": "wrote"}]
    run_cli("run", str(sandbox_suite(tmp_path, rows)), "-o", str(tmp_path / "out"))
    row = results(tmp_path / "out")["links"]
    assert row["error"] is None, row["error"]
    assert [c["target"] for c in row["trajectory"]["state_changes"]] == ["mine.txt"]


@pytest.mark.slow  # a real `evals run` process, started and signalled
def test_a_sigterm_mid_run_leaves_no_process_and_no_folder(tmp_path: Path) -> None:
    name = f"term{uuid.uuid4().hex[:8]}.py"
    rows = [{"id": "hang", "input": "hang", "ground_truth": "x"}]
    run = start_run(sandbox_suite(tmp_path, rows, agent_name=name, sample_timeout=120), tmp_path / "out")
    deadline = time.monotonic() + 60
    while not running_with(name) and time.monotonic() < deadline and run.poll() is None:
        time.sleep(0.05)
    assert running_with(name), "the agent never started"
    run.send_signal(signal.SIGTERM)
    run.communicate(timeout=60)
    deadline = time.monotonic() + 10  # the sandbox's tree is gone once the run has exited
    while running_with(name) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert running_with(name) == []
    assert not list(Path(tempfile.gettempdir()).glob(f"{PREFIX}{run.pid}-*"))


def test_the_folders_of_a_killed_run_are_removed_by_the_next(tmp_path: Path) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(gone.stdout)
    left = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{dead}-"))
    (left / ".evals-owner").write_text(f"{dead} {socket.gethostname()}\n", encoding="utf-8")
    (left / "00001-a-r0" / "workspace").mkdir(parents=True)
    rows = [{"id": "a", "input": "hi", "ground_truth": "echo: hi"}]
    done = run_cli("run", str(sandbox_suite(tmp_path, rows)), "-o", str(tmp_path / "out"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert not left.exists()


def test_without_bwrap_the_run_is_exit_2_naming_the_package(tmp_path: Path) -> None:
    rows = [{"id": "a", "input": "hi", "ground_truth": "x"}]
    suite = sandbox_suite(tmp_path, rows)
    data = yaml.safe_load(suite.read_text())
    data["target"] = {"kind": "openai_chat", "base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key": "k"}
    suite.write_text(yaml.safe_dump(data), encoding="utf-8")
    empty = tmp_path / "bin"
    empty.mkdir()
    done = run_cli("run", str(suite), "-o", str(tmp_path / "out"), env={"PATH": str(empty)})
    assert done.returncode == 2, done.stdout + done.stderr
    assert "install the bubblewrap package" in done.stderr and "kind: none" in done.stderr
    assert "Traceback" not in done.stdout + done.stderr


def test_a_row_whose_sandbox_cannot_be_made_is_refused_before_any_sample(tmp_path: Path) -> None:
    missing = {"kind": "docker", "engine": "docker", "image": "evals-no-such-image:never"}
    rows: list[dict[str, Any]] = [{"id": "boxless", "input": "hi", "ground_truth": "echo: hi", "sandbox": missing},
            {"id": "boxed", "input": "hi", "ground_truth": "echo: hi"}]
    done = run_cli("run", str(sandbox_suite(tmp_path, rows)), "-o", str(tmp_path / "out"))
    assert done.returncode == 2 and "rows.jsonl:1: sandbox." in done.stderr
    assert not (tmp_path / "out" / "results.jsonl").exists()  # checked as the suite's sandbox is: no sample ran


def test_exec_bounds_output_and_time_and_keeps_tmp_between_commands(tmp_path: Path) -> None:
    async def go() -> None:
        folders = Folders()  # a folder the sandbox's own user can pass through to (tmp_path is root's alone)
        box = BwrapSandbox(BwrapSandboxSpec(), folders.new("exec", 0))
        try:
            loud = await box.exec(["sh", "-c", "yes | head -c 300000"], timeout=10, max_output=1000)
            assert loud.ok and loud.cut and loud.stdout.startswith("y\ny\n") and "more bytes cut" in loud.stdout
            assert len(loud.stdout) < 1100
            started = time.monotonic()
            stuck = await box.exec(["sh", "-c", "trap '' TERM; sleep 600"], timeout=1)
            assert stuck.timed_out and stuck.exit_code is None and time.monotonic() - started < 10
            await box.exec(["sh", "-c", "echo kept > /tmp/note"], timeout=10)
            again = await box.exec(["cat", "/tmp/note"], timeout=10)
            assert again.stdout == "kept\n"
            home = await box.exec(["sh", "-c", f"ls /root /home {ROOT} 2>&1"], timeout=10)
            assert home.stdout.count("No such file") == 3, home.stdout  # no home, and not this repository
        finally:
            await box.close()
            folders.close()
        assert not box.folder.exists()

    asyncio.run(go())


def test_a_sandbox_that_cannot_be_entered_is_unavailable_not_a_failed_command(tmp_path: Path) -> None:
    async def go() -> None:
        folders = Folders()
        box = BwrapSandbox(BwrapSandboxSpec(ro_paths=["/evals-no-such-path"]), folders.new("broken", 0))
        try:
            with pytest.raises(SandboxUnavailable, match="sandbox bwrap: bwrap: Can't find source path"):
                await box.exec(["true"], timeout=10)
        finally:
            await box.close()
            folders.close()

    asyncio.run(go())
