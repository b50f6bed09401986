"""`evals generate` against the scripted loopback server through the real openai client: rows read from fenced,
bare and malformed replies, gold actions applied by the suite's own tools (rows the tools refuse dropped with the
reason), duplicates dropped, the seed in every request and in the order, the request bound, attacker rows, and
the written file passing `evals validate` unchanged."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import yaml

from tests.helpers import ROOT, read_jsonl, run_cli, write_suite
from tests.scripted_server import Reply, ScriptedServer, text
from tests.test_tool_logic import TOOLS, WORLD  # the airline of tests/tool_logic_airline.py

POLICY = "Cancel a reservation only when it is active; its price becomes travel credit.\n"


def row(goal: str, actions: list[dict[str, Any]] | None = None, **more: Any) -> dict[str, Any]:
    out = {"persona": "Ana, brief", "goal": goal, "knows": {"reservation_id": "R1"},
           "success": f"{goal} happened", "expected_actions": actions if actions is not None else []}
    return {**out, **more}


def cancel(reservation: str) -> list[dict[str, Any]]:
    return [{"tool": "cancel_reservation", "arguments": {"reservation_id": reservation}}]


def generator(replies: list[Any]) -> Any:
    """The n-th generator request gets the n-th reply (the last repeats)."""
    def script(path: str, body: dict[str, Any]) -> Any:
        index = int(str(body.get("user", "x:0:0")).rsplit(":", 1)[1])
        reply = replies[min(index, len(replies) - 1)]
        return reply if isinstance(reply, Reply) else text(reply)
    return script


def inputs(tmp: Path, server: ScriptedServer, tools: dict[str, Any] | None = None) -> tuple[Path, Path]:
    """policy.md, and a suite with the airline's tools and world whose judge is the scripted server."""
    shutil.copy(ROOT / "tests" / "tool_logic_airline.py", tmp / "airline_tools.py")
    (tmp / "policy.md").write_text(POLICY, encoding="utf-8")
    path = write_suite(tmp, [{"id": "x", "input": "hi"}], base_url=server.url, tools=tools or TOOLS, environment=WORLD,
                       judge={"base_url": server.url, "model": "scripted", "api_key": "sk-test", "max_retries": 0},
                       graders={"state": {"kind": "final_state"}})
    return tmp / "policy.md", path


def generate(tmp: Path, policy: Path, *args: str) -> tuple[int, list[dict[str, Any]], str, str]:
    out = tmp / "rows.jsonl"
    result = run_cli("generate", "--from", str(policy), "-o", str(out), *args)
    assert "Traceback" not in result.stderr, result.stderr
    rows = read_jsonl(out) if out.exists() else []
    return result.returncode, rows, result.stdout, result.stderr


def requests_of(server: ScriptedServer) -> list[dict[str, Any]]:
    return [r["body"] for r in server.requests if str(r["body"].get("user", "")).startswith("evals-generate:")]


def test_rows_are_checked_by_the_suites_tools_deduplicated_and_pass_validate(tmp_path: Path,
                                                                             server: ScriptedServer) -> None:
    first = [row("Cancel reservation R1", cancel("R1")),
             row("Cancel reservation R2", cancel("R2")),  # the tool refuses: R2 is already cancelled
             row("cancel  reservation r1!", cancel("R1")),  # the same goal again
             {"persona": "Ben", "goal": "Get a refund", "knows": {}, "expected_actions": []},  # no success
             row("Change my name", [{"tool": "rename_user", "arguments": {}}])]  # no such tool
    server.script = generator([
        "Here are the rows:\n```json\n" + json.dumps({"rows": first}) + "\n```\nHope this helps.",
        "Sure! I will write more test cases for you.",  # no JSON at all
        "\n".join(json.dumps(r) for r in [row("Ask what R1 costs", [
            {"tool": "get_reservation", "arguments": {"reservation_id": "R1"}}]), row("Ask about baggage")])])
    policy, suite = inputs(tmp_path, server)
    code, rows, out, err = generate(tmp_path, policy, "--tools", str(suite), "-n", "3", "--seed", "7")
    assert code == 0, err
    assert [r["id"] for r in rows] == ["gen-001", "gen-002", "gen-003"]
    assert [r["user"]["goal"] for r in rows] == ["Cancel reservation R1", "Ask what R1 costs", "Ask about baggage"]
    assert rows[0] == {"id": "gen-001", "user": {"persona": "Ana, brief", "goal": "Cancel reservation R1",
                                                 "knows": {"reservation_id": "R1"}},
                       "success": "Cancel reservation R1 happened", "tags": ["generated"],
                       "expected_actions": cancel("R1")}
    assert ("dropped: request 1, row 2: expected_actions[1] (cancel_reservation): the tool refused the gold call: "
            "Error: reservation R2 is already cancelled") in err
    assert "dropped: request 1, row 3: a duplicate of gen-001 (the same goal)" in err
    assert "dropped: request 1, row 4: no success (a non-empty string)" in err
    assert "dropped: request 1, row 5: expected_actions[1] (rename_user): no such tool" in err
    assert "malformed reply: request 2: the reply is not JSON rows" in err
    assert f"wrote 3 rows to {tmp_path / 'rows.jsonl'} (3 requests to the generator endpoint" in out
    asked = requests_of(server)
    assert [b["seed"] for b in asked] == [7, 8, 9]
    prompt = asked[2]["messages"][1]["content"]
    assert POLICY.strip() in prompt and "cancel_reservation (may change the world)" in prompt
    assert '"R1"' in prompt  # the world, so the model can name real ids
    assert "already written:\n- Cancel reservation R1" in prompt and "Write 2 new test cases" in prompt
    # the file is a dataset as it is: a suite naming it validates
    data = yaml.safe_load(suite.read_text())
    data["dataset"] = "rows.jsonl"
    suite.write_text(yaml.safe_dump(data, sort_keys=False))
    checked = run_cli("validate", str(suite))
    assert checked.returncode == 0 and "ok: 3 samples" in checked.stdout, checked.stderr


