"""Dual control with MCP servers (issue 34): the simulated user's own servers (`user_mcp_servers`, the shape of
`mcp_servers`) run in the episode's MCP session, in the same workspace as the agent's. A real stdio MCP server
written with the SDK (tests/mcp_servers/demo_server.py) serves both actors, each under its own prefix; the
ScriptedServer plays the agent and a customer who calls its tools, through the real openai client.

The customer's "phone" is the workspace file settings.txt: the agent reads it with its server, asks the customer
to fix it, the customer writes it with its own server, and the agent reads the change."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers import TOOLS, read_jsonl, run_cli, write_suite
from tests.scripted_server import Reply, ScriptedServer, call, is_simulator, text
from tests.test_mcp import demo

AGENT_MOCKED = set(TOOLS)  # write_suite's mocked tools, the agent's beside its server's
ROW = {"id": "phone", "user": {"persona": "Dana, does what she is asked", "goal": "get airplane mode off",
                               "first_message": "My phone is stuck in airplane mode.", "max_turns": 4},
       "expected_state": {"files": {"settings.txt": {"exact": "airplane=off"}, "ticket.txt": {"exact": "closed"}}}}
USER_SERVER = {"phone": demo("--root", "{workspace}", include=["write_note", "read_note", "fail", "crash"],
                             prefix="phone_")}
AGENT_SERVER = {"desk": demo("--root", "{workspace}", include=["read_note", "write_note"], prefix="desk_")}


def agent(body: dict[str, Any]) -> dict[str, Any]:
    """Reads the phone's settings, asks the customer to turn airplane mode off, checks, closes the ticket."""
    messages = body["messages"]
    last = messages[-1]
    if last["role"] == "tool":
        if last["content"] == "airplane=on":
            return text("Please write airplane=off into settings.txt on your phone.")
        if last["content"] == "airplane=off":
            return call("desk_write_note", {"name": "ticket.txt", "text": "closed"})
        return text("All fixed, your phone is online.")
    if "thanks" in str(last.get("content")).lower():
        return text("You're welcome, goodbye.")
    return call("desk_read_note", {"name": "settings.txt"})


def customer(tool: str = "phone_write_note", arguments: dict[str, Any] | None = None) -> Any:
    """Calls `tool` when asked to write the setting, reports what it saw, thanks the agent when fixed."""
    def play(body: dict[str, Any]) -> dict[str, Any]:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return text(f"I did it: {last['content']}")
        if "airplane=off" in str(last.get("content")):
            return call(tool, arguments if arguments is not None else {"name": "settings.txt", "text": "airplane=off"})
        return text("Thanks! ###STOP###")
    return play


def both(user: Any = None) -> Any:
    user = user or customer()

    def script(path: str, body: dict[str, Any]) -> Any:
        return user(body) if is_simulator(body) else agent(body)
    return script


def suite(tmp: Path, server: ScriptedServer, row: dict[str, Any] = ROW, **overrides: Any) -> Path:
    overrides.setdefault("mcp_servers", AGENT_SERVER)
    overrides.setdefault("user_mcp_servers", USER_SERVER)
    overrides.setdefault("tools", {})
    overrides.setdefault("graders", {"state": {"kind": "final_state"}})
    return write_suite(tmp, [row], base_url=server.url, environment={"files": {"settings.txt": "airplane=on"}},
                       user_simulator={"base_url": server.url, "model": "scripted", "api_key": "sk-test",
                                       "max_retries": 0}, concurrency=1, **overrides)


def run(tmp: Path, path: Path, *extra: str, out: str = "out") -> tuple[int, list[dict[str, Any]], str]:
    result = run_cli("run", str(path), "-o", str(tmp / out), *extra)
    assert "Traceback" not in result.stderr, result.stderr
    folder = tmp / out / "results.jsonl"
    return result.returncode, read_jsonl(folder) if folder.exists() else [], result.stdout + result.stderr


def user_calls(line: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for t in line["trajectory"]["turns"] for s in t.get("user_steps", []) for c in s["tool_calls"]]


def agent_calls(line: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for t in line["trajectory"]["turns"] for s in t["steps"] for c in s["tool_calls"]]


def actors(line: dict[str, Any]) -> dict[str, str]:
    return {c["target"]: c.get("actor", "agent") for c in line["trajectory"]["state_changes"]}


