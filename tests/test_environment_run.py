"""Stateful environments end to end: `evals run` against the scripted server through the real openai client,
the world changed by the agent's calls, its effects and final state in results.jsonl, graded by final_state."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, call, text

ENV = {
    "files": {"config.json": '{"host": "localhost", "port": 8080}', "README.md": "# demo"},
    "records": {"orders": [{"id": "12345", "status": "delivered", "amount": 40}]},
}
TOOLS = {
    "read_file": {"description": "Read a file.", "parameters": {"path": "File path"}, "effect": "files.read"},
    "write_file": {"description": "Write a file.", "parameters": {"path": "File path", "content": "New content"},
                   "effect": "files.write"},
    "issue_refund": {"description": "Refund an order.", "parameters": {"order_id": "Order id"},
                     "effect": {"records.update": "orders", "key": "order_id", "set": {"status": "refunded"}}},
    "run_command": {"description": "Run a shell command.", "parameters": {"command": "Command"},
                    "cases": [{"when": {"command": "ls"}, "returns": "config.json README.md"}]},
}
EXPECT_PORT = {"files": {"config.json": {"json_subset": {"port": 3000}}}, "unchanged": ["README.md"],
               "no_other_changes": True}


def stateful_suite(tmp: Path, server: ScriptedServer, rows: list[dict[str, Any]], **overrides: Any) -> Path:
    return write_suite(tmp, rows, base_url=server.url, tools=TOOLS, environment=ENV,
                       graders={"final": {"kind": "final_state"}},
                       gate={"kind": "weighted_average", "aggregation": "avg_score", "op": "gte", "value": 1.0},
                       **overrides)


def run(tmp: Path, suite: Path, *extra: str) -> tuple[int, list[dict[str, Any]]]:
    out = tmp / "out"
    result = run_cli("run", str(suite), "-o", str(out), *extra)
    assert "Traceback" not in result.stderr and (out / "results.jsonl").exists(), result.stderr
    return result.returncode, read_jsonl(out / "results.jsonl")


def test_read_then_write_changes_the_world_and_the_results_line_says_how(tmp_path: Path,
                                                                         server: ScriptedServer) -> None:
    good = json.dumps({"host": "localhost", "port": 3000})
    server.script = agent_script({"port": [call("read_file", {"path": "config.json"}),
                                           call("write_file", {"path": "./config.json", "content": good}),
                                           call("read_file", {"path": "config.json"}), text("done")]})
    code, [line] = run(tmp_path, stateful_suite(tmp_path, server, [
        {"id": "port", "input": "Set the port to 3000 in config.json", "expected_state": EXPECT_PORT}]))
    assert code == 0
    calls = [c for turn in line["trajectory"]["turns"] for step in turn["steps"] for c in step["tool_calls"]]
    assert calls[0]["result"] == '{"host": "localhost", "port": 8080}'
    # a read changes nothing, so its effect keeps no copy of the file: the result holds what the agent read
    assert calls[0]["effect"] == {"op": "files.read", "target": "config.json", "changed": False,
                                  "before": None, "after": None, "error": None}
    assert calls[1]["result"] == f"Wrote {len(good)} characters to config.json"
    assert calls[1]["effect"]["changed"] is True and calls[1]["effect"]["after"] == good
    assert calls[2]["result"] == good  # the next read sees the write
    assert line["trajectory"]["state_changes"] == [
        {"kind": "file", "target": "config.json", "before": '{"host": "localhost", "port": 8080}', "after": good}]
    assert line["grades"]["final"]["score"] == 1.0 and line["passed"] is True


def test_writing_the_wrong_port_or_clobbering_keys_fails_with_the_reason(tmp_path: Path,
                                                                         server: ScriptedServer) -> None:
    server.script = agent_script({
        "wrong": [call("write_file", {"path": "config.json", "content": '{"host": "localhost", "port": 8080}'}),
                  text("done")],
        "clobber": [call("write_file", {"path": "config.json", "content": '{"port": 3000}'}),
                    call("write_file", {"path": "notes.txt", "content": "did it"}), text("done")],
    })
    rows = [{"id": "wrong", "input": "wrong", "expected_state": EXPECT_PORT},
            {"id": "clobber", "input": "clobber", "expected_state": {
                "files": {"config.json": {"json_subset": {"port": 3000, "host": "localhost"}}},
                "no_other_changes": True}}]
    code, lines = run(tmp_path, stateful_suite(tmp_path, server, rows))
    assert code == 1
    by_id = {line["sample_id"]: line for line in lines}
    wrong = by_id["wrong"]["grades"]["final"]
    assert wrong["score"] == 0.0 and "config.json: port is 8080, expected 3000" in wrong["rationale"]
    assert by_id["wrong"]["trajectory"]["state_changes"] == []  # the same text written back: nothing changed
    clobber = by_id["clobber"]["grades"]["final"]
    assert "config.json: host is missing, expected 'localhost'" in clobber["rationale"]
    assert "notes.txt: created ('did it'), but no other changes were expected" in clobber["rationale"]


def test_errors_in_effects_reach_the_agent_and_are_recorded(tmp_path: Path, server: ScriptedServer) -> None:
    server.script = agent_script({"go": [call("read_file", {"path": "missing.json"}),
                                         call("issue_refund", {"order_id": "999"}),
                                         call("run_command", {"command": "ls"}), text("sorry")]})
    _, [line] = run(tmp_path, stateful_suite(tmp_path, server, [
        {"id": "e", "input": "go", "expected_state": {"unchanged": ["orders"]}}]))
    calls = [c for turn in line["trajectory"]["turns"] for step in turn["steps"] for c in step["tool_calls"]]
    assert calls[0]["result"] == "Error: missing.json: no such file" and calls[0]["is_error"] is True
    assert calls[0]["effect"]["error"] == "missing.json: no such file"
    assert calls[1]["result"] == "Error: orders/999: not found" and calls[1]["is_error"] is True
    assert calls[2]["result"] == "config.json README.md" and calls[2]["effect"] is None  # canned, beside them
    assert line["trajectory"]["state_changes"] == []
    assert line["grades"]["final"]["score"] == 1.0


def test_repeats_and_concurrent_samples_each_start_from_the_declared_world(tmp_path: Path,
                                                                           server: ScriptedServer) -> None:
    # every run refunds and then reads the order back: a shared or carried-over world would show the second
    # refund as "no change", or another sample's write
    server.script = agent_script({"refund": [call("issue_refund", {"order_id": "12345"}), text("refunded")]})
    rows = [{"id": f"r{i}", "input": "refund it", "expected_state": {
        "records": {"orders": {"12345": {"status": "refunded"}}}, "no_other_changes": True}} for i in range(4)]
    code, lines = run(tmp_path, stateful_suite(tmp_path, server, rows, concurrency=4), "--repeats", "3")
    assert code == 0 and len(lines) == 12
    for line in lines:
        [effect] = [c["effect"] for t in line["trajectory"]["turns"] for s in t["steps"] for c in s["tool_calls"]]
        assert effect["changed"] is True and effect["before"]["status"] == "delivered"
        assert line["trajectory"]["state_changes"] == [{
            "kind": "record", "target": "orders/12345",
            "before": {"id": "12345", "status": "delivered", "amount": 40},
            "after": {"id": "12345", "status": "refunded", "amount": 40}}]


def test_state_lives_across_the_turns_of_a_per_turn_sample(tmp_path: Path, server: ScriptedServer) -> None:
    server.script = agent_script({
        "first": [call("write_file", {"path": "todo.txt", "content": "buy milk"}), text("saved")],
        "second": [call("read_file", {"path": "todo.txt"}), text("buy milk")],
    })
    rows = [{"id": "turns", "input": ["first: save it", "second: read it"], "ground_truth": ["saved", "buy milk"],
             "expected_state": {"files": {"todo.txt": "buy milk"}}}]
    code, [line] = run(tmp_path, stateful_suite(tmp_path, server, rows))
    second_turn = line["trajectory"]["turns"][1]["steps"][0]["tool_calls"][0]
    assert second_turn["result"] == "buy milk"
    assert line["grades"]["final"]["score"] == 1.0 and code == 0


def test_a_row_environment_extends_the_suites_and_can_replace_it(tmp_path: Path, server: ScriptedServer) -> None:
    server.script = agent_script({"read": [call("read_file", {"path": "extra.txt"}),
                                           call("read_file", {"path": "README.md"}), text("ok")]})
    rows = [{"id": "extend", "input": "read", "environment": {"files": {"extra.txt": "row file"}},
             "expected_state": {"unchanged": ["extra.txt", "README.md"]}},
            {"id": "replace", "input": "read", "environment": {"replace": True, "files": {"extra.txt": "alone"},
                                                               "records": {"orders": []}},
             "expected_state": {"unchanged": ["extra.txt"]}}]
    _, lines = run(tmp_path, stateful_suite(tmp_path, server, rows))
    results = {line["sample_id"]: [c["result"] for t in line["trajectory"]["turns"] for s in t["steps"]
                                   for c in s["tool_calls"]] for line in lines}
    assert results["extend"] == ["row file", "# demo"]
    assert results["replace"] == ["alone", "Error: README.md: no such file"]


def test_a_sample_cut_off_at_max_steps_still_records_its_state(tmp_path: Path, server: ScriptedServer) -> None:
    server.script = agent_script({"loop": [call("write_file", {"path": "log.txt", "content": "x"})]})
    _, [line] = run(tmp_path, stateful_suite(tmp_path, server, [
        {"id": "loop", "input": "loop", "max_steps": 2, "expected_state": {"no_other_changes": True}}]))
    assert line["trajectory"]["stop_reason"] == "max_steps"
    assert line["trajectory"]["state_changes"] == [{"kind": "file", "target": "log.txt", "before": None,
                                                    "after": "x"}]
    assert line["grades"]["final"]["score"] == 0.0


def test_a_sample_without_an_environment_is_not_graded_by_final_state(tmp_path: Path,
                                                                      server: ScriptedServer) -> None:
    server.script = agent_script({"hi": [text("hello")]})
    suite = write_suite(tmp_path, [{"id": "plain", "input": "hi"}], base_url=server.url,
                        graders={"final": {"kind": "final_state"}, "answer": {"kind": "tool", "function": "contains"}})
    _, [line] = run(tmp_path, suite)
    assert line["trajectory"].get("state_changes") is None
    assert line["grades"]["final"]["applicable"] is False


def test_the_responses_api_target_acts_on_the_same_world(tmp_path: Path, server: ScriptedServer) -> None:
    server.script = agent_script({"refund": [call("issue_refund", {"order_id": "12345"}), text("refunded")]})
    rows = [{"id": "r", "input": "refund it", "expected_state": {"records": {"orders": {"12345": {"status": "refunded"}}}}}]
    suite = stateful_suite(tmp_path, server, rows, target={"kind": "openai_responses"})
    code, [line] = run(tmp_path, suite)
    assert server.requests[0]["path"].endswith("/responses")
    assert [c["target"] for c in line["trajectory"]["state_changes"]] == ["orders/12345"]
    assert line["grades"]["final"]["score"] == 1.0 and code == 0


def test_a_sample_that_errors_keeps_the_changes_it_made(tmp_path: Path, server: ScriptedServer) -> None:
    from tests.scripted_server import Reply

    def script(path: str, body: dict[str, Any]) -> Any:
        if len(server.requests) == 1:
            return call("write_file", {"path": "half.txt", "content": "partial"})
        return Reply({"error": {"message": "bad request"}}, status=400)

    server.script = script
    code, [line] = run(tmp_path, stateful_suite(tmp_path, server, [
        {"id": "broken", "input": "go", "expected_state": {"no_other_changes": True}}]))
    assert line["error"] is not None and line["trajectory"]["stop_reason"] == "error"
    assert line["trajectory"]["state_changes"] == [{"kind": "file", "target": "half.txt", "before": None,
                                                    "after": "partial"}]
    assert line.get("grades", {}).get("final") is None  # an errored sample is not graded, never scored as a zero
    assert code != 0
