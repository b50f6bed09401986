"""Per-sample token and message limits (max_tokens_per_sample, max_messages), end to end: the real `openai` client
against the scripted loopback server, whose every reply reports 10 prompt + 5 completion tokens."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, call, text

STOP = {"stop": {"kind": "stop_behavior", "checks": ["max_steps"]}}
LOOP = call("list_files", {"directory": "."})


def _run(server: ScriptedServer, tmp_path: Path, rows: list[dict[str, Any]], **target: Any) -> tuple[Any, Any]:
    suite = write_suite(tmp_path, rows, base_url=server.url, graders=STOP, target={"max_steps": 20, **target})
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    [line] = read_jsonl(tmp_path / "out" / "results.jsonl")
    return result, line


def _agent_calls(line: dict[str, Any]) -> list[str]:
    return [c["name"] for turn in line["trajectory"]["turns"] for step in turn["steps"] for c in step["tool_calls"]]


@pytest.mark.parametrize("kind", ["openai_chat", "openai_responses"])
def test_a_looping_sample_stops_at_its_token_limit_graded_not_errored(server: ScriptedServer, tmp_path: Path,
                                                                      kind: str) -> None:
    server.script = agent_script({"loop": [LOOP]})
    result, line = _run(server, tmp_path, [{"id": "s", "input": "loop please"}], kind=kind,
                        max_tokens_per_sample=40)
    # 15, 30, 45 tokens: the third call crosses 40; no fourth call, and the third's tool call is not run
    assert len(server.requests) == 3
    assert _agent_calls(line) == ["list_files", "list_files"]
    assert line["trajectory"]["stop_reason"] == "token_limit"
    assert line["usage"] == {"prompt_tokens": 30, "completion_tokens": 15}
    assert line["error"] is None and line["grades"]["stop"]["error"] is None
    assert line["grades"]["stop"]["score"] == 0.0
    assert "max_tokens_per_sample (stop_reason token_limit)" in line["grades"]["stop"]["rationale"]
    assert result.returncode == 1  # the gate failed; nothing errored
    assert "[token_limit]" in result.stdout and "0 errored" in result.stdout
    assert "why 1 sample did not pass" in result.stdout and "max_tokens_per_sample" in result.stdout


def test_a_looping_sample_stops_at_its_message_limit(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script({"loop": [LOOP]})
    result, line = _run(server, tmp_path, [{"id": "s", "input": "loop please"}], system_prompt="Be brief.",
                        max_messages=6)
    # system, user, then (assistant, tool) per call: 6 messages after the second call, so no third call
    assert len(server.requests) == 2
    assert len(server.requests[-1]["body"]["messages"]) == 4
    assert _agent_calls(line) == ["list_files", "list_files"]
    assert line["trajectory"]["stop_reason"] == "message_limit"
    assert line["error"] is None and line["grades"]["stop"]["score"] == 0.0
    assert "max_messages (stop_reason message_limit)" in line["grades"]["stop"]["rationale"]
    assert "[message_limit]" in result.stdout and "0 errored" in result.stdout


def test_an_agent_that_answers_within_its_limits_completes(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script({"port": [call("read_file", {"path": ".env"}), text("5432")]})
    result, line = _run(server, tmp_path, [{"id": "s", "input": "port?"}], max_tokens_per_sample=30,
                        max_messages=4)
    assert line["trajectory"]["stop_reason"] == "completed" and line["grades"]["stop"]["score"] == 1.0
    assert result.returncode == 0


@pytest.mark.parametrize("limit,stop", [({"max_tokens_per_sample": 40}, "token_limit"),
                                        ({"max_messages": 5}, "message_limit")])
def test_the_limits_count_across_turns_and_stop_turn_two(server: ScriptedServer, tmp_path: Path,
                                                         limit: dict[str, int], stop: str) -> None:
    server.script = agent_script({"first": [text("hello")], "second": [LOOP]})
    result, line = _run(server, tmp_path, [{"id": "s", "input": ["first: hi", "second: list them"]}], **limit)
    first, second = line["trajectory"]["turns"]
    assert [s["content"] for s in first["steps"]] == ["hello"]
    # tokens: 15 in turn 1, then 30 and 45 in turn 2; messages: user, assistant, user, assistant, tool (5)
    assert len(second["steps"]) == (2 if stop == "token_limit" else 1)
    assert _agent_calls(line) == ["list_files"]
    assert line["trajectory"]["stop_reason"] == stop
    assert line["error"] is None and line["grades"]["stop"]["score"] == 0.0


def test_a_rows_own_limit_overrides_the_targets(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script({"loop": [LOOP]})
    _, line = _run(server, tmp_path, [{"id": "s", "input": "loop please", "max_messages": 3}], max_messages=50)
    assert line["trajectory"]["stop_reason"] == "message_limit" and len(server.requests) == 1


@pytest.mark.parametrize("field", ["max_tokens_per_sample", "max_messages"])
@pytest.mark.parametrize("value", [0, -5, "lots"])
def test_a_bad_limit_is_refused_naming_the_field(tmp_path: Path, field: str, value: Any) -> None:
    suite = write_suite(tmp_path, [{"id": "s", "input": "hi"}], target={field: value})
    result = run_cli("validate", str(suite))
    why = "a valid integer" if isinstance(value, str) else "greater than or equal to 1"
    assert result.returncode == 2
    assert f"target.{field}: input should be {why}" in result.stdout + result.stderr


@pytest.mark.parametrize("field", ["max_tokens_per_sample", "max_messages"])
def test_a_bad_row_limit_is_refused_naming_the_field(tmp_path: Path, field: str) -> None:
    suite = write_suite(tmp_path, [{"id": "s", "input": "hi", field: 0}])
    result = run_cli("validate", str(suite))
    assert result.returncode == 2
    assert f"sample 's': {field}: input should be greater than or equal to 1" in result.stdout + result.stderr


@pytest.mark.parametrize("kind,spec", [("command", {"command": ["true"]}), ("http", {"url": "http://127.0.0.1:9/"})])
def test_an_agent_the_harness_does_not_drive_refuses_the_limits(tmp_path: Path, kind: str,
                                                                spec: dict[str, Any]) -> None:
    suite = write_suite(tmp_path, [{"id": "s", "input": "hi"}])
    data = yaml.safe_load(suite.read_text(encoding="utf-8"))
    data["target"] = {"kind": kind, **spec, "max_messages": 10}
    suite.write_text(yaml.safe_dump(data), encoding="utf-8")
    result = run_cli("validate", str(suite))
    output = result.stdout + result.stderr
    assert result.returncode == 2 and "target.max_messages: max_messages applies only to the agent loops" in output


def test_a_rows_limit_on_a_python_agent_errors_the_sample_not_dropped(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text("def run_agent(sample, tools):\n    return 'done'\n", encoding="utf-8")
    suite = write_suite(tmp_path, [{"id": "s", "input": "hi", "max_tokens_per_sample": 100}], graders=STOP)
    data = yaml.safe_load(suite.read_text(encoding="utf-8"))
    data["target"] = {"kind": "python", "callable": "agent.py:run_agent"}
    suite.write_text(yaml.safe_dump(data), encoding="utf-8")
    run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    [line] = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert line["score"] is None and line["trajectory"]["stop_reason"] == "error"
    assert "max_tokens_per_sample applies only to the agent loops" in line["error"]["message"]


def test_the_schema_describes_the_limits() -> None:
    result = run_cli("schema")
    assert result.returncode == 0
    assert "max_tokens_per_sample" in result.stdout and "max_messages" in result.stdout
    assert "stop reason token_limit" in result.stdout and "stop reason message_limit" in result.stdout