@pytest.mark.slow
def test_the_users_mcp_tools_act_in_the_agents_workspace_and_the_diff_says_who(tmp_path: Path,
                                                                               server: ScriptedServer) -> None:
    server.script = both()
    recording = tmp_path / "rec.jsonl"
    code, [line], said = run(tmp_path, suite(tmp_path, server), "--record", str(recording))
    assert code == 0, said
    # the customer's call went to its own server, is in the turn's user steps with actor user
    [write] = user_calls(line)
    assert (write["name"], write["result"], write["is_error"]) == ("phone_write_note", "wrote settings.txt", False)
    assert all(s["actor"] == "user" for t in line["trajectory"]["turns"] for s in t.get("user_steps", []))
    # the agent's server read what the customer's wrote: one workspace
    reads = [c["result"] for c in agent_calls(line) if c["name"] == "desk_read_note"]
    assert reads == ["airplane=on", "airplane=off"]
    # who changed what: the setting by the user, the ticket by the agent; final_state graded whoever acted
    assert actors(line) == {"settings.txt": "user", "ticket.txt": "agent"}
    assert line["grades"]["state"]["score"] == 1.0 and line["passed"] is True
    # the simulator was offered the user's server tools only, the agent only its own
    sim = [r["body"] for r in server.requests if is_simulator(r["body"])]
    agent_bodies = [r["body"] for r in server.requests if not is_simulator(r["body"])]
    assert all({t["function"]["name"] for t in b.get("tools") or []}
               == {"phone_write_note", "phone_read_note", "phone_fail", "phone_crash"} for b in sim)
    assert all({t["function"]["name"] for t in b["tools"]} == {"desk_read_note", "desk_write_note", *AGENT_MOCKED}
               for b in agent_bodies)
    # the recording holds the user's server: its tool list, the call, and what the call changed
    lines = [json.loads(x) for x in recording.read_text().splitlines() if '"kind": "mcp"' in x]
    assert {(x["server"], x["op"]) for x in lines} >= {("phone", "tools/list"), ("phone", "tools/call"),
                                                        ("desk", "tools/list"), ("desk", "tools/call")}
    phone_call = next(x for x in lines if x["server"] == "phone" and x["op"] == "tools/call")
    assert phone_call["result"]["changed"] == ["settings.txt"]

    # --replay: no server runs (their commands are gone), the same calls, results and actors
    offline = {name: {"command": "no-such-mcp-server", "args": ["{workspace}"], "include": spec["include"],
                      "prefix": spec["prefix"]} for name, spec in {**AGENT_SERVER, **USER_SERVER}.items()}
    replay_suite = suite(tmp_path, server, mcp_servers={"desk": offline["desk"]},
                         user_mcp_servers={"phone": offline["phone"]})
    server.requests.clear()
    code, [again], said = run(tmp_path, replay_suite, "--replay", str(recording), out="replayed")
    assert code == 0, said
    assert not server.requests  # the agent and the simulator came from the recording too
    assert [c["result"] for c in user_calls(again)] == ["wrote settings.txt"]
    assert actors(again) == {"settings.txt": "user", "ticket.txt": "agent"}
    assert again["grades"]["state"]["score"] == 1.0


@pytest.mark.slow
def test_replay_user_runs_the_recorded_users_mcp_calls_again_on_its_server(tmp_path: Path,
                                                                          server: ScriptedServer) -> None:
    server.script = both()
    path = suite(tmp_path, server)
    code, _, said = run(tmp_path, path, out="first")
    assert code == 0, said

    def no_simulator(route: str, body: dict[str, Any]) -> Any:
        if is_simulator(body):
            return Reply({"error": {"message": "the simulator must not be asked"}}, status=400)
        return agent(body)

    server.script = no_simulator
    code, [line], said = run(tmp_path, path, "--replay-user", str(tmp_path / "first"), out="again")
    assert code == 0, said
    assert {t["user_source"] for t in line["trajectory"]["turns"]} == {"replayed"}
    [write] = user_calls(line)  # made again, on this episode's own user server
    assert (write["name"], write["result"]) == ("phone_write_note", "wrote settings.txt")
    assert actors(line) == {"settings.txt": "user", "ticket.txt": "agent"}
    assert line["grades"]["state"]["score"] == 1.0


@pytest.mark.slow
def test_a_user_mcp_tool_error_is_an_answer_and_a_crash_is_the_users_error_never_the_agents(
        tmp_path: Path, server: ScriptedServer) -> None:
    # isError: the customer reads it, as the agent reads its own tools' errors
    server.script = both(customer("phone_fail", {"reason": "the screen is frozen"}))
    code, [line], said = run(tmp_path, suite(tmp_path, server))
    failed = user_calls(line)[0]
    assert failed["is_error"] is True and "the screen is frozen" in failed["result"]
    assert line["error"] is None and line["grades"]["state"]["score"] == 0.0, said  # the setting was never fixed
    # the server crashes: the user's error (never the agent's, never a zero), and the run stops as for the agent's
    server.script = both(customer("phone_crash", {}))
    code, [line], said = run(tmp_path, suite(tmp_path, server), out="crashed")
    assert line["error"]["category"] == "user_simulator", line["error"]
    message = line["error"]["message"]
    assert "the user's tool phone_crash failed" in message and "MCP server 'phone'" in message
    assert line["score"] is None and line["trajectory"]["end_reason"] == "user_error"
    assert code == 3, said


def test_a_user_server_named_like_an_agent_server_is_refused_at_its_line(tmp_path: Path,
                                                                         server: ScriptedServer) -> None:
    path = suite(tmp_path, server, user_mcp_servers={"desk": USER_SERVER["phone"]})
    result = run_cli("validate", str(path))
    said = result.stdout + result.stderr
    assert result.returncode == 2, said
    assert "user_mcp_servers.desk has the name of the agent's server mcp_servers.desk" in said
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if text.startswith("user_mcp_servers"))
    assert f"suite.yaml:{line + 1}:" in said and "Traceback" not in said


