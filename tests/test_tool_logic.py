"""Tools with logic (`python:`) and expected state from gold actions (`expected_actions`), end to end through
`evals run` against the scripted model server: a function refuses an invalid action and changes several records
at once; final_state compares the agent's world with the one the gold calls produce, field by field."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from tests.helpers import ROOT, read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, call, text

WORLD = {"records": {
    "users": [{"id": "u1", "name": "Ana", "credit": 0}, {"id": "u2", "name": "Ben", "credit": 10}],
    "reservations": [{"id": "R1", "user_id": "u1", "status": "active", "price": 120},
                     {"id": "R2", "user_id": "u2", "status": "cancelled", "price": 80}]}}
TOOLS = {
    "cancel_reservation": {"description": "Cancel a reservation and refund its price as credit.",
                           "parameters": {"reservation_id": "The reservation id"},
                           "python": "airline_tools.py:cancel_reservation"},
    "get_reservation": {"description": "Look a reservation up.", "parameters": {"reservation_id": "The id"},
                        "python": "airline_tools.py:get_reservation"},
}


def suite(tmp: Path, server: ScriptedServer, rows: list[dict[str, Any]], tools: dict[str, Any] | None = None) -> Path:
    shutil.copy(ROOT / "tests" / "tool_logic_airline.py", tmp / "airline_tools.py")
    return write_suite(tmp, rows, base_url=server.url, tools=tools or TOOLS, environment=WORLD,
                       graders={"state": {"kind": "final_state"}},
                       gate={"kind": "weighted_average", "aggregation": "avg_score", "op": "gte", "value": 1.0})


def run(tmp: Path, path: Path) -> tuple[int, list[dict[str, Any]], str]:
    result = run_cli("run", str(path), "-o", str(tmp / "out"))
    assert "Traceback" not in result.stderr, result.stderr
    out = tmp / "out" / "results.jsonl"
    return result.returncode, read_jsonl(out) if out.exists() else [], result.stdout + result.stderr


def calls(line: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for turn in line["trajectory"]["turns"] for step in turn["steps"] for c in step["tool_calls"]]


def test_a_tool_function_refuses_an_invalid_action_and_changes_several_records(tmp_path: Path,
                                                                                server: ScriptedServer) -> None:
    server.script = agent_script({"cancel": [call("cancel_reservation", {"reservation_id": "R1"}),
                                             call("cancel_reservation", {"reservation_id": "R1"}),
                                             call("cancel_reservation", {"reservation_id": "R2"}), text("done")]})
    code, [line], said = run(tmp_path, suite(tmp_path, server, [{"id": "c", "input": "cancel R1", "expected_actions": [
        {"tool": "cancel_reservation", "arguments": {"reservation_id": "R1"}}]}]))
    first, again, other = calls(line)
    assert first["is_error"] is False and '"refunded_credit": 120' in first["result"]
    assert again["is_error"] is True and again["result"] == "Error: reservation R1 is already cancelled"
    assert other["is_error"] is True and "already cancelled" in other["result"]  # refused: no change
    changes = {c["target"]: c["after"] for c in line["trajectory"]["state_changes"]}
    assert changes == {"users/u1": {"id": "u1", "name": "Ana", "credit": 120},
                       "reservations/R1": {"id": "R1", "user_id": "u1", "status": "cancelled", "price": 120}}
    assert line["grades"]["state"]["score"] == 1.0 and code == 0, said  # the gold call leaves the same world


def test_expected_actions_fail_a_world_that_differs_naming_the_field(tmp_path: Path, server: ScriptedServer) -> None:
    server.script = agent_script({"nothing": [text("I cannot do that.")],
                                  "wrong": [call("cancel_reservation", {"reservation_id": "R1"}), text("done")]})
    rows = [{"id": "did-nothing", "input": "nothing", "expected_actions": [
                {"tool": "cancel_reservation", "arguments": {"reservation_id": "R1"}}]},
            {"id": "not-asked", "input": "wrong", "expected_actions": []},
            {"id": "bad-gold", "input": "nothing", "expected_actions": [
                {"tool": "cancel_reservation", "arguments": {"reservation_id": "R2"}}]}]
    code, lines, said = run(tmp_path, suite(tmp_path, server, rows))
    by_id = {line["sample_id"]: line for line in lines}
    nothing = by_id["did-nothing"]["grades"]["state"]
    assert nothing["score"] == 0.0
    assert "reservations/R1: status is \"active\", expected \"cancelled\"" in nothing["rationale"]
    assert "users/u1: credit is 0, expected 120" in nothing["rationale"]
    stray = by_id["not-asked"]["grades"]["state"]
    assert stray["score"] == 0.0 and "reservations/R1" in stray["rationale"]  # no other change allowed
    # a gold call the tool refuses is the row's mistake: an error, never a zero
    bad = by_id["bad-gold"]["grades"]["state"]
    assert bad["score"] is None and "expected_actions[1] (cancel_reservation): the tool refused" in bad["error"]
    assert code != 0


def test_a_tool_function_that_exits_or_crashes_errors_the_sample_not_the_run(tmp_path: Path,
                                                                             server: ScriptedServer) -> None:
    tools = {**TOOLS, "leave": {"description": "x", "python": "airline_tools.py:leaves"},
             "boom": {"description": "x", "python": "airline_tools.py:breaks"}}
    server.script = agent_script({"leave": [call("leave", {}), text("?")], "boom": [call("boom", {}), text("?")]})
    code, lines, said = run(tmp_path, suite(tmp_path, server, [{"id": "leave", "input": "leave"},
                                                               {"id": "boom", "input": "boom"}], tools))
    assert {line["sample_id"]: line["error"]["category"] for line in lines} == {"leave": "custom_code",
                                                                                 "boom": "custom_code"}
    messages = " ".join(line["error"]["message"] for line in lines)
    assert "airline_tools.py:leaves called sys.exit(0)" in messages and "ZeroDivisionError" in messages


def test_a_python_agent_that_catches_a_failing_tool_function_still_errors_the_sample(tmp_path: Path) -> None:
    """Agent frameworks catch tool exceptions: a tool function that crashed is still that sample's custom_code
    error, never an answer graded as if nothing happened (nor an internal error when the agent lets it out)."""
    (tmp_path / "agent.py").write_text(
        "def catches(sample, tools):\n"
        "    try:\n"
        "        said = tools.call('boom', {})\n"
        "    except Exception as exc:\n"
        "        said = str(exc)\n"
        "    return 'The answer is 42. ' + said\n"
        "def lets_it_out(sample, tools):\n"
        "    return tools.call('boom', {})\n")
    tools = {**TOOLS, "boom": {"description": "x", "python": "airline_tools.py:breaks"}}
    for name in ("catches", "lets_it_out"):
        path = write_suite(tmp_path, [{"id": name, "input": "x", "ground_truth": "42"}], tools=tools,
                           environment=WORLD, graders={"answer": {"kind": "match", "function": "contains"}})
        shutil.copy(ROOT / "tests" / "tool_logic_airline.py", tmp_path / "airline_tools.py")
        written = yaml.safe_load(path.read_text())
        written["target"] = {"kind": "python", "callable": f"agent.py:{name}"}
        path.write_text(yaml.safe_dump(written))
        code, [line], said = run(tmp_path, path)
        assert line["error"] is not None and line["error"]["category"] == "custom_code", (name, line["error"])
        assert "airline_tools.py:breaks raised ZeroDivisionError" in line["error"]["message"]
        assert line["passed"] is not True and code != 0, said


def test_a_missing_tool_function_is_exit_2_naming_the_tool(tmp_path: Path, server: ScriptedServer) -> None:
    tools = {"cancel_reservation": {**TOOLS["cancel_reservation"], "python": "airline_tools.py:nope"}}
    code, lines, said = run(tmp_path, suite(tmp_path, server, [{"id": "a", "input": "x"}], tools))
    assert code == 2 and "tools.cancel_reservation.python" in said and "nope" in said


AIRLINE_GOOD = {
    "cancel my flight on EV101": [call("get_user", {"user_id": "ana_77"}),
                                  call("cancel_reservation", {"reservation_id": "R100"}),
                                  text("R100 is cancelled; 320 is now travel credit.")],
    "R200": [call("cancel_reservation", {"reservation_id": "R200"}),
             text("R200 is basic economy, so it cannot be cancelled.")],
    "cancel R300": [call("get_reservation", {"reservation_id": "R300"}), text("R300 is already cancelled.")],
    "different seat": [call("change_seat", {"reservation_id": "R400", "seat": "3C"}), text("You are in 3C now.")],
}


def airline_script(agent: dict[str, list[Any]]) -> Any:
    play = agent_script(agent, default=text("You are welcome."))

    def script(path: str, body: dict[str, Any]) -> Any:
        if str(body.get("user", "")).startswith("evals-sim:"):  # the simulated customer: satisfied at once
            return text("ok, thank you ###STOP###")
        return play(path, body)

    return script


def test_the_airline_suite_end_to_end(tmp_path: Path, server: ScriptedServer) -> None:
    server.script = airline_script(AIRLINE_GOOD)
    env = {"EVAL_AGENT_BASE_URL": server.url}
    good = run_cli("run", str(ROOT / "suites" / "airline.yaml"), "-o", str(tmp_path / "good"), env=env)
    assert good.returncode == 0, good.stdout + good.stderr
    lines = {line["sample_id"]: line for line in read_jsonl(tmp_path / "good" / "results.jsonl")}
    refused = calls(lines["basic-economy-refused"])[0]
    assert refused["is_error"] and "basic economy" in refused["result"]
    # a careless agent cancels Ben's other reservation when R300 turns out to be cancelled already
    server.script = airline_script({**AIRLINE_GOOD, "cancel R300": [
        call("cancel_reservation", {"reservation_id": "R300"}), call("cancel_reservation", {"reservation_id": "R400"}),
        text("Done, I cancelled your reservation.")]})
    bad = run_cli("run", str(ROOT / "suites" / "airline.yaml"), "-o", str(tmp_path / "bad"), env=env)
    lines = {line["sample_id"]: line for line in read_jsonl(tmp_path / "bad" / "results.jsonl")}
    grade = lines["already-cancelled"]["grades"]["final_state"]
    assert grade["score"] == 0.0 and "reservations/R400: status is \"cancelled\", expected \"active\"" in grade["rationale"]
    assert "users/ben_12: travel_credit is 950, expected 50" in grade["rationale"]
    assert bad.returncode == 1


def test_the_shipped_airline_recording_replays_offline(tmp_path: Path) -> None:
    """make eval-airline: the real small model as agent and customer, replayed; the verdicts the README reports."""
    out = tmp_path / "out"
    result = run_cli("run", "suites/airline.yaml", "--replay", "suites/airline.recording.jsonl", "-o", str(out))
    assert result.returncode == 1, result.stdout + result.stderr
    lines = {line["sample_id"]: line for line in read_jsonl(out / "results.jsonl")}
    assert {k: v["passed"] for k, v in lines.items()} == {"cancel-economy": True, "basic-economy-refused": True,
                                                          "already-cancelled": False, "change-seat": False}
    assert 'seat is "15D", expected "3C"' in lines["change-seat"]["grades"]["final_state"]["rationale"]
    assert lines["already-cancelled"]["grades"]["no_loops"]["score"] == 0.0
    refused = calls(lines["basic-economy-refused"])[0]
    assert refused["is_error"] and "basic economy" in refused["result"]
