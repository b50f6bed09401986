"""MCP servers as a tool source, end to end: `evals run` against the scripted model server (the real openai
client) with real MCP servers started by evals-cli: the SDK-written demo server (tests/mcp_servers) over stdio,
and the reference mcp-server-time from PyPI. The agent sees the servers' tools as listed, its calls reach them,
workspaces hold real files, recordings replay with no server, and a broken server stops the run naming it."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers import ROOT, calls_of, read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, call, text

DEMO = str(ROOT / "tests" / "mcp_servers" / "demo_server.py")


def demo(*args: str, **settings: Any) -> dict[str, Any]:
    """A stdio server entry running the demo server with this interpreter."""
    return {"command": sys.executable, "args": [DEMO, *args], **settings}


def mcp_suite(tmp: Path, server: ScriptedServer, rows: list[dict[str, Any]], servers: dict[str, Any],
              **overrides: Any) -> Path:
    overrides.setdefault("tools", {})
    overrides.setdefault("graders", {"answer": {"kind": "tool", "function": "contains"}})
    return write_suite(tmp, rows, base_url=server.url, mcp_servers=servers,
                       gate={"kind": "weighted_average", "aggregation": "avg_score", "op": "gte", "value": 1.0},
                       **overrides)


def run(tmp: Path, suite: Path, *extra: str, out: str = "out") -> tuple[int, list[dict[str, Any]], str]:
    folder = tmp / out
    result = run_cli("run", str(suite), "-o", str(folder), *extra)
    assert "Traceback" not in result.stderr, result.stderr
    lines = read_jsonl(folder / "results.jsonl") if (folder / "results.jsonl").exists() else []
    return result.returncode, lines, result.stdout + result.stderr


@pytest.mark.slow
def test_live_stdio_server_offers_its_tools_as_listed_and_answers_the_calls(tmp_path: Path,
                                                                          server: ScriptedServer) -> None:
    server.script = agent_script({"echo": [call("demo_echo", {"text": "hi"}), call("demo_fail", {"reason": "no way"}),
                                           text("the server said echo: hi")]})
    suite = mcp_suite(tmp_path, server, [{"id": "e", "input": "echo please", "ground_truth": "echo: hi"}],
                      {"demo": demo(include=["echo", "fail"], prefix="demo_")})
    code, [line], said = run(tmp_path, suite)
    assert code == 0, said
    offered = {t["function"]["name"]: t["function"] for t in server.agent_requests()[0]["body"]["tools"]}
    assert {n for n in offered if "echo" in n or "fail" in n or "add" in n} == {"demo_echo", "demo_fail"}
    assert offered["demo_echo"]["description"] == "Echo the text back."
    assert offered["demo_echo"]["parameters"]["properties"]["text"]["type"] == "string"
    assert offered["demo_echo"]["parameters"]["required"] == ["text"]
    echo, fail = calls_of(line)
    assert (echo["result"], echo["is_error"]) == ("echo: hi", False)
    assert fail["is_error"] is True and "no way" in fail["result"]  # isError: a tool error the agent sees
    # the agent's next request carried the server's answer
    sent = [m for m in server.agent_requests()[1]["body"]["messages"] if m["role"] == "tool"]
    assert sent[0]["content"] == "echo: hi"


# --- a workspace per episode --------------------------------------------------------------------------------

@pytest.mark.slow
def test_a_workspace_server_gets_a_fresh_folder_and_process_per_episode_graded_by_final_state(
        tmp_path: Path, server: ScriptedServer) -> None:
    server.script = agent_script({"note": [call("read_note", {"name": "seed.txt"}),
                                           call("write_note", {"name": "todo.txt", "text": "buy milk"}),
                                           call("whoami", {}), text("done")]})
    suite = mcp_suite(tmp_path, server, [{"id": "n", "input": "note it", "expected_state": {
        "files": {"todo.txt": {"exact": "buy milk"}}, "unchanged": ["seed.txt"], "no_other_changes": True}}],
        {"files": demo("--root", "{workspace}")}, environment={"files": {"seed.txt": "seeded"}}, repeats=2,
        graders={"state": {"kind": "final_state"}})
    code, lines, said = run(tmp_path, suite)
    assert code == 0, said
    assert len(lines) == 2 and all(line["grades"]["state"]["score"] == 1.0 for line in lines)
    seen = []
    for line in lines:
        read, _, who = calls_of(line)
        assert read["result"] == "seeded"  # environment.files filled the folder before the first turn
        assert [c["target"] for c in line["trajectory"]["state_changes"]] == ["todo.txt"]
        seen.append(who["result"].split(" ", 1))
    (pid_a, dir_a), (pid_b, dir_b) = seen
    assert pid_a != pid_b and dir_a != dir_b  # one process and one folder per (sample, repeat)
    assert not Path(dir_a).exists() and not Path(dir_b).exists()  # removed once read back


# --- record and replay ----------------------------------------------------------------------------------------

@pytest.mark.slow
def test_a_recording_replays_with_no_server_and_a_miss_names_sample_server_and_call(
        tmp_path: Path, server: ScriptedServer) -> None:
    server.script = agent_script({"add": [call("add", {"a": 2, "b": 3}), text("it is 5")]})
    rows = [{"id": "sum", "input": "add 2 and 3", "ground_truth": "5"}]
    token = "Bearer sk-mcp-secret-0123456789"
    suite = mcp_suite(tmp_path, server, rows, {"demo": demo(include=["add"], env={"API_TOKEN": token})})
    recording = tmp_path / "rec.jsonl"
    code, [live], said = run(tmp_path, suite, "--record", str(recording))
    assert code == 0, said
    text_of = recording.read_text()
    assert '"kind": "mcp"' in text_of and "sk-mcp-secret" not in text_of  # masked as for model calls
    # replay: the server's command no longer exists, so nothing can have been started
    offline = mcp_suite(tmp_path, server, rows, {"demo": {"command": "no-such-mcp-server", "include": ["add"],
                                                          "env": {"API_TOKEN": token}}})
    server.requests.clear()
    code, [replayed], said = run(tmp_path, offline, "--replay", str(recording), out="replayed")
    assert code == 0, said
    assert not server.requests  # the model too came from the recording
    assert calls_of(replayed)[0]["result"] == calls_of(live)[0]["result"] == "5"
    # a call the recording does not hold: the sample errors, naming the sample, the server and the call
    server.script = agent_script({"add": [call("add", {"a": 2, "b": 4}), text("it is 6")]})
    rows[0]["input"] = "add 2 and 3"
    lines = recording.read_text().splitlines()
    changed = [line.replace('\\"b\\": 3', '\\"b\\": 4') if '"chat/completions"' in line else line for line in lines]
    recording.write_text("\n".join(changed) + "\n")
    code, [missed], said = run(tmp_path, offline, "--replay", str(recording), out="missed")
    assert missed["error"]["category"] == "replay"
    assert all(word in missed["error"]["message"] for word in ("sample sum", "'demo'", "call add(", '"b": 4'))


# --- bad input: the suite's fault is exit 2, the server's at run time exit 3 ------------------------------------

def test_a_command_that_cannot_start_is_exit_2_naming_the_server(tmp_path: Path, server: ScriptedServer) -> None:
    suite = mcp_suite(tmp_path, server, [{"id": "a", "input": "x", "ground_truth": "x"}],
                      {"ghost": {"command": "no-such-mcp-server-here", "args": ["--x"]}})
    code, lines, said = run(tmp_path, suite)
    assert code == 2 and not lines
    assert "mcp_servers.ghost" in said and "cannot start" in said and "no-such-mcp-server-here" in said


def test_the_spec_shape_is_checked_at_its_line(tmp_path: Path, server: ScriptedServer) -> None:
    suite = mcp_suite(tmp_path, server, [{"id": "a", "input": "x", "ground_truth": "x"}],
                      {"both": {"command": "x", "url": "http://127.0.0.1:1/mcp"}, "bad name": {"command": "x"}})
    result = run_cli("validate", str(suite))
    assert result.returncode == 2
    assert "mcp_servers.both" in result.stdout + result.stderr and "not both" in result.stdout + result.stderr
    # the suite's fault (exit 2, naming the field), not a server failing at run time (exit 3; found in review)
    other = mcp_suite(tmp_path, server, [{"id": "a", "input": "x", "ground_truth": "x"}],
                      {"files": {"url": "file:///etc/passwd"}})
    refused = run_cli("run", str(other), "-o", str(tmp_path / "out"))
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "mcp_servers.files" in refused.stderr and "http:// or https://" in refused.stderr


@pytest.mark.slow
def test_suite_faults_found_by_listing_are_exit_2_naming_server_and_tool(tmp_path: Path,
                                                                         server: ScriptedServer) -> None:
    rows = [{"id": "a", "input": "x", "ground_truth": "x"}]
    suite = mcp_suite(tmp_path, server, rows, {"demo": demo("--bad-schema", include=["echo", "nope", "broken"])},
                      tools={"echo": {"description": "mine", "returns": "x"}})
    code, lines, said = run(tmp_path, suite)
    assert code == 2 and not lines
    assert "mcp_servers.demo.include: the server lists no tool 'nope'" in said
    assert "mcp_servers.demo: tool 'broken'" in said and "exclude: [broken]" in said
    assert "tools.echo: also served live by mcp_servers.demo" in said  # both named
    failing = mcp_suite(tmp_path, server, rows, {"demo": demo("--fail-start")})
    code, lines, said = run(tmp_path, failing, out="out2")
    assert code == 2 and "mcp_servers.demo" in said and "refusing to start" in said  # its stderr, quoted


@pytest.mark.slow
def test_a_server_that_crashes_or_hangs_mid_run_stops_the_run_exit_3_keeping_finished_samples(
        tmp_path: Path, server: ScriptedServer) -> None:
    server.script = agent_script({"first": [call("echo", {"text": "a"}), text("echo: a")],
                                  "second": [call("crash", {}), text("?")]})
    rows = [{"id": "first", "input": "first", "ground_truth": "echo: a"},
            {"id": "second", "input": "second", "ground_truth": "x"},
            {"id": "third", "input": "first again", "ground_truth": "echo: a"}]
    suite = mcp_suite(tmp_path, server, rows, {"demo": demo()}, concurrency=1)
    code, lines, said = run(tmp_path, suite)
    assert code == 3, said
    assert [line["sample_id"] for line in lines] == ["first", "second"], lines[1]
    assert lines[0]["passed"] is True and lines[0]["error"] is None  # kept
    assert lines[1]["error"]["category"] == "tool_server" and "MCP server 'demo'" in lines[1]["error"]["message"]
    assert lines[1]["passed"] is not True  # an error, never scored
    server.script = agent_script({"first": [call("hang", {"seconds": 30}), text("?")]})
    hung = mcp_suite(tmp_path, server, rows[:1], {"demo": demo(timeout=3)})
    code, [line], said = run(tmp_path, hung, out="hung")
    assert code == 3 and "within timeout 3s" in line["error"]["message"]


@pytest.mark.slow
def test_a_huge_result_is_capped_like_any_tool_result(tmp_path: Path, server: ScriptedServer,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALS_MAX_FIELD_CHARS", "1000")
    server.script = agent_script({"big": [call("big", {"size": 200_000}), text("x")]})
    suite = mcp_suite(tmp_path, server, [{"id": "b", "input": "big", "ground_truth": "x"}], {"demo": demo()})
    code, [line], said = run(tmp_path, suite)
    result = calls_of(line)[0]["result"]
    assert len(result) < 1200 and "truncated by evals: 200000 characters" in result


# --- mock mode, the reference server, list tools, --target -------------------------------------------------------

@pytest.mark.slow
def test_mock_mode_takes_the_reference_servers_schemas_and_the_suites_results(tmp_path: Path,
                                                                              server: ScriptedServer) -> None:
    server.script = agent_script({"time": [call("get_current_time", {"timezone": "UTC"}), text("noon")]})
    time_server = {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}
    suite = mcp_suite(tmp_path, server, [{"id": "t", "input": "what time", "ground_truth": "noon"}],
                      {"time": {**time_server, "mode": "mock", "include": ["get_current_time"]}},
                      tools={"get_current_time": {"returns": "12:00 UTC"}})
    code, [line], said = run(tmp_path, suite)
    assert code == 0, said
    offered = {t["function"]["name"]: t["function"] for t in server.agent_requests()[0]["body"]["tools"]}
    assert "timezone" in offered["get_current_time"]["parameters"]["properties"]  # the server's schema
    assert "convert_time" not in offered
    assert calls_of(line)[0]["result"] == "12:00 UTC"  # the suite's return, not the server's
    listed = run_cli("list", "tools", str(suite))
    assert listed.returncode == 0, listed.stderr
    assert "get_current_time" in listed.stdout and "mcp_servers.time (mock" in listed.stdout
    assert "read_file" in listed.stdout and "tools: (mocked)" in listed.stdout


@pytest.mark.slow
def test_the_reference_time_server_live_from_a_target_file(tmp_path: Path, server: ScriptedServer) -> None:
    server.script = agent_script({"time": [call("get_current_time", {"timezone": "Europe/Paris"}), text("ok")]})
    suite = mcp_suite(tmp_path, server, [{"id": "t", "input": "what time", "ground_truth": "ok"}], {})
    target = tmp_path / "target.yaml"
    target.write_text(json.dumps({"target": {"kind": "openai_chat", "base_url": server.url, "model": "scripted",
                                             "api_key": "sk-test", "max_retries": 0},
                                  "mcp_servers": {"time": {"command": sys.executable,
                                                           "args": ["-m", "mcp_server_time"]}}}))
    code, [line], said = run(tmp_path, suite, "--target", str(target))
    assert code == 0, said
    answer = json.loads(calls_of(line)[0]["result"])
    assert answer["timezone"] == "Europe/Paris" and "datetime" in answer


# --- no orphans ----------------------------------------------------------------------------------------------------

def _processes_with(marker: str) -> list[int]:
    """Process ids whose command line holds `marker`, from the process table (/proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process table from /proc")
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_a_signal_mid_call_stops_every_server_it_started(tmp_path: Path, server: ScriptedServer, sig: str) -> None:
    import signal
    import time
    import uuid

    from tests.helpers import start_run

    marker = f"evals-orphan-check-{uuid.uuid4().hex[:8]}"
    server.script = agent_script({"wait": [call("slow_hang", {"seconds": 60}), text("done")]})
    suite = mcp_suite(tmp_path, server, [{"id": f"w{i}", "input": "wait", "ground_truth": "done"} for i in range(3)],
                      {"shared": demo("--marker", marker, include=["echo"]),
                       "slow": demo("--root", "{workspace}", "--marker", marker, include=["hang"], prefix="slow_",
                                    timeout=90)},
                      environment={"files": {"a.txt": "a"}}, concurrency=1)
    process = start_run(suite, tmp_path / "out")
    try:
        deadline = time.monotonic() + 60
        # the run is going (the model was asked) and the shared server and the episode's are both up
        while (not server.requests or len(_processes_with(marker)) < 2) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(_processes_with(marker)) >= 2, "the servers never started"
        time.sleep(0.5)  # the agent's call is now waiting on the hanging server
        process.send_signal(getattr(signal, sig))
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, process.stderr.read() if process.stderr else ""
    deadline = time.monotonic() + 10
    while _processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _processes_with(marker) == []  # no orphan: both servers are gone


# --- streamable HTTP ------------------------------------------------------------------------------------------------

@pytest.fixture
def http_server() -> Any:
    """The demo server on streamable HTTP at 127.0.0.1 (a free port), stopped after the test."""
    import socket
    import subprocess
    import time

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, DEMO, "--http", str(port)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.mark.slow
def test_a_streamable_http_server_with_a_secret_header(tmp_path: Path, server: ScriptedServer, http_server: str) -> None:
    server.script = agent_script({"add": [call("add", {"a": 20, "b": 22}), text("42")]})
    secret = "Bearer tok-0123456789-http-secret"
    suite = mcp_suite(tmp_path, server, [{"id": "h", "input": "add", "ground_truth": "42"}],
                      {"remote": {"url": http_server, "headers": {"Authorization": secret}, "include": ["add"]}})
    recording = tmp_path / "rec.jsonl"
    code, [line], said = run(tmp_path, suite, "--record", str(recording))
    assert code == 0, said
    assert calls_of(line)[0]["result"] == "42"
    assert "tok-0123456789" not in recording.read_text() + json.dumps(line)


def test_a_hand_written_recording_replays_offline_and_lists_the_tools(tmp_path: Path, server: ScriptedServer) -> None:
    """No server at all: the tool list and the call come from the recording (what CI does with a shipped one)."""
    from evals_cli.mcp.recording import mcp_key

    server.script = agent_script({"hi": [call("echo", {"text": "hi"}), text("echo: hi")]})
    listing = [{"name": "echo", "description": "Echo it.", "inputSchema": {
        "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}]
    request = {"tool": "echo", "arguments": {"text": "hi"}}
    lines = [{"kind": "mcp", "key": mcp_key("demo", "tools/list", {}), "server": "demo", "op": "tools/list",
              "request": {}, "result": listing},
             {"kind": "mcp", "key": mcp_key("demo", "tools/call", request), "server": "demo", "op": "tools/call",
              "request": request, "result": {"text": "echo: hi (recorded)", "is_error": False}}]
    recording = tmp_path / "rec.jsonl"
    recording.write_text("".join(json.dumps(x) + "\n" for x in lines))
    suite = mcp_suite(tmp_path, server, [{"id": "r", "input": "hi", "ground_truth": "echo: hi"}],
                      {"demo": {"command": "no-such-server-anywhere"}})
    listed = run_cli("list", "tools", str(suite), "--replay", str(recording))
    assert listed.returncode == 0, listed.stderr
    assert "echo" in listed.stdout and "mcp_servers.demo (live, its tool 'echo')" in listed.stdout
    from evals_cli.mcp.hub import McpHub
    from evals_cli.mcp.spec import McpServerSpec
    from evals_cli.models.tools import ToolSpec

    hub = McpHub({"demo": McpServerSpec(command="no-such-server-anywhere")}, {}, base_dir=tmp_path, replay=recording)
    try:
        echo = hub.tools()["echo"]
        assert (echo.description, echo.json_schema()) == ("Echo it.", listing[0]["inputSchema"])
        session = hub.session("r", 0)
        assert asyncio.run(session.call(echo, {"text": "hi"})) == ("echo: hi (recorded)", False)
        with pytest.raises(Exception, match=r"server 'demo': no recorded call echo\(\{\"text\": \"bye\"\}\)"):
            asyncio.run(session.call(echo, {"text": "bye"}))
        assert isinstance(hub.tools().get("echo"), ToolSpec)
    finally:
        hub.close()


def test_the_shipped_mcp_suite_replays_offline_with_no_server(tmp_path: Path) -> None:
    """make eval-mcp: the real model's recording, the server's tool list and answers included; with no program
    on PATH, a server started by mistake could not run (exit 2), so exit 1 says everything came from the file."""
    out = tmp_path / "out"
    result = run_cli("run", "suites/mcp_time.yaml", "--replay", "suites/mcp_time.recording.jsonl", "-o", str(out),
                     env={"PATH": str(tmp_path)})
    assert result.returncode == 1, result.stdout + result.stderr  # the gate fails, as the README says
    lines = {line["sample_id"]: line for line in read_jsonl(out / "results.jsonl")}
    assert [c["name"] for c in calls_of(lines["tokyo-now"])] == ["get_current_time"]
    assert '"timezone": "Asia/Tokyo"' in calls_of(lines["tokyo-now"])[0]["result"]
    assert lines["tokyo-now"]["grades"]["time_as_told"]["score"] == 0.0  # "4:02 PM" for 04:02
    assert lines["utc-now"]["passed"] is True and lines["new-york-to-london"]["passed"] is False


def test_list_tools_needs_a_suite() -> None:
    result = run_cli("list", "tools")
    assert result.returncode == 2 and "evals list tools SUITE" in result.stdout + result.stderr


@pytest.mark.slow
def test_a_python_agent_calls_live_mcp_tools_through_the_same_toolbox(tmp_path: Path, server: ScriptedServer) -> None:
    (tmp_path / "agent.py").write_text(
        "def run_agent(sample, tools):\n"
        "    said = tools.call('echo', {'text': sample.input})\n"
        "    return said + ' / ' + ', '.join(sorted(n for n in tools.names if n in ('echo', 'add')))\n")
    suite = mcp_suite(tmp_path, server, [{"id": "p", "input": "hello", "ground_truth": "echo: hello / add, echo"}],
                      {"demo": demo(include=["echo", "add"])})
    written = yaml.safe_load(suite.read_text())
    written["target"] = {"kind": "python", "callable": "agent.py:run_agent", "max_steps": 5}
    suite.write_text(yaml.safe_dump(written))
    code, [line], said = run(tmp_path, suite)
    assert code == 0, said
    assert calls_of(line)[0]["result"] == "echo: hello"


@pytest.mark.slow
def test_a_python_agent_that_catches_a_server_crash_still_stops_the_run_exit_3(tmp_path: Path,
                                                                               server: ScriptedServer) -> None:
    """Agent frameworks catch tool exceptions: a server that crashed under a python agent is still the fatal
    tool_server error (exit 3), never an answer graded as if nothing happened, nor the agent's own error."""
    (tmp_path / "agent.py").write_text(
        "def catches(sample, tools):\n"
        "    try:\n"
        "        said = tools.call('crash', {})\n"
        "    except Exception as exc:\n"
        "        said = str(exc)\n"
        "    return 'The answer is 42. ' + said\n"
        "def lets_it_out(sample, tools):\n"
        "    return tools.call('crash', {})\n")
    for name in ("catches", "lets_it_out"):
        suite = mcp_suite(tmp_path, server, [{"id": name, "input": "x", "ground_truth": "42"}], {"demo": demo()},
                          graders={"answer": {"kind": "match", "function": "contains"}})
        written = yaml.safe_load(suite.read_text())
        written["target"] = {"kind": "python", "callable": f"agent.py:{name}"}
        suite.write_text(yaml.safe_dump(written))
        code, [line], said = run(tmp_path, suite, out=name)
        assert code == 3, (name, said)
        assert line["error"]["category"] == "tool_server" and "MCP server 'demo'" in line["error"]["message"]
        assert line["passed"] is not True


@pytest.mark.slow
def test_a_url_server_that_does_not_answer_is_exit_3_naming_it(tmp_path: Path, server: ScriptedServer) -> None:
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    suite = mcp_suite(tmp_path, server, [{"id": "a", "input": "x", "ground_truth": "x"}],
                      {"remote": {"url": f"http://127.0.0.1:{port}/mcp", "timeout": 1}})
    code, lines, said = run(tmp_path, suite)
    assert code == 3 and not lines
    assert f"mcp_servers.remote: cannot connect to http://127.0.0.1:{port}/mcp" in said
    assert "Traceback" not in said and "never retrieved" not in said