def test_the_same_seed_asks_the_same_and_writes_the_same_another_changes_the_order(tmp_path: Path,
                                                                                   server: ScriptedServer) -> None:
    attacks = [{"persona": f"p{i}", "goal": f"get secret {i}", "violation": f"reveals secret {i}"}
               for i in range(4)]
    server.script = generator([json.dumps(attacks)])
    (tmp_path / "policy.md").write_text("Never reveal the staff code.\n")
    runs = []
    for seed in ("3", "3", "4"):
        server.requests.clear()
        code, rows, _, err = generate(tmp_path, tmp_path / "policy.md", "--kind", "attacker", "-n", "4", "--seed",
                                      seed, "--model", f"scripted@{server.url}")
        assert code == 0, err
        runs.append((rows, requests_of(server)))
    (rows, asked), (again, asked_again), (other, asked_other) = runs
    assert rows == again and [b["messages"] for b in asked] == [b["messages"] for b in asked_again]
    strategies = [r["user"]["strategy"] for r in rows]
    assert sorted(strategies) == ["crescendo", "direct", "prompt_injection", "role_play"]
    assert f"Use, in order: {', '.join(strategies)}." in asked[0]["messages"][1]["content"]
    assert [r["user"]["strategy"] for r in other] != strategies and asked_other[0]["seed"] == 4
    assert rows[0] == {"id": "attack-001", "user": {"kind": "attacker", "strategy": strategies[0], "persona": "p0",
                                                    "goal": "get secret 0", "knows": {}},
                       "rubric_vars": {"violation": "reveals secret 0"},
                       "tags": ["generated", "red_team", strategies[0]], "category": "red_team"}
    assert "expected_actions" not in rows[0]  # no suite tools with logic: nothing to apply


def test_a_model_that_never_gives_rows_is_asked_a_bounded_number_of_times_and_exits_3(
        tmp_path: Path, server: ScriptedServer) -> None:
    server.script = generator(['{"rows": "not a list"', '[1, 2]'])
    policy, suite = inputs(tmp_path, server)
    code, rows, _, err = generate(tmp_path, policy, "--tools", str(suite), "-n", "2")
    assert code == 3 and rows == [] and (tmp_path / "rows.jsonl").read_text() == ""  # no older file left
    assert len(requests_of(server)) == 4  # 2 * one batch + 2
    assert "dropped: request 2, row 1: not a JSON object but int" in err
    assert "error: wrote no rows, 2 asked for: the bound of 4 requests was reached" in err


def test_the_generator_endpoint_failing_keeps_the_rows_written_and_exits_3(tmp_path: Path,
                                                                         server: ScriptedServer) -> None:
    server.script = generator([json.dumps([row("Ask about baggage")]),
                               Reply({"error": {"message": "model overloaded"}}, status=400)])
    policy, suite = inputs(tmp_path, server)
    code, rows, _, err = generate(tmp_path, policy, "--tools", str(suite), "-n", "3")
    assert code == 3 and [r["user"]["goal"] for r in rows] == ["Ask about baggage"]
    assert "error: the generator failed:" in err and "model overloaded" in err
    assert "wrote 1 row to" in err and "3 asked for: the generator failed" in err