def test_a_suite_built_in_python_with_shared_names_is_refused_before_anything_starts(
        tmp_path: Path, server: ScriptedServer) -> None:
    """No loader sees a SuiteSpec built in Python: the shared names are refused when the run is prepared, never
    a user server silently dropped (the hub keeps one server per name)."""
    import evals_cli
    from evals_cli.errors import ConfigError
    from evals_cli.run_options import RunOptions
    from evals_cli.suite.loader import load_suite

    loaded = load_suite(suite(tmp_path, server))
    both_desks = loaded.model_copy(update={"user_mcp_servers": {"desk": loaded.user_mcp_servers["phone"]}})
    with pytest.raises(ConfigError) as caught:
        evals_cli.run(both_desks, RunOptions(output=tmp_path / "out"))
    said = "\n".join(caught.value.problems)
    assert "user_mcp_servers.desk has the name of the agent's server mcp_servers.desk" in said
    assert not (tmp_path / "out").exists() and not server.requests


@pytest.mark.slow  # starts the MCP servers (Python processes importing the SDK): seconds of CPU
def test_a_user_mcp_tool_named_like_an_agent_tool_is_exit_2_naming_both(tmp_path: Path,
                                                                        server: ScriptedServer) -> None:
    clash = {"phone": {**USER_SERVER["phone"], "prefix": "desk_", "include": ["read_note"]}}
    code, lines, said = run(tmp_path, suite(tmp_path, server, user_mcp_servers=clash))
    assert code == 2 and not lines, said
    assert ("user_mcp_servers.phone's tool 'read_note' has the name of the agent's tool mcp_servers.desk's tool "
            "'read_note'") in said
    # a mocked agent tool of that name too
    mocked = {"desk_read_note": {"description": "Read", "returns": "x"}}
    code, _, said = run(tmp_path, suite(tmp_path, server, mcp_servers={}, user_mcp_servers=clash, tools=mocked),
                        out="mocked")
    assert code == 2 and ("user_mcp_servers.phone's tool 'read_note' has the name of the agent's tool "
                          "tools.desk_read_note") in said, said


@pytest.mark.slow  # starts the MCP servers (Python processes importing the SDK): seconds of CPU
def test_a_user_server_in_mock_mode_takes_its_results_from_user_tools(tmp_path: Path,
                                                                      server: ScriptedServer) -> None:
    """mode: mock, as for the agent's servers: the server gives the schema (listed, then stopped), the suite's
    `user_tools` entry of the same name the result; a mocked tool with no entry is exit 2 naming user_tools."""
    mock = {"phone": demo(include=["write_note"], prefix="phone_", mode="mock")}
    row = {k: v for k, v in ROW.items() if k != "expected_state"}
    path = suite(tmp_path, server, row, mcp_servers={}, user_mcp_servers=mock, graders={"loops": {"kind": "no_loops"}})
    code, _, said = run(tmp_path, path)
    assert code == 2 and ("user_mcp_servers.phone (mode: mock): tool 'phone_write_note' has no entry in "
                          "user_tools: to give its results") in said, said
    server.script = both()
    data = yaml.safe_load(path.read_text())
    data["user_tools"] = {"phone_write_note": {"description": "mocked", "returns": "noted"}}
    data["tools"] = {"desk_read_note": {"description": "Read a note", "parameters": {"name": "file"},
                                        "returns": "airplane=on"}}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    listed = run_cli("list", "tools", str(path)).stdout  # each actor's tools, and where they come from
    assert "1 tool(s) the agent will see:\n  desk_read_note  tools: (mocked)" in listed, listed
    assert ("1 tool(s) the simulated user will see (user_tools, user_mcp_servers):\n  phone_write_note  "
            "user_mcp_servers.phone (mock: schema from the server, results from user_tools:)") in listed, listed
    code, [line], said = run(tmp_path, path, out="mocked")
    write = user_calls(line)[0]
    assert write["result"] == "noted", said
    sim = next(r["body"] for r in server.requests if is_simulator(r["body"]))
    [offered] = sim["tools"]
    assert offered["function"]["description"] == "Write a note into the working folder."  # the server's schema
    assert offered["function"]["parameters"]["required"] == ["name", "text"]


def test_validate_takes_a_file_only_the_users_server_can_write_as_possible(tmp_path: Path,
                                                                          server: ScriptedServer) -> None:
    """`evals validate` starts no server: a live user server with {workspace} may write any file there, so a row
    expecting a file neither the environment nor an agent tool makes is no problem (as for the agent's)."""
    row = {**ROW, "expected_state": {"files": {"made_by_user.txt": {"exact": "hi"}}}}
    path = suite(tmp_path, server, row, mcp_servers={})
    result = run_cli("validate", str(path))
    assert result.returncode == 0 and "ok: 1 samples" in result.stdout, result.stdout + result.stderr
    alone = suite(tmp_path, server, row, mcp_servers={}, user_mcp_servers={})  # nobody can write it
    result = run_cli("validate", str(alone))
    assert result.returncode == 2 and "made_by_user.txt: not in the environment" in result.stdout + result.stderr
