"""The shipped command-line coding agent (examples/coding/agent.py) run as `kind: command` on the tasks of
suites/coding_command.yaml, its model a scripted server on loopback: the process fixes a file in the episode's
workspace with its own edit action, and the package's tests run in the sandbox afterwards grade what it left."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers import ROOT, read_jsonl, run_cli
from tests.scripted_server import ScriptedServer, agent_script, call, text


def _suite(tmp: Path) -> Path:
    """The shipped suite, its paths made absolute and its sandbox `kind: none` (what runs here)."""
    suite = yaml.safe_load((ROOT / "suites" / "coding_command.yaml").read_text())
    suite["dataset"] = str(ROOT / "datasets" / "coding.jsonl")
    suite["target"]["command"] = [sys.executable, str(ROOT / "examples" / "coding" / "agent.py")]
    suite["sandbox"] = {"kind": "none"}
    path = tmp / "suite.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False))
    return path


@pytest.mark.slow  # an agent process per episode, the tests run in each: seconds each
def test_the_command_agent_fixes_one_bug_and_the_tests_inside_grade_both_tasks(tmp_path: Path,
                                                                                server: ScriptedServer) -> None:
    server.script = agent_script({
        "clamp(5, 0, 3)": [call("edit", {"command": "view", "path": "textkit/bounds.py"}),
                           call("edit", {"command": "str_replace", "path": "textkit/bounds.py",
                                         "old_str": "min(value, low)", "new_str": "min(value, high)"}),
                           call("bash", {"command": "python3 -m unittest -q"}),
                           text("clamp now keeps values under high")],
        "average([1, 2])": [text("I could not find the bug")]})
    done = run_cli("run", str(_suite(tmp_path)), "-o", str(tmp_path / "out"), "--sample-id", "clamp-high",
                   "--sample-id", "average-floor", env={"EVAL_AGENT_BASE_URL": server.url})
    lines = {line["sample_id"]: line for line in read_jsonl(tmp_path / "out" / "results.jsonl")}
    assert set(lines) == {"clamp-high", "average-floor"}, done.stdout + done.stderr
    fixed, left = lines["clamp-high"], lines["average-floor"]
    assert fixed["grades"]["tests"]["score"] == 1.0 and fixed["passed"] is True
    assert left["grades"]["tests"]["score"] == 0.0 and left["passed"] is False
    assert "FAILED (failures=1)" in left["grades"]["tests"]["rationale"]  # the end of the real test run
    # the agent's own bash ran the tests in the workspace: its second request carries the tool results
    bash_results = [m["content"] for r in server.requests for m in r["body"]["messages"]
                    if m.get("role") == "tool" and "[exit code" in m.get("content", "")]
    assert any("OK" in result and "[exit code 0]" in result for result in bash_results)
    assert done.returncode == 1  # one of two tasks fixed: under the gate's 0.8