def test_a_template_of_your_own_is_used_and_bad_input_is_exit_2(tmp_path: Path, server: ScriptedServer) -> None:
    server.script = generator([json.dumps([row("Ask about baggage"), row("Ask about pets")])])
    policy, suite = inputs(tmp_path, server)
    mine = tmp_path / "mine.j2"
    mine.write_text("ROWS PLEASE, {{ count }} of them, for: {{ policy }}")
    code, rows, out, err = generate(tmp_path, policy, "--tools", str(suite), "-n", "1", "--template", str(mine))
    assert code == 0 and len(rows) == 1 and "0 replies malformed, 1 past the count not read)" in out, err
    assert requests_of(server)[0]["messages"][1]["content"] == f"ROWS PLEASE, 1 of them, for: {POLICY.strip()}"
    mine.write_text("{% if %}")
    for args, said in [(["--template", str(mine)], f"--template {mine}: line 1: Jinja2 syntax error"),
                       (["--kind", "thief"], "--kind thief: choose task"),
                       (["--template", str(tmp_path / "nope.j2")], "no such file")]:
        code, _, _, err = generate(tmp_path, policy, "--tools", str(suite), *args)
        assert code == 2 and said in err, err
    code, _, _, err = generate(tmp_path, tmp_path / "missing.md", "--tools", str(suite))
    assert code == 2 and "--from" in err and "no such file" in err
    suite.write_text(suite.read_text().replace("kind: final_state", "kind: final_stat"))
    code, _, _, err = generate(tmp_path, policy, "--tools", str(suite))
    assert code == 2 and f"{suite}:" in err and "final_stat" in err
    code, _, _, err = generate(tmp_path, policy)  # no suite, no --model, no EVAL_JUDGE_MODEL
    assert code == 2 and "no generator model: give --model NAME" in err


def test_effect_tools_are_marked_by_what_they_do_and_a_gold_action_on_a_missing_record_is_dropped(
        tmp_path: Path, server: ScriptedServer) -> None:
    tools = {"get_order": {"description": "Look an order up", "parameters": {"order_id": "Order id"},
                           "effect": {"records.get": "orders", "key": "order_id"}},
             "refund_order": {"description": "Refund an order", "parameters": {"order_id": "Order id"},
                              "effect": {"records.update": "orders", "key": "order_id",
                                         "set": {"status": "refunded"}}},
             "weather": {"description": "Today's weather", "returns": "sunny"}}
    refund = [{"tool": "refund_order", "arguments": {"order_id": "o1"}}]
    server.script = generator([json.dumps({"rows": [
        row("Refund order o1", refund), row("Refund order o9", [{"tool": "refund_order",
                                                                  "arguments": {"order_id": "o9"}}]),
        row("Ask the weather", [{"tool": "weather", "arguments": {}}])]})])
    (tmp_path / "policy.md").write_text(POLICY)
    suite = write_suite(tmp_path, [{"id": "x", "input": "hi"}], base_url=server.url, tools=tools,
                        environment={"records": {"orders": [{"id": "o1", "status": "paid"}]}})
    code, rows, _, err = generate(tmp_path, tmp_path / "policy.md", "--tools", str(suite), "-n", "3",
                                  "--max-requests", "1")
    assert code == 3 and [r["expected_actions"] for r in rows] == [refund]
    assert "request 1, row 2: expected_actions[1] (refund_order): the tool refused the gold call" in err
    assert ("request 1, row 3: expected_actions[1] (weather): a tool without logic (no effect, no python): "
            "nothing to apply") in err
    prompt = requests_of(server)[0]["messages"][1]["content"]
    assert "- refund_order (may change the world): Refund an order" in prompt
    assert "- get_order: Look an order up" in prompt and "- weather: Today's weather" in prompt


