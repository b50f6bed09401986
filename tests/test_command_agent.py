"""`kind: command`: a real agent program per episode, JSON lines on stdin/stdout, its trajectory rebuilt from the
spans it exports to the run's loopback OTLP receiver (protobuf, the SDK's encoder), against the scripted model
server through the real openai client; without telemetry the replies alone, trajectory graders n/a."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers import ROOT, read_jsonl, run_cli
from tests.scripted_server import ScriptedServer, agent_script, call, text

AGENT = ROOT / "examples" / "external_agent" / "agent.py"
SILENT = ROOT / "tests" / "agents" / "silent_agent.py"


def command_suite(tmp: Path, target: dict[str, Any], rows: list[dict[str, Any]], graders: dict[str, Any]) -> Path:
    (tmp / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    suite = {"name": "external", "target": target, "dataset": "rows.jsonl", "graders": graders,
             "gate": {"kind": "weighted_average", "aggregation": "avg_score", "op": "gte", "value": 0.5}}
    (tmp / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    return tmp / "suite.yaml"


def _rows(out: Path) -> dict[str, dict[str, Any]]:
    return {r["sample_id"]: r for r in read_jsonl(out / "results.jsonl")}


TOOL_GRADERS = {"order": {"kind": "tool_order", "expected": ["list_files", "read_file"], "mode": "strict"},
                "loops": {"kind": "no_loops"},
                "answer": {"kind": "match", "function": "contains", "extractor": "last_assistant"}}


def test_an_instrumented_agent_is_graded_on_its_spans_and_replayed_offline(tmp_path: Path,
                                                                          server: ScriptedServer) -> None:
    server.script = agent_script({"port": [call("list_files", {}), call("read_file", {"path": "config.toml"}),
                                           text("The port is 5433.")]})
    target = {"kind": "command", "command": [sys.executable, str(AGENT)],
              "env": {"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "sk-test", "AGENT_MODEL": "scripted"}}
    rows = [{"id": "port", "input": "Which port does the database use?", "ground_truth": "5433"}]
    suite = command_suite(tmp_path, target, rows, TOOL_GRADERS)
    recording = tmp_path / "rec.jsonl"
    live = run_cli("run", str(suite), "-o", str(tmp_path / "live"), "--record", str(recording))
    assert live.returncode == 0, live.stdout + live.stderr
    row = _rows(tmp_path / "live")["port"]
    steps = row["trajectory"]["turns"][0]["steps"]
    assert [c["name"] for s in steps for c in s["tool_calls"]] == ["list_files", "read_file"]
    assert steps[1]["tool_calls"][0]["arguments"] == {"path": "config.toml"}
    assert "5433" in steps[1]["tool_calls"][0]["result"]
    assert {n: g["score"] for n, g in row["grades"].items()} == {"order": 1.0, "loops": 1.0, "answer": 1.0}
    assert "not_observed" not in row["trajectory"]
    assert len(server.agent_requests()) == 3
    served = len(server.agent_requests())
    replay = run_cli("run", str(suite), "-o", str(tmp_path / "replay"), "--replay", str(recording))
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert len(server.agent_requests()) == served  # no process started, no model called
    again = _rows(tmp_path / "replay")["port"]
    assert again["trajectory"]["turns"] == row["trajectory"]["turns"] and again["grades"]["order"]["score"] == 1.0


def test_without_telemetry_the_reply_is_graded_and_trajectory_graders_are_na(tmp_path: Path) -> None:
    target = {"kind": "command", "command": [sys.executable, str(SILENT)], "telemetry": False}
    rows = [{"id": "two", "input": ["hello", "again"], "ground_truth": "echo: again"}]
    result = run_cli("run", str(command_suite(tmp_path, target, rows, TOOL_GRADERS)), "-o", str(tmp_path / "out"))
    row = _rows(tmp_path / "out")["two"]
    assert [t["steps"][-1]["content"] for t in row["trajectory"]["turns"]] == ["echo: hello", "echo: again"]
    reason = "trajectory not observed (no telemetry from the agent)"
    assert row["trajectory"]["not_observed"] == reason
    for name in ("order", "loops"):
        assert row["grades"][name]["applicable"] is False and reason in row["grades"][name]["rationale"]
    assert row["grades"]["answer"]["score"] == 1.0 and result.returncode == 0, result.stdout


def test_an_agent_that_exits_without_replying_is_an_error_with_its_stderr(tmp_path: Path) -> None:
    target = {"kind": "command", "command": [sys.executable, str(SILENT)], "telemetry": False,
              "env": {"EXIT_AT": "2"}}
    rows = [{"id": "dies", "input": ["hello", "again"], "ground_truth": "x"}]
    result = run_cli("run", str(command_suite(tmp_path, target, rows, TOOL_GRADERS)), "-o", str(tmp_path / "out"))
    row = _rows(tmp_path / "out")["dies"]
    message = row["error"]["message"]
    assert "silent_agent.py: exited (code 3) without replying to turn 2" in message
    assert "giving up: out of ideas" in message and row["passed"] is not True
    assert row["grades"].get("answer", {}).get("score") != 0.0  # an error is never scored as a zero
    assert result.returncode == 3, result.stdout


def test_an_agent_that_ignores_end_of_input_is_killed_after_exit_timeout(tmp_path: Path) -> None:
    target = {"kind": "command", "command": [sys.executable, str(SILENT)], "telemetry": False,
              "env": {"HANG_AT_END": "1"}, "exit_timeout": 0.5}
    rows = [{"id": "hangs", "input": "hello", "ground_truth": "echo: hello"}]
    run_cli("run", str(command_suite(tmp_path, target, rows, TOOL_GRADERS)), "-o", str(tmp_path / "out"))
    row = _rows(tmp_path / "out")["hangs"]
    assert "did not exit within exit_timeout (0.5s)" in row["error"]["message"]


def test_a_program_that_is_not_there_is_exit_2_naming_the_field(tmp_path: Path) -> None:
    target = {"kind": "command", "command": ["no-such-agent-program"], "telemetry": False}
    rows = [{"id": "a", "input": "hi", "ground_truth": "x"}]
    result = run_cli("run", str(command_suite(tmp_path, target, rows, TOOL_GRADERS)), "-o", str(tmp_path / "out"))
    assert result.returncode == 2
    assert "target.command: program 'no-such-agent-program' not found (on PATH)" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def alive(pid: int) -> bool:
    """The process exists and is not a zombie (a zombie has exited; only its parent's wait is missing)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


def test_a_stuck_agent_is_cut_off_by_the_sample_timeout_and_its_group_killed(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    target = {"kind": "command", "command": [sys.executable, str(SILENT)], "telemetry": False,
              "env": {"STUCK_AT": "1", "PIDS_FILE": str(pids)}, "sample_timeout": 2}
    rows = [{"id": "stuck", "input": "hello", "ground_truth": "x"}]
    run_cli("run", str(command_suite(tmp_path, target, rows, TOOL_GRADERS)), "-o", str(tmp_path / "out"))
    row = _rows(tmp_path / "out")["stuck"]
    assert row["error"] is not None and row["passed"] is not True
    agent, child = (int(p) for p in pids.read_text().split())
    # the program and what it started are reaped before the episode ends: gone when the run returns, not soon after
    assert not alive(agent) and not alive(child)


def test_each_turn_of_a_conversation_gets_its_own_steps_from_the_spans(tmp_path: Path, server: ScriptedServer) -> None:
    server.script = agent_script({"port": [call("read_file", {"path": "config.toml"}), text("Port 5433.")],
                                  "host": [text("The host is db.internal.")]})
    target = {"kind": "command", "command": [sys.executable, str(AGENT)],
              "env": {"OPENAI_BASE_URL": server.url, "AGENT_MODEL": "scripted"}}
    rows = [{"id": "two", "input": ["Which port?", "And the host?"], "ground_truth": "db.internal"}]
    result = run_cli("run", str(command_suite(tmp_path, target, rows, TOOL_GRADERS)), "-o", str(tmp_path / "out"))
    row = _rows(tmp_path / "out")["two"]
    turns = row["trajectory"]["turns"]
    assert [t["user"] for t in turns] == ["Which port?", "And the host?"]
    assert [[c["name"] for s in t["steps"] for c in s["tool_calls"]] for t in turns] == [["read_file"], []]
    assert [t["steps"][-1]["content"] for t in turns] == ["Port 5433.", "The host is db.internal."]
    assert "not_observed" not in row["trajectory"] and result.returncode in (0, 1), result.stdout


def test_a_key_in_the_agents_env_is_masked_in_its_stderr_tail(tmp_path: Path) -> None:
    key = "agent-secret-key-9f8e7d6c5b4a"
    target = {"kind": "command", "command": [sys.executable, "-c",
                                             "import os, sys; print(os.environ['AGENT_API_KEY'], file=sys.stderr)"],
              "env": {"AGENT_API_KEY": key}, "telemetry": False}
    rows = [{"id": "leaks", "input": "hi", "ground_truth": "x"}]
    result = run_cli("run", str(command_suite(tmp_path, target, rows, TOOL_GRADERS)), "-o", str(tmp_path / "out"))
    message = _rows(tmp_path / "out")["leaks"]["error"]["message"]
    assert "its stderr ended with" in message and key not in message
    assert key not in result.stdout + result.stderr + (tmp_path / "out" / "results.jsonl").read_text()


@pytest.mark.parametrize(("reply", "said"), [({"type": "assistant"}, "no content"),
                                              ({"type": "assistant", "content": None}, "no content"),
                                              ({"type": "assistant", "content": [{"text": "hi"}]},
                                               "content that is an array")])
def test_a_reply_without_text_is_the_samples_error_naming_the_line(tmp_path: Path, reply: dict[str, Any],
                                                                   said: str) -> None:
    line = json.dumps(reply)
    program = f"import sys; sys.stdin.readline(); print({line!r}, flush=True); sys.stdin.read()"
    target = {"kind": "command", "command": [sys.executable, "-c", program], "telemetry": False}
    rows = [{"id": "empty", "input": "hello", "ground_truth": "null"}]
    graders = {"answer": {"kind": "match", "function": "contains", "extractor": "last_assistant"}}
    result = run_cli("run", str(command_suite(tmp_path, target, rows, graders)), "-o", str(tmp_path / "out"))
    row = _rows(tmp_path / "out")["empty"]
    assert row["error"]["category"] == "agent" and row["passed"] is not True
    assert f"replied with {said} to turn 1: {line}" in row["error"]["message"]
    assert "answer" not in row["grades"] or row["grades"]["answer"].get("score") is None  # never graded as "null"
    assert result.returncode == 3, result.stdout
