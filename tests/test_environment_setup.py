"""The Episode owns the world (issue 33 item 2): `environment.setup` prepares it before the agent starts (commands in
the episode's folder, or a python function given the world), and what setup and MCP servers starting in the
workspace change is the starting state: recorded with actor `setup`, never in "what the agent changed", and the
world `final_state` and `expected_actions` compare against. End to end through `evals run` against the scripted
model server on 127.0.0.1."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import ROOT, read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, call, text

FILE_TOOLS = {"read_file": {"description": "Read a file.", "parameters": {"path": "Path"}, "effect": "files.read"},
              "write_file": {"description": "Write a file.", "parameters": {"path": "Path", "content": "Text"},
                             "effect": "files.write"}}
BUILD = [sys.executable, "-c", "open('built.txt', 'w').write('built by setup'); open('seed.txt', 'a').write('+')"]


def _suite(tmp: Path, server: ScriptedServer, rows: list[dict[str, Any]], environment: dict[str, Any],
           **overrides: Any) -> Path:
    overrides.setdefault("tools", FILE_TOOLS)
    return write_suite(tmp, rows, base_url=server.url, environment=environment,
                       graders={"state": {"kind": "final_state"}},
                       gate={"kind": "weighted_average", "aggregation": "avg_score", "op": "gte", "value": 1.0},
                       **overrides)


def _run(tmp: Path, suite: Path, *extra: str) -> tuple[int, dict[str, dict[str, Any]], str]:
    result = run_cli("run", str(suite), "-o", str(tmp / "out"), *extra)
    assert "Traceback" not in result.stderr, result.stderr
    out = tmp / "out" / "results.jsonl"
    lines = {line["sample_id"]: line for line in read_jsonl(out)} if out.exists() else {}
    return result.returncode, lines, result.stdout + result.stderr


def test_setup_commands_build_the_starting_state_and_only_the_agents_changes_are_its_own(
        tmp_path: Path, server: ScriptedServer) -> None:
    server.script = agent_script({"note": [call("read_file", {"path": "built.txt"}),
                                           call("write_file", {"path": "todo.txt", "content": "buy milk"}),
                                           text("done")]})
    rows = [{"id": "n", "input": "note", "expected_state": {"files": {"todo.txt": "buy milk"},
                                                          "no_other_changes": True}}]
    suite = _suite(tmp_path, server, rows, {"files": {"seed.txt": "seed"}, "setup": [BUILD]})
    code, lines, said = _run(tmp_path, suite)
    line = lines["n"]
    read = line["trajectory"]["turns"][0]["steps"][0]["tool_calls"][0]
    assert read["result"] == "built by setup"  # the agent met the world setup built
    assert line["trajectory"]["state_changes"] == [{"kind": "file", "target": "todo.txt", "before": None,
                                                    "after": "buy milk"}]
    setup = {c["target"]: (c["before"], c["after"], c["actor"]) for c in line["trajectory"]["setup_changes"]}
    assert setup == {"built.txt": (None, "built by setup", "setup"), "seed.txt": ("seed", "seed+", "setup")}
    # no_other_changes holds: setup's files are the starting state, not the agent's doing
    assert line["grades"]["state"]["score"] == 1.0 and code == 0, said
    report = run_cli("report", str(tmp_path / "out"))
    assert "todo.txt" in report.stdout and "built.txt" not in report.stdout, report.stdout


def test_a_setup_function_changes_records_and_expected_actions_start_from_its_world(
        tmp_path: Path, server: ScriptedServer) -> None:
    (tmp_path / "prepare.py").write_text(
        "def prepare(world):\n    world.records['orders']['1']['status'] = 'shipped'\n", encoding="utf-8")
    server.script = agent_script({"look": [text("nothing to do")]})
    tools = {"cancel": {"description": "Cancel.", "parameters": {"id": "Order"},
                        "effect": {"records.update": "orders", "key": "id", "set": {"status": "cancelled"}}}}
    rows = [{"id": "idle", "input": "look", "expected_actions": []},
            {"id": "expected", "input": "look", "expected_state": {"records": {"orders": {"1": {"status": "shipped"}}},
                                                                   "no_other_changes": True}}]
    suite = _suite(tmp_path, server, rows, {"records": {"orders": [{"id": "1", "status": "new"}]},
                                            "setup": {"python": "prepare.py:prepare"}}, tools=tools)
    code, lines, said = _run(tmp_path, suite)
    for line in lines.values():
        assert line["trajectory"]["state_changes"] == []  # the agent changed nothing
        [change] = line["trajectory"]["setup_changes"]
        assert (change["target"], change["after"]["status"], change["actor"]) == ("orders/1", "shipped", "setup")
        assert line["grades"]["state"]["score"] == 1.0, line["grades"]["state"]
    assert code == 0, said


def test_a_failing_setup_errors_its_sample_with_its_output_and_the_others_run(
        tmp_path: Path, server: ScriptedServer) -> None:
    server.script = agent_script({"note": [call("write_file", {"path": "todo.txt", "content": "x"}), text("done")]})
    failing = [sys.executable, "-c", "print('cannot clone the repository'); raise SystemExit(3)"]
    rows = [{"id": "fine", "input": "note", "expected_state": {"files": {"todo.txt": "x"}}},
            {"id": "broken", "input": "note", "environment": {"setup": [failing]}}]
    suite = _suite(tmp_path, server, rows, {"files": {"seed.txt": "seed"}, "setup": [BUILD]})
    code, lines, said = _run(tmp_path, suite, "--max-error-rate", "1")
    broken = lines["broken"]
    assert broken["error"]["category"] == "setup"
    assert "exited with 3" in broken["error"]["message"]
    assert "cannot clone the repository" in broken["error"]["message"]
    assert broken["trajectory"]["turns"] == [] and broken["passed"] is None  # the agent never started
    assert len(server.agent_requests()) == 2  # the fine sample's two model calls; none for the broken one
    assert lines["fine"]["passed"] is True
    assert code == 0, said  # one sample errored: not exit 3, which is for a run where every sample failed


def test_a_setup_command_past_its_timeout_is_killed_and_errors_its_sample(tmp_path: Path,
                                                                       server: ScriptedServer) -> None:
    server.script = agent_script({"note": [text("done")]})
    hang = [sys.executable, "-c", "print('starting', flush=True); import time; time.sleep(3600)"]
    suite = _suite(tmp_path, server, [{"id": "slow", "input": "note"}],
                   {"files": {"a.txt": "a"}, "setup": {"commands": [hang], "timeout": 0.5}})
    code, lines, said = _run(tmp_path, suite)
    error = lines["slow"]["error"]
    assert error["category"] == "setup" and "after 0.5s" in error["message"] and "starting" in error["message"]
    assert code == 3, said  # the only sample failed


@pytest.mark.parametrize(("setup", "problem"), [
    ([[]], "commands[0]"),
    ({"python": "no_function_named"}, "file.py:function"),
    ({"commands": [["true"]], "python": "a.py:f"}, "not both"),
    ({"commands": [["true"]], "timeout": 0}, "timeout"),
])
def test_a_bad_setup_spec_is_exit_2_naming_the_line_and_the_fix(tmp_path: Path, server: ScriptedServer,
                                                                setup: Any, problem: str) -> None:
    suite = _suite(tmp_path, server, [{"id": "a", "input": "x"}], {"files": {"a.txt": "a"}, "setup": setup})
    for command in ("validate", "run"):
        result = run_cli(command, str(suite), "-o", str(tmp_path / "out")) if command == "run" else \
            run_cli(command, str(suite))
        assert result.returncode == 2, result.stdout + result.stderr
        assert "suite.yaml:" in result.stderr and "environment.setup" in result.stderr, result.stderr
        assert problem in result.stderr and "Traceback" not in result.stderr


@pytest.mark.slow
def test_what_an_mcp_server_writes_while_starting_is_the_starting_state(tmp_path: Path,
                                                                        server: ScriptedServer) -> None:
    demo = str(ROOT / "tests" / "mcp_servers" / "demo_server.py")
    server.script = agent_script({"note": [call("read_note", {"name": "repo.txt"}),
                                           call("write_note", {"name": "todo.txt", "text": "buy milk"}),
                                           text("done")]})
    rows = [{"id": "n", "input": "note", "expected_state": {"files": {"todo.txt": "buy milk"},
                                                          "no_other_changes": True}}]
    suite = _suite(tmp_path, server, rows, {"files": {"seed.txt": "seed"}, "setup": [BUILD]}, tools={},
                   mcp_servers={"files": {"command": sys.executable, "args": [
                       demo, "--root", "{workspace}", "--write-at-start", "repo.txt"]}})
    code, lines, said = _run(tmp_path, suite)
    line = lines["n"]
    read = line["trajectory"]["turns"][0]["steps"][0]["tool_calls"][0]
    assert read["result"] == "made by the server at start"
    assert [c["target"] for c in line["trajectory"]["state_changes"]] == ["todo.txt"]
    assert {c["target"] for c in line["trajectory"]["setup_changes"]} == {"built.txt", "repo.txt", "seed.txt"}
    assert line["grades"]["state"]["score"] == 1.0 and code == 0, said