def test_the_library_call_returns_what_the_command_prints(tmp_path: Path, server: ScriptedServer) -> None:
    from evals_cli.generate.api import GenerateOptions, generate_rows

    server.script = generator([json.dumps([row("Ask about baggage"), row("Ask about baggage")])])
    policy, suite = inputs(tmp_path, server)
    done = generate_rows(GenerateOptions(policy=policy, tools=suite, count=2, output=tmp_path / "rows.jsonl",
                                         max_requests=1))
    assert not done.complete and done.exit_code == 3
    assert [r["id"] for r in read_jsonl(tmp_path / "rows.jsonl")] == ["gen-001"] == \
        [r["id"] for r in done.outcome.rows]
    assert done.outcome.dropped == ["request 1, row 2: a duplicate of gen-001 (the same goal)"]
    assert done.summary() is None and done.notes()[-1].startswith(
        "error: wrote 1 row to " + str(tmp_path / "rows.jsonl") + ", 2 asked for: the bound of 1 requests")


def test_a_gold_action_that_breaks_or_hangs_the_suites_tool_drops_the_row_in_bounded_time(
        tmp_path: Path, server: ScriptedServer, monkeypatch: Any) -> None:
    from evals_cli.generate import rows as generated_rows

    monkeypatch.setattr(generated_rows, "GOLD_SECONDS", 0.3)
    tools = {**TOOLS, "hangs": {"description": "Wait", "parameters": {"seconds": "How long"},
                                "python": "airline_tools.py:hangs"},
             "breaks": {"description": "Divide", "python": "airline_tools.py:breaks"}}
    server.script = generator([json.dumps([row("Wait a while", [{"tool": "hangs", "arguments": {"seconds": 3}}]),
                                           row("Divide", [{"tool": "breaks", "arguments": {}}]),
                                           row("Cancel R1", cancel("R1"))])])
    policy, suite = inputs(tmp_path, server, tools=tools)
    code, rows, _, err = generate(tmp_path, policy, "--tools", str(suite), "-n", "1")
    assert code == 0 and [r["user"]["goal"] for r in rows] == ["Cancel R1"], err
    assert "dropped: request 1, row 1: a gold action broke the suite's tool: tool function airline_tools.py:hangs" \
        in err and "was still running" in err
    assert "dropped: request 1, row 2: a gold action broke the suite's tool: tool function airline_tools.py:breaks " \
        "raised ZeroDivisionError" in err


def test_generated_rows_run_as_they_are_and_final_state_grades_against_their_gold_actions(
        tmp_path: Path, server: ScriptedServer) -> None:
    from tests.scripted_server import call

    generated = [row("Cancel reservation R1", cancel("R1")), row("Ask about baggage")]

    def script(path: str, body: dict[str, Any]) -> Any:
        who = str(body.get("user", ""))
        if who.startswith("evals-generate:"):
            return text(json.dumps({"rows": generated}))
        if who.startswith("evals-sim:"):  # the simulated user states its goal and stops
            goal = body["messages"][0]["content"].split("What you want: ", 1)[1].split("\n", 1)[0]
            return text(f"{goal} please ###STOP###")
        messages = body["messages"]
        if "Cancel reservation R1" in messages[-1].get("content", "") and messages[-1]["role"] == "user":
            return call("cancel_reservation", {"reservation_id": "R1"})
        return text("Done.")

    server.script = script
    policy, suite = inputs(tmp_path, server)
    code, _, _, err = generate(tmp_path, policy, "--tools", str(suite), "-n", "2")
    assert code == 0, err
    data = yaml.safe_load(suite.read_text())
    data["dataset"] = "rows.jsonl"
    suite.write_text(yaml.safe_dump(data, sort_keys=False))
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    lines = {line["sample_id"]: line for line in read_jsonl(tmp_path / "out" / "results.jsonl")}
    assert result.returncode == 0, result.stdout + result.stderr
    assert lines["gen-001"]["grades"]["state"]["score"] == 1.0  # the agent's world is the gold actions' world
    assert lines["gen-002"]["grades"]["state"]["score"] == 1.0  # nothing to change, and nothing changed


