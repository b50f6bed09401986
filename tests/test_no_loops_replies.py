"""`no_loops` names what `ignore` left out (issue 41, item 6): a run whose only call was excluded is "1 call
excluded (ignore 'poll_*' matched poll_status): nothing left to check", never "no tool calls". And `replies:
true` counts the agent's replies: the same tool call written as text (which the endpoint did not parse, so no
tool ran) sent as the reply five turns in a row is a loop, as five identical calls would be; off by default.

End to end through `evals run` / `evals validate` / `evals schema` against the scripted loopback server, which
plays the agent through the real openai client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, call, text

CALL_TEXT = '{"name": "check_network", "arguments": {"number": "123"}}'
SPACED = ['{"name": "check_network",  "arguments": {"number": "123"}}',  # the same words, spaced otherwise
          '{"name": "check_network",\n  "arguments": {"number": "123"}}\n']
TURNS = ["first", "second", "third", "fourth", "fifth"]
TOOLS = {"poll_status": {"description": "Poll a job", "parameters": {"job": "Job id"}, "returns": "running"}}
GRADERS = {"calls": {"kind": "no_loops", "ignore": ["poll_*"]},
           "replies": {"kind": "no_loops", "replies": True, "ignore": ["poll_*"]}}


ROWS = [{"id": "text-loop", "input": [f"{word} message" for word in TURNS]},
        {"id": "poll", "input": "status of job 1?"},
        {"id": "varied", "input": ["hello", "weather"]}]


def _run(tmp: Path, server: ScriptedServer, rows: list[dict[str, Any]],
         graders: dict[str, Any]) -> tuple[dict[str, dict[str, Any]], str]:
    server.script = agent_script({
        **{word: [text([CALL_TEXT, *SPACED][i % 3])] for i, word in enumerate(TURNS)},
        "status": [call("poll_status", {"job": "1"}), text("it is running")],
        "hello": [text("hello to you")], "weather": [text("sunny, I think")],
    })
    suite = write_suite(tmp, rows, base_url=server.url, graders=graders, tools=TOOLS)
    result = run_cli("run", str(suite), "-o", str(tmp / "out"))
    said = result.stdout + result.stderr
    assert "Traceback" not in said
    return {r["sample_id"]: r for r in read_jsonl(tmp / "out" / "results.jsonl")}, said


def test_the_same_unparsed_call_text_five_turns_in_a_row_is_a_reply_loop(tmp_path: Path,
                                                                         server: ScriptedServer) -> None:
    by_id, said = _run(tmp_path, server, ROWS, GRADERS)
    looped = by_id["text-loop"]
    assert looped["error"] is None, said
    trajectory = looped["trajectory"]
    assert len(trajectory["turns"]) == 5 and trajectory["stop_reason"] == "unparsed_tool_call"
    assert not any(step["tool_calls"] for turn in trajectory["turns"] for step in turn["steps"])  # none ran
    grade = looped["grades"]["replies"]
    assert grade["applicable"] and grade["score"] == 0.0
    [consecutive] = [loop for loop in grade["metadata"]["reply_loops"] if loop["kind"] == "consecutive"]
    assert consecutive["count"] == 5 and consecutive["limit"] == 1 and consecutive["first_index"] == 0
    assert CALL_TEXT in consecutive["call"]  # shown as normalised: the three spellings are one reply
    [repeated] = [loop for loop in grade["metadata"]["reply_loops"] if loop["kind"] == "repeated"]
    assert repeated["count"] == 5 and repeated["limit"] == 2
    assert "sent 5 turns in a row (max 1)" in grade["rationale"] and "sent in 5 turns (max 2)" in grade["rationale"]
    assert grade["metadata"]["loops"] == []  # no call was made: the calls themselves hold no loop
    # the default (replies off) grades calls only, as before: nothing to check in a run without calls
    calls = looped["grades"]["calls"]
    assert not calls["applicable"] and calls["rationale"] == "no tool calls: nothing to check"
    assert "reply_loops" not in calls["metadata"]
    varied = by_id["varied"]["grades"]["replies"]  # different replies: no loop
    assert varied["score"] == 1.0 and varied["metadata"]["reply_loops"] == []
    assert "2 replies: none sent more than 2 times in total or 1 in a row" in varied["rationale"]
    replies = by_id["poll"]["grades"]["replies"]  # its one reply is checked; what was left out is still said
    assert replies["applicable"] and replies["score"] == 1.0
    assert "1 reply: none sent" in replies["rationale"] and "1 call excluded" in replies["rationale"]
    assert replies["metadata"]["excluded"] == 1


def test_a_run_whose_only_call_was_excluded_says_what_was_excluded(tmp_path: Path, server: ScriptedServer) -> None:
    by_id, said = _run(tmp_path, server, ROWS[1:2], {"calls": GRADERS["calls"]})
    poll = by_id["poll"]
    assert [c["name"] for t in poll["trajectory"]["turns"] for s in t["steps"] for c in s["tool_calls"]] == \
        ["poll_status"], said
    calls = poll["grades"]["calls"]
    assert not calls["applicable"]
    assert "1 call excluded" in calls["rationale"] and "ignore 'poll_*'" in calls["rationale"]
    assert "poll_status" in calls["rationale"] and "nothing left to check" in calls["rationale"]
    assert "no tool calls" not in calls["rationale"]


def _validate(tmp: Path, server: ScriptedServer, spec: dict[str, Any]) -> tuple[int, str]:
    suite = write_suite(tmp, [{"id": "r", "input": "hi"}], base_url=server.url, graders={"loops": spec})
    result = run_cli("validate", str(suite))
    said = result.stdout + result.stderr
    assert "Traceback" not in said
    return result.returncode, said


def test_replies_is_a_checked_boolean_in_the_spec_and_the_schema(tmp_path: Path, server: ScriptedServer) -> None:
    assert _validate(tmp_path, server, {"kind": "no_loops", "replies": True})[0] == 0
    code, said = _validate(tmp_path, server, {"kind": "no_loops", "replies": "often"})
    assert code == 2 and "replies" in said and "loops" in said, said
    code, said = _validate(tmp_path, server, {"kind": "no_loops", "replies": True, "scope": "reply"})
    assert code == 2 and "replies" in said and "scope: reply" in said, said
    schema = run_cli("schema")
    assert schema.returncode == 0
    found = [node["properties"]["replies"] for node in _nodes(json.loads(schema.stdout))
             if isinstance(node.get("properties"), dict) and "replies" in node["properties"]
             and node["properties"].get("kind", {}).get("const") == "no_loops"]
    assert len(found) == 1 and found[0]["type"] == "boolean" and found[0]["default"] is False, found
    assert "the same reply text" in found[0]["description"]
    assert not server.requests  # validate and schema call no model


def _nodes(value: Any) -> list[dict[str, Any]]:
    """Every JSON object in a schema, nested ones too."""
    if isinstance(value, dict):
        return [value, *(n for v in value.values() for n in _nodes(v))]
    if isinstance(value, list):
        return [n for v in value for n in _nodes(v)]
    return []
