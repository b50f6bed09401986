"""A simulated user's last words reach the agent (issue 24, item 6): the text before ###STOP### is sent and
answered before the conversation ends as user_done, a scripted line ending in the token ends it the same way,
a simulator reply that is a judge's verdict is out of character, `max_turns` is capped, a conversation has a
default time bound, and a tool call written as text with single quotes or doubled braces is unparsed_tool_call.

The loopback server plays the agent and the user through the real openai client (tests/test_simulated_engine.py
describes the scripted user's `[script: ...]` lines)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from evals_cli.models.simulated_user import DEFAULT_MAX_SECONDS, MAX_TURNS_LIMIT
from evals_cli.targets.common import answer_stop_reason
from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import Reply, ScriptedServer, agent_script, text
from tests.test_simulated_engine import both, is_simulator, run, simulator_requests, suite_for, user_row


def agent_user_messages(server: ScriptedServer) -> list[str]:
    """Every user message the agent was sent."""
    return [m["content"] for r in server.requests if not is_simulator(r["body"])
            for m in r["body"].get("messages", []) if m["role"] == "user"]


def test_the_words_before_the_stop_token_are_sent_and_answered(tmp_path: Path, server: ScriptedServer) -> None:
    suite = suite_for(tmp_path, server, [user_row("s", "hi | Sure, the order id is 12345. ###STOP###")])
    code, [result], _, output = run(suite, tmp_path / "out")
    trajectory = result["trajectory"]
    assert [t["user"] for t in trajectory["turns"]] == ["hi", "Sure, the order id is 12345."]
    last = trajectory["turns"][-1]["steps"]
    assert last[0]["tool_calls"][0]["arguments"] == {"order_id": "12345"}  # the agent acted on the id
    assert last[-1]["content"] == "refund issued"
    assert trajectory["end_reason"] == "user_done" and trajectory["closing_user"] is None
    assert "Sure, the order id is 12345." in agent_user_messages(server)
    assert not any("###STOP###" in m for m in agent_user_messages(server))
    assert trajectory["user_calls"] == 2  # not asked again after it stopped


def test_the_token_alone_ends_the_conversation_without_another_turn(tmp_path: Path, server: ScriptedServer) -> None:
    suite = suite_for(tmp_path, server, [user_row("s", "hi | ###STOP###")])
    _, [result], _, _ = run(suite, tmp_path / "out")
    assert [t["user"] for t in result["trajectory"]["turns"]] == ["hi"]
    assert result["trajectory"]["end_reason"] == "user_done"


def test_the_end_tools_last_words_are_sent_too(tmp_path: Path, server: ScriptedServer) -> None:
    suite = suite_for(tmp_path, server, [user_row("s", "hi | @end", stop="tool")])
    _, [result], _, _ = run(suite, tmp_path / "out")
    trajectory = result["trajectory"]
    assert [t["user"] for t in trajectory["turns"]] == ["hi", "bye"]
    assert trajectory["turns"][-1]["steps"][-1]["content"] == "echo: bye"
    assert trajectory["end_reason"] == "user_done"


def test_a_scripted_line_ending_in_the_token_ends_the_conversation(tmp_path: Path, server: ScriptedServer) -> None:
    row = user_row("s", "never asked", first_message="hi", script=["my order is 12345 ###STOP###"])
    suite = suite_for(tmp_path, server, [row])
    _, [result], _, _ = run(suite, tmp_path / "out")
    trajectory = result["trajectory"]
    assert [(t["user"], t["user_source"]) for t in trajectory["turns"]] == [("hi", "scripted"),
                                                                            ("my order is 12345", "scripted")]
    assert trajectory["turns"][-1]["steps"][-1]["content"] == "refund issued"
    assert trajectory["end_reason"] == "user_done" and not simulator_requests(server)
    assert not any("###STOP###" in m for m in agent_user_messages(server))


def test_scripted_lines_after_a_stopping_one_are_a_config_error(tmp_path: Path, server: ScriptedServer) -> None:
    row = user_row("s", "never", first_message="hi ###STOP###", script=["never sent"])
    suite = suite_for(tmp_path, server, [row])
    result = run_cli("validate", str(suite))
    output = result.stdout + result.stderr
    assert result.returncode == 2 and "data.jsonl:1" in output, output
    assert "scripted message 1 of 2" in output and "would never be sent" in output


@pytest.mark.parametrize("verdict", ['{"score": 9, "reason": "The agent was helpful."}',
                                     "Score: 9/10. The assistant answered politely."])
def test_a_judge_verdict_is_not_a_users_message(tmp_path: Path, server: ScriptedServer, verdict: str) -> None:
    rows = [user_row("twice", f"{verdict} | {verdict} | {verdict}", first_message="hi"),
            user_row("once", f"{verdict} | fine, thanks ###STOP###", first_message="hi")]
    suite = suite_for(tmp_path, server, rows)
    _, results, _, _ = run(suite, tmp_path / "out")
    by_id = {r["sample_id"]: r for r in results}
    twice = by_id["twice"]
    assert twice["error"]["category"] == "user_simulator" and "judge's verdict" in twice["error"]["message"]
    assert twice["trajectory"]["end_reason"] == "user_error" and twice["passed"] is None
    once = by_id["once"]  # asked again once, saying what was wrong; the next reply was in character
    assert [t["user"] for t in once["trajectory"]["turns"]] == ["hi", "fine, thanks"]
    assert once["error"] is None and once["trajectory"]["end_reason"] == "user_done"
    assert not any(verdict in m for m in agent_user_messages(server))


def test_max_turns_is_capped(tmp_path: Path, server: ScriptedServer) -> None:
    suite = suite_for(tmp_path, server, [user_row("s", "hi", max_turns=MAX_TURNS_LIMIT + 1)])
    for command in ("validate", "run"):
        result = run_cli(command, str(suite), *(("-o", str(tmp_path / "out")) if command == "run" else ()))
        output = result.stdout + result.stderr
        assert result.returncode == 2, output
        assert "data.jsonl:1" in output and "user.max_turns" in output and str(MAX_TURNS_LIMIT) in output, output
    assert not server.requests
    ok = suite_for(tmp_path, server, [user_row("s", "hi", max_turns=MAX_TURNS_LIMIT)])
    assert run_cli("validate", str(ok)).returncode == 0


def test_a_user_that_never_stops_is_ended_by_the_time_bound(tmp_path: Path, server: ScriptedServer) -> None:
    assert DEFAULT_MAX_SECONDS > 0  # on by default; a short one here

    def script(path: str, body: dict[str, Any]) -> Any:
        if is_simulator(body):
            return Reply(text("tell me more"), delay=0.3)
        return both(path, body)

    suite = suite_for(tmp_path, server, [user_row("s", "unused", first_message="hi", max_turns=MAX_TURNS_LIMIT,
                                                  max_seconds=1.5)])
    server.script = script
    started = time.monotonic()
    _, [result], _, _ = run(suite, tmp_path / "out")
    assert time.monotonic() - started < 15
    trajectory = result["trajectory"]
    assert trajectory["end_reason"] == "time_limit", trajectory["end_reason"]
    assert 2 <= len(trajectory["turns"]) < 12
    assert result["error"] is None and result["passed"] is not None  # graded like any finished conversation


def test_a_simulator_that_never_answers_is_cut_off_by_the_time_bound(tmp_path: Path, server: ScriptedServer) -> None:
    def script(path: str, body: dict[str, Any]) -> Any:
        if is_simulator(body):
            return Reply(text("too late"), delay=20.0)
        return both(path, body)

    suite = suite_for(tmp_path, server, [user_row("s", "unused", first_message="hi", max_seconds=1.0)],
                      target={"timeout": 60})
    server.script = script
    started = time.monotonic()
    _, [result], _, _ = run(suite, tmp_path / "out")
    assert time.monotonic() - started < 10
    assert result["trajectory"]["end_reason"] == "time_limit"
    assert [t["user"] for t in result["trajectory"]["turns"]] == ["hi"] and result["error"] is None


CALL_TEXTS = [
    "{'name': 'lookup', 'arguments': {'id': 1}}",
    "<tool_call>{'name': 'lookup', 'arguments': {'id': 1}}</tool_call>",
    '{{"name": "lookup", "arguments": {{"id": 1}}}}',
    '<tool_call>\n{{"name": "lookup", "arguments": {{"id": 1}}}}\n</tool_call>',
    "Let me look. <tool_call>{'name': 'lookup', 'arguments': {'id': True}}</tool_call>",
]


@pytest.mark.parametrize("reply", CALL_TEXTS)
def test_a_call_written_with_single_quotes_or_doubled_braces_is_unparsed(tmp_path: Path, server: ScriptedServer,
                                                                         reply: str) -> None:
    server.script = agent_script({"go": [text(reply)]})
    tools = {"lookup": {"description": "Look an order up.", "parameters": {"id": "Order id"}, "returns": "ok"}}
    suite = write_suite(tmp_path, [{"id": "s", "input": "go", "ground_truth": "x"}], base_url=server.url,
                        tools=tools)
    run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    [line] = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert line["trajectory"]["stop_reason"] == "unparsed_tool_call"


@pytest.mark.parametrize("reply", ["{'answer': 'it is 5'}", "The dict {'a': 1} is what you get.",
                                   "Use {{name}} in the template."])
def test_prose_and_other_objects_still_complete(reply: str) -> None:
    assert answer_stop_reason(reply, ["lookup"]) == "completed"