def test_rows_with_user_gold_actions_are_checked_by_the_users_tools_and_kept(tmp_path: Path,
                                                                             server: ScriptedServer) -> None:
    """Dual control: a gold action with `requestor: user` is applied by the suite's `user_tools` (as the run's
    final_state applies it) and kept with its requestor; one the user's tools refuse, or that names a tool of the
    other actor, is dropped with the reason."""
    shutil.copy(ROOT / "suites" / "telecom_tools.py", tmp_path / "telecom_tools.py")
    telecom = yaml.safe_load((ROOT / "suites" / "telecom.yaml").read_text())
    user_tools = {**telecom["user_tools"], "confirm_line": {
        "description": "Confirm your line in the operator's app", "parameters": {"id": "Your phone number"},
        "effect": {"records.update": "lines", "key": "id", "set": {"status": "confirmed"}}}}
    (tmp_path / "policy.md").write_text("Guide the customer one step at a time; only they can touch the phone.\n")
    fix = [{"tool": "toggle_airplane_mode", "arguments": {}, "requestor": "user"},
           {"tool": "reseat_sim", "arguments": {}, "requestor": "user"},
           {"tool": "enable_roaming_plan", "arguments": {"phone_number": "555-0142"}}]
    server.script = generator([json.dumps({"rows": [
        row("Get data working abroad", fix),
        row("Confirm line 555-0000", [{"tool": "confirm_line", "arguments": {"id": "555-0000"},
                                       "requestor": "user"}]),  # no such line: the user's tool refuses
        row("Reseat the SIM", [{"tool": "reseat_sim", "arguments": {}}]),  # the user's tool, as the agent's
        row("Agent toggles", [{"tool": "get_line", "arguments": {"phone_number": "555-0142"},
                               "requestor": "user"}]),  # the agent's tool, as the user's
        row("Bad requestor", [{"tool": "reseat_sim", "arguments": {}, "requestor": "both"}]),
        row("Confirm line 555-0199", [{"tool": "confirm_line", "arguments": {"id": "555-0199"},
                                       "requestor": "user"}])]})])
    suite = write_suite(tmp_path, [{"id": "x", "input": "hi"}], base_url=server.url, tools=telecom["tools"],
                        user_tools=user_tools, environment=telecom["environment"],
                        graders={"state": {"kind": "final_state"}})
    code, rows, _, err = generate(tmp_path, tmp_path / "policy.md", "--tools", str(suite), "-n", "2",
                                  "--max-requests", "1", "--model", f"scripted@{server.url}")
    assert code == 0, err
    assert [r["expected_actions"] for r in rows] == [fix, [{"tool": "confirm_line", "arguments": {"id": "555-0199"},
                                                            "requestor": "user"}]]
    assert ("request 1, row 2: expected_actions[1] (confirm_line): the tool refused the gold call: Error: ") in err
    assert ("request 1, row 3: expected_actions[1] (reseat_sim): no such tool among the agent's tools "
            "(requestor: agent)") in err
    assert ("request 1, row 4: expected_actions[1] (get_line): no such tool among the user's tools "
            "(requestor: user)") in err
    assert "request 1, row 5: expected_actions[1] (reseat_sim): requestor 'both' is not agent or user" in err
    prompt = requests_of(server)[0]["messages"][1]["content"]
    assert "The user's own tools (dual control" in prompt
    assert "- toggle_airplane_mode (may change the world): Switch airplane mode" in prompt
    assert '"requestor": "user"' in prompt
    # the file is a dataset as it is: the suite naming it validates, its gold actions applied by both actors
    data = yaml.safe_load(suite.read_text())
    data["dataset"] = "rows.jsonl"
    suite.write_text(yaml.safe_dump(data, sort_keys=False))
    checked = run_cli("validate", str(suite))
    assert checked.returncode == 0 and "ok: 2 samples" in checked.stdout, checked.stdout + checked.stderr


def test_an_unreachable_generator_is_named_as_the_cause_with_advice_that_fits_it(tmp_path: Path,
                                                                                 server: ScriptedServer) -> None:
    from tests.real_model_server import closed_port

    policy, suite = inputs(tmp_path, server)
    down = f"http://127.0.0.1:{closed_port()}/v1"
    code, rows, _, err = generate(tmp_path, policy, "--tools", str(suite), "-n", "2", "--model", f"m@{down}")
    assert code == 3 and rows == []
    assert "cannot reach" in err and down in err
    assert "--seed" not in err and "--max-requests" not in err  # another seed asks the same dead server
    last = err.strip().splitlines()[-1]
    assert "failed at request 1" in last and last.count("(") == last.count(")")


def test_make_generate_offline_replays_the_shipped_recording_of_a_real_model(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    from tests.real_model_server import closed_port

    out = tmp_path / "rows.jsonl"
    env = {**os.environ, "EVAL_AGENT_BASE_URL": f"http://127.0.0.1:{closed_port()}/v1"}  # nothing to reach
    done = subprocess.run(["make", "-s", "--no-print-directory", "-o", ".venv/.installed", "generate-offline",
                           f"EVALS={sys.executable} -m evals_cli", f"GENERATED={out}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert "wrote 3 rows" in done.stdout + done.stderr and "malformed reply: request 1" in done.stderr
    assert [r["id"] for r in read_jsonl(out)] == ["gen-001", "gen-002", "gen-003"]
