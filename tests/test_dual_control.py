"""Dual control (issue 34): a simulated user with tools of its own (`user_tools`) acts on the episode's world
while the agent guides it. The shipped suites/telecom.yaml runs against the loopback ScriptedServer, which plays
the agent and the customer (tests/telecom_script.py) through the real openai client; the customer's calls come
from the simulator's replies and are run by the Episode over the same world as the agent's."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import yaml

from evals_cli.environment.world import World
from evals_cli.graders.base import GradeContext, GraderContext
from evals_cli.graders.kinds.no_loops import NoLoopsGrader, NoLoopsSpec
from evals_cli.graders.kinds.trajectory import (
    ForbiddenToolsGrader,
    ForbiddenToolsSpec,
    ToolOrderGrader,
    ToolOrderSpec,
)
from evals_cli.models.environment import EnvironmentSpec
from evals_cli.models.sample import Sample
from evals_cli.models.tools import ToolSpec
from evals_cli.models.trajectory import Step, ToolCall, Trajectory, Turn
from evals_cli.tools.gold import GoldActionError, gold_world
from tests.helpers import read_jsonl, run_cli
from tests.scripted_server import Reply, ScriptedServer, is_simulator
from tests.telecom_script import both

ROOT = Path(__file__).resolve().parent.parent
USER_TOOLS = {"check_status", "toggle_airplane_mode", "reseat_sim", "toggle_data_roaming"}
AGENT_TOOLS = {"get_line", "check_network", "enable_roaming_plan"}


def _copy_suite(tmp: Path, edit: Any = None) -> Path:
    """suites/telecom.yaml with its tools and dataset in `tmp` (same layout), optionally edited."""
    (tmp / "suites").mkdir()
    (tmp / "datasets").mkdir()
    shutil.copy(ROOT / "suites" / "telecom_tools.py", tmp / "suites")
    shutil.copy(ROOT / "suites" / "recorded_user_prompt.j2", tmp / "suites")  # the suite's user_simulator prompt
    shutil.copy(ROOT / "datasets" / "telecom.jsonl", tmp / "datasets")
    data = yaml.safe_load((ROOT / "suites" / "telecom.yaml").read_text())
    if edit is not None:
        edit(data)
    suite = tmp / "suites" / "telecom.yaml"
    suite.write_text(yaml.safe_dump(data, sort_keys=False))
    return suite


def _run(suite: Path, out: Path, server: ScriptedServer, *extra: str) -> tuple[int, dict[str, Any], str]:
    result = run_cli("run", str(suite), "-o", str(out), "-q", *extra, env={"EVAL_AGENT_BASE_URL": server.url})
    lines = {(r["sample_id"], r["repeat"]): r for r in read_jsonl(out / "results.jsonl")}
    return result.returncode, lines, result.stdout + result.stderr


def _user_calls(result: dict[str, Any]) -> list[str]:
    return [call["name"] for turn in result["trajectory"]["turns"] for step in turn.get("user_steps", [])
            for call in step["tool_calls"]]


def test_the_user_acts_with_its_own_tools_and_the_world_is_graded_whoever_acted(tmp_path: Path,
                                                                                 server: ScriptedServer) -> None:
    server.script = both
    code, lines, output = _run(ROOT / "suites" / "telecom.yaml", tmp_path / "out", server, "-r", "2")
    home = lines[("no-signal-home", 0)]
    # the customer's calls are in the trajectory, marked as the user's; the agent's steps are unmarked (agent)
    assert _user_calls(home) == ["toggle_airplane_mode", "reseat_sim"]
    user_steps = [s for t in home["trajectory"]["turns"] for s in t.get("user_steps", [])]
    assert user_steps and all(s["actor"] == "user" for s in user_steps)
    assert all("actor" not in s for t in home["trajectory"]["turns"] for s in t["steps"])
    assert {c["name"] for t in home["trajectory"]["turns"] for s in t["steps"] for c in s["tool_calls"]} \
        <= AGENT_TOOLS
    # the phone was changed by the user, the line by the agent: the diff says who
    abroad = lines[("no-data-abroad", 0)]
    actors = {c["target"]: c.get("actor", "agent") for c in abroad["trajectory"]["state_changes"]}
    assert actors == {"phone/device": "user", "lines/555-0142": "agent"}
    phone = next(c for c in abroad["trajectory"]["state_changes"] if c["target"] == "phone/device")
    assert phone["after"] == {"id": "device", "airplane_mode": False, "sim_seated": True, "data_roaming": True}
    # final_state: the gold calls (the user's with requestor: user) give the world both actors left
    assert abroad["grades"]["final_state"]["score"] == 1.0 and home["grades"]["final_state"]["score"] == 1.0
    flaky = lines[("no-data-abroad", 1)]  # the customer gave up before turning data roaming on
    assert flaky["grades"]["final_state"]["score"] == 0.0 and flaky["passed"] is False
    assert "phone/device: data_roaming is false, expected true" in flaky["grades"]["final_state"]["rationale"]
    # the simulator was offered the user's tools (and only those), the agent only its own
    sim = [r["body"] for r in server.requests if is_simulator(r["body"])]
    agent = [r["body"] for r in server.requests if not is_simulator(r["body"])]
    assert all({t["function"]["name"] for t in body["tools"]} == USER_TOOLS for body in sim)
    assert all({t["function"]["name"] for t in body["tools"]} == AGENT_TOOLS for body in agent)
    # a user tool's result went back to the simulator as a tool message, before it wrote to the agent
    assert any(m["role"] == "tool" and m["content"] == "Airplane mode is now OFF" for b in sim for m in b["messages"])
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["reliability"] == {"repeats": 2, "samples": 2, "pass_at_k": 1.0, "pass_hat_k": 0.5,
                                      "mean_pass_rate": 0.75}
    assert code == 1, output
    # the report and the HTML page say who changed the phone
    report = run_cli("report", str(tmp_path / "out"), "--html", str(tmp_path / "report.html"))
    assert "what the agent and the user changed in 4 sample runs" in report.stdout
    assert "record phone/device changed (by the user)" in report.stdout
    assert "record lines/555-0142 changed\n" in report.stdout
    assert "by the user</span>" in (tmp_path / "report.html").read_text()


def test_the_shipped_telecom_recording_replays_offline(tmp_path: Path) -> None:
    """make eval-telecom: the real small model's dual-control conversations replayed (no server), with its
    verdicts: every finished conversation fails final_state, the customer that answered as the assistant twice
    is the simulator's error (never the agent's fail), pass^2 reported."""
    out = tmp_path / "out"
    result = run_cli("run", "suites/telecom.yaml", "-r", "2", "--replay", "suites/telecom.recording.jsonl",
                     "--max-error-rate", "0.5", "-o", str(out))
    said = result.stdout + result.stderr
    assert result.returncode == 1, said
    lines = {(r["sample_id"], r["repeat"]): r for r in read_jsonl(out / "results.jsonl")}
    assert {k: v["passed"] for k, v in lines.items() if v["error"] is None} == {
        ("no-data-abroad", 0): False, ("no-signal-home", 0): False, ("no-signal-home", 1): False}
    broken = lines[("no-data-abroad", 1)]
    assert broken["error"]["category"] == "user_simulator" and "written as the assistant" in broken["error"]["message"]
    assert all(r["grades"]["final_state"]["score"] == 0.0 for r in lines.values() if r["error"] is None)
    assert lines[("no-data-abroad", 0)]["grades"]["agent_loops"]["score"] == 0.0
    assert all(_user_calls(r) == [] for r in lines.values() if r["error"] is None)  # it never used its tools
    assert "pass@2 0.00, pass^2 0.00" in said


def test_replay_user_runs_the_recorded_users_calls_again(tmp_path: Path, server: ScriptedServer) -> None:
    """--replay-user: the recorded customer's messages and its tool calls, made again on the new world, with no
    simulator call; the world ends as it did."""
    server.script = both
    _run(ROOT / "suites" / "telecom.yaml", tmp_path / "first", server)

    def agent_only(path: str, body: dict[str, Any]) -> Any:
        if is_simulator(body):
            return Reply({"error": {"message": "the simulator must not be asked"}}, status=400)
        return both(path, body)

    server.script = agent_only
    server.requests.clear()
    code, lines, output = _run(ROOT / "suites" / "telecom.yaml", tmp_path / "again", server,
                               "--replay-user", str(tmp_path / "first"))
    home = lines[("no-signal-home", 0)]
    first = read_jsonl(tmp_path / "first" / "results.jsonl")
    recorded = next(r for r in first if r["sample_id"] == "no-signal-home")["trajectory"]["turns"]
    assert [t["user_source"] for t in home["trajectory"]["turns"]] == ["replayed"] * len(recorded)
    assert [t["user"] for t in home["trajectory"]["turns"]] == [t["user"] for t in recorded]
    assert _user_calls(home) == ["toggle_airplane_mode", "reseat_sim"]
    assert home["grades"]["final_state"]["score"] == 1.0 and home["error"] is None
    assert not any(is_simulator(r["body"]) for r in server.requests)
    assert code == 0, output


def test_a_user_tool_named_like_an_agent_tool_is_refused(tmp_path: Path) -> None:
    def collide(data: dict[str, Any]) -> None:
        data["user_tools"]["check_network"] = data["user_tools"].pop("check_status")

    suite = _copy_suite(tmp_path, collide)
    result = run_cli("validate", str(suite))
    assert result.returncode == 2
    message = result.stdout + result.stderr
    assert "user_tools.check_network has the name of the agent's tool tools.check_network" in message
    assert "telecom.yaml:" in message and "Traceback" not in message


def test_a_user_tool_that_crashes_is_the_users_error_never_the_agents(tmp_path: Path,
                                                                       server: ScriptedServer) -> None:
    def broken(data: dict[str, Any]) -> None:
        data["user_tools"]["reseat_sim"]["python"] = "telecom_tools.py:breaks"

    suite = _copy_suite(tmp_path, broken)
    with (tmp_path / "suites" / "telecom_tools.py").open("a") as tools:
        tools.write("\n\ndef breaks(arguments, world):\n    raise RuntimeError('the SIM tray is stuck')\n")
    server.script = both
    code, lines, output = _run(suite, tmp_path / "out", server)
    home = lines[("no-signal-home", 0)]
    assert home["error"]["category"] == "user_simulator"
    assert "the user's tool reseat_sim failed" in home["error"]["message"]
    assert home["passed"] is None and home["score"] is None  # an error, never a zero
    assert home["trajectory"]["end_reason"] == "user_error"
    # what the user did before the crash is kept: airplane mode went off, by the user
    assert _user_calls(home) == ["toggle_airplane_mode"]
    assert [c.get("actor") for c in home["trajectory"]["state_changes"]] == ["user"]
    assert code == 3 and "2/2 samples errored" in output, output  # errors, not a failed gate


def _trajectory() -> Trajectory:
    def step(actor: str, *names: str) -> Step:
        return Step(actor=actor, tool_calls=[ToolCall(name=n, raw_arguments="{}", arguments={}) for n in names])

    return Trajectory(turns=[
        Turn(user="hi", steps=[step("agent", "get_line")]),
        Turn(user="done", user_steps=[step("user", "toggle_airplane_mode"), step("user", "toggle_airplane_mode")],
             steps=[step("agent", "check_network")])],
        closing_user_steps=[step("user", "toggle_airplane_mode")])


def _grade(kind: Any, spec: Any, sample: Sample) -> Any:
    trajectory = _trajectory()
    grader = kind("g", spec, GraderContext(Path(".")))
    return asyncio.run(grader.grade(GradeContext(sample, trajectory, trajectory, None, None)))


def test_trajectory_graders_read_the_agents_calls_unless_told_the_user_or_any() -> None:
    sample = Sample(id="s", input="x", forbidden_tools=["toggle_*"], expected_tool_order=["get_line", "check_network"])
    forbidden = ForbiddenToolsSpec(kind="forbidden_tools")
    assert _grade(ForbiddenToolsGrader, forbidden, sample).score == 1.0
    by_user = _grade(ForbiddenToolsGrader, forbidden.model_copy(update={"actor": "user"}), sample)
    assert by_user.score == 0.0 and "toggle_airplane_mode ×3" in by_user.rationale
    order = ToolOrderSpec(kind="tool_order", mode="strict")
    assert _grade(ToolOrderGrader, order, sample).score == 1.0
    anyone = _grade(ToolOrderGrader, order.model_copy(update={"actor": "any"}), sample)
    assert anyone.score == 0.0
    assert anyone.metadata["called"] == ["get_line", "toggle_airplane_mode", "toggle_airplane_mode",
                                         "check_network", "toggle_airplane_mode"]
    loops = NoLoopsSpec(kind="no_loops")
    assert _grade(NoLoopsGrader, loops, sample).score == 1.0
    assert _grade(NoLoopsGrader, loops.model_copy(update={"actor": "user"}), sample).score == 0.0


def test_an_old_results_line_loads_and_an_agent_only_line_keeps_its_shape() -> None:
    old = {"turns": [{"user": "hi", "steps": [{"content": "hello", "tool_calls": []}]}]}
    trajectory = Trajectory.model_validate(old)
    assert trajectory.turns[0].steps[0].actor == "agent" and trajectory.calls_by("user") == []
    dumped = trajectory.model_dump(mode="json")
    assert "closing_user_steps" not in dumped and "user_steps" not in dumped["turns"][0]
    assert "actor" not in dumped["turns"][0]["steps"][0]


def test_gold_actions_with_requestor_user_are_applied_by_the_users_tools() -> None:
    from evals_cli.tools.logic import load_tool_function

    def tool(name: str) -> ToolSpec:
        spec = ToolSpec(description=name, python=f"telecom_tools.py:{name}")
        spec._logic = load_tool_function(spec.python or "", ROOT / "suites")
        return spec

    world = World(EnvironmentSpec(records={"phone": [{"id": "device", "airplane_mode": True, "sim_seated": False,
                                                      "data_roaming": False}]}))
    user = {"toggle_airplane_mode": tool("toggle_airplane_mode")}
    row = Sample(id="s", input="x", expected_actions=[{"tool": "toggle_airplane_mode", "requestor": "user"}])
    done = asyncio.run(gold_world(row, {}, world, user))
    assert done.records["phone"]["device"]["airplane_mode"] is False
    try:  # the same action as the agent's: the agent has no such tool, and the row is wrong
        asyncio.run(gold_world(row.model_copy(update={"expected_actions": [
            row.expected_actions[0].model_copy(update={"requestor": "agent"})]}), {}, world, user))
    except GoldActionError as exc:
        assert "no such tool in the suite's tools (requestor: agent)" in str(exc)
    else:
        raise AssertionError("an agent action with a user tool was applied")


def test_a_user_tool_that_answers_nothing_is_refused(tmp_path: Path) -> None:
    def silent(data: dict[str, Any]) -> None:
        data["user_tools"]["reseat_sim"] = {"description": "Reseat the SIM"}

    result = run_cli("validate", str(_copy_suite(tmp_path, silent)))
    message = result.stdout + result.stderr
    assert result.returncode == 2 and "user_tools.reseat_sim: the tool has no return configured" in message
    assert "Traceback" not in message


def test_a_user_tools_effect_is_checked_against_the_world_like_an_agent_tools(tmp_path: Path) -> None:
    def wrong_collection(data: dict[str, Any]) -> None:
        data["user_tools"]["reseat_sim"] = {"description": "Reseat the SIM", "parameters": {"id": "Device"},
                                            "effect": {"records.update": "phones", "key": "id",
                                                       "set": {"sim_seated": True}}}

    result = run_cli("validate", str(_copy_suite(tmp_path, wrong_collection)))
    message = result.stdout + result.stderr
    assert result.returncode == 2, message
    assert "reseat_sim.effect: acts on records collection 'phones', which the environment does not declare" \
        in message


def test_a_user_who_only_calls_its_tools_is_stopped_and_errors_as_the_user(tmp_path: Path,
                                                                            server: ScriptedServer) -> None:
    from tests.scripted_server import call

    def restless(path: str, body: dict[str, Any]) -> Any:
        if is_simulator(body) and body["messages"][-1]["role"] == "tool":
            return call("check_status", {})  # looks at the phone again, and again, never writes to the agent
        return both(path, body)

    server.script = restless
    _, lines, _ = _run(ROOT / "suites" / "telecom.yaml", tmp_path / "out", server, "--sample-id", "no-signal-home")
    home = lines[("no-signal-home", 0)]
    assert home["error"]["category"] == "user_simulator" and home["score"] is None
    assert "called its tools 8 times in a row at turn 3 without writing to the assistant" in home["error"]["message"]
    sim = [r for r in server.requests if is_simulator(r["body"])]
    assert len(sim) == 1 + 9  # the phone-number turn, then 9 calls in the bounded turn (8 rounds of tools)
