"""`kind: latency` and `kind: cost` (issue 44, item 1): the agent's time and spend held to a bound, per sample, per
turn of a per-turn row and per reply, as promptfoo's `latency` / `cost` / `tokens-used` and pydantic-evals'
`MaxDuration` hold them (at most the bound passes, binary; a figure that was not measured is no pass).

End to end through `evals run` / `evals validate` against the scripted loopback server (the real openai client),
which is slow on purpose where a test needs a slow model: its reply to a "slow" message waits before it is sent. A
python tool that takes a while stands for a slow tool. Unit tests pin each measure on a hand-built trajectory."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from evals_cli.graders.base import GradeContext, GraderContext
from evals_cli.graders.kinds.cost import CostGrader, CostSpec
from evals_cli.graders.kinds.latency import LatencyGrader, LatencySpec, model_seconds, tool_seconds, wall_seconds
from evals_cli.models.sample import Sample
from evals_cli.models.specs import Price
from evals_cli.models.trajectory import Step, ToolCall, Trajectory, Turn, Usage
from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import Reply, ScriptedServer, call, last_user, steps_since_user, text

SLOW = 0.45  # seconds the slow model and the slow tool take; every bound below is 0.3 (room for a busy machine)
TOOL_FILE = "import time\n\ndef slow_lookup(arguments, world):\n    time.sleep(0.45)\n    return 'found'\n"
TOOLS = {"slow_lookup": {"description": "Look something up (slowly)", "parameters": {"q": "Query"},
                         "python": "slow_tools.py:slow_lookup"}}


def _script(path: str, body: dict[str, Any]) -> Any:
    """"slow" messages are answered after SLOW seconds; "tool" ones call the slow tool first; others at once."""
    user, step = last_user(body), steps_since_user(body)
    if "tool" in user and step == 0:
        return call("slow_lookup", {"q": "x"})
    reply = text(f"done: {user}")
    return Reply(reply, delay=SLOW) if "slow" in user else reply


def _run(tmp: Path, server: ScriptedServer, rows: list[dict[str, Any]], graders: dict[str, Any],
         *extra: str, **overrides: Any) -> tuple[dict[str, dict[str, Any]], str]:
    server.script = _script
    (tmp / "slow_tools.py").write_text(TOOL_FILE, encoding="utf-8")
    suite = write_suite(tmp, rows, base_url=server.url, graders=graders, tools=TOOLS, **overrides)
    result = run_cli("run", str(suite), "-o", str(tmp / "out"), *extra)
    said = result.stdout + result.stderr
    assert "Traceback" not in said
    return {r["sample_id"]: r for r in read_jsonl(tmp / "out" / "results.jsonl")}, said


LATENCY = {"wall": {"kind": "latency", "max_s": 0.3},
           "model": {"kind": "latency", "max_s": 0.3, "measure": "model"},
           "tool": {"kind": "latency", "max_s": 0.3, "measure": "tool"}}


def test_a_slow_model_fails_wall_and_model_time_and_a_slow_tool_fails_wall_and_tool_time(
        tmp_path: Path, server: ScriptedServer) -> None:
    rows = [{"id": "slow-model", "input": "a slow question"}, {"id": "slow-tool", "input": "use the tool"},
            {"id": "fast", "input": "a quick one"}]
    by_id, said = _run(tmp_path, server, rows, LATENCY, concurrency=3)  # the waits overlap
    grades = {sid: r["grades"] for sid, r in by_id.items()}
    assert all(r["error"] is None for r in by_id.values()), said
    slow_model, slow_tool, fast = grades["slow-model"], grades["slow-tool"], grades["fast"]
    assert (slow_model["wall"]["score"], slow_model["model"]["score"]) == (0.0, 0.0)
    assert slow_model["model"]["metadata"]["seconds"] >= SLOW
    assert "model time" in slow_model["model"]["rationale"] and "over max_s 0.3s" in slow_model["model"]["rationale"]
    assert not slow_model["tool"]["applicable"]  # no tool was called: no tool time, and no pass on nothing
    assert (slow_tool["wall"]["score"], slow_tool["model"]["score"], slow_tool["tool"]["score"]) == (0.0, 1.0, 0.0)
    assert slow_tool["tool"]["metadata"]["seconds"] >= SLOW
    assert slow_tool["model"]["metadata"]["seconds"] < 0.3
    assert (fast["wall"]["score"], fast["model"]["score"]) == (1.0, 1.0)
    assert "within max_s 0.3s" in fast["wall"]["rationale"]


def test_latency_grades_each_turn_of_a_per_turn_row_and_each_reply(tmp_path: Path, server: ScriptedServer) -> None:
    rows = [{"id": "turns", "input": ["a slow start", "then quick"], "ground_truth": ["done", "done"]},
            {"id": "replies", "input": ["quick first", "slow second"]}]
    graders = {"turn": {"kind": "latency", "max_s": 0.3, "measure": "model"},
               "reply": {"kind": "latency", "max_s": 0.3, "scope": "reply", "required": False}}
    by_id, said = _run(tmp_path, server, rows, graders)
    turn = by_id["turns"]["grades"]["turn"]
    assert [t["score"] for t in turn["per_turn_grades"]] == [0.0, 1.0], said
    reply = by_id["replies"]["grades"]["reply"]
    assert [t["score"] for t in reply["per_turn_grades"]] == [1.0, 0.0], said
    whole = by_id["replies"]["grades"]["turn"]  # not per-turn: the conversation's two turns added up
    assert whole["metadata"]["turns"] == 2 and whole["score"] == 0.0


def test_model_time_under_replay_is_not_measured(tmp_path: Path, server: ScriptedServer) -> None:
    rows = [{"id": "slow-model", "input": "a slow question"}]
    recording = tmp_path / "rec.jsonl"
    by_id, said = _run(tmp_path, server, rows, LATENCY, "--record", str(recording))
    assert by_id["slow-model"]["grades"]["model"]["score"] == 0.0, said
    (tmp_path / "out").rename(tmp_path / "first")
    by_id, said = _run(tmp_path, server, rows, LATENCY, "--replay", str(recording))
    model = by_id["slow-model"]["grades"]["model"]
    assert not model["applicable"] and "--replay" in model["rationale"], said  # not the replay's 0 s as a pass


PRICING = {"scripted": {"input": 1.0, "output": 2.0}}  # the server's 10 + 5 tokens a step: 2e-5 a step


def test_cost_in_tokens_and_money_matches_the_results_own_accounting(tmp_path: Path, server: ScriptedServer) -> None:
    rows = [{"id": "one-step", "input": "a quick one"}, {"id": "two-steps", "input": "use the tool"}]
    graders = {"tokens": {"kind": "cost", "max_tokens": 20}, "money": {"kind": "cost", "max_cost": 3e-5},
               "both": {"kind": "cost", "max_tokens": 100, "max_cost": 3e-5}}
    by_id, said = _run(tmp_path, server, rows, graders, pricing=PRICING)
    one, two = by_id["one-step"], by_id["two-steps"]
    assert one["error"] is None and two["error"] is None, said
    assert (one["grades"]["tokens"]["score"], two["grades"]["tokens"]["score"]) == (1.0, 0.0)
    assert two["grades"]["tokens"]["metadata"]["tokens"] == 30 == two["usage"]["prompt_tokens"] + \
        two["usage"]["completion_tokens"]
    assert "30 tokens over max_tokens 20" in two["grades"]["tokens"]["rationale"]
    for result, score in ((one, 1.0), (two, 0.0)):
        money = result["grades"]["money"]
        assert money["score"] == score, said
        assert money["metadata"]["cost"] == result["roles"]["agent"]["cost"]  # the run's own figure
    assert abs(two["grades"]["money"]["metadata"]["cost"] - 4e-5) < 1e-12
    assert two["grades"]["both"]["score"] == 0.0 and "within max_tokens 100" in two["grades"]["both"]["rationale"]


def test_cost_grades_each_turn_of_a_per_turn_row(tmp_path: Path, server: ScriptedServer) -> None:
    rows = [{"id": "turns", "input": ["use the tool", "then quick"], "ground_truth": ["done", "done"]}]
    by_id, said = _run(tmp_path, server, rows, {"tokens": {"kind": "cost", "max_tokens": 20}})
    assert [t["score"] for t in by_id["turns"]["grades"]["tokens"]["per_turn_grades"]] == [0.0, 1.0], said


def _validate(tmp: Path, server: ScriptedServer, graders: dict[str, Any], **overrides: Any) -> tuple[int, str]:
    (tmp / "slow_tools.py").write_text(TOOL_FILE, encoding="utf-8")
    suite = write_suite(tmp, [{"id": "r", "input": "hi"}], base_url=server.url, graders=graders, tools=TOOLS,
                        **overrides)
    result = run_cli("validate", str(suite))
    said = result.stdout + result.stderr
    assert "Traceback" not in said
    return result.returncode, said


def test_bad_bounds_and_an_unpriced_model_are_refused_before_the_run(tmp_path: Path, server: ScriptedServer) -> None:
    assert _validate(tmp_path, server, {"c": {"kind": "cost", "max_cost": 1.0}}, pricing=PRICING)[0] == 0
    assert _validate(tmp_path, server, {"l": {"kind": "latency", "max_s": 2}})[0] == 0
    code, said = _validate(tmp_path, server, {"c": {"kind": "cost", "max_cost": 1.0}})
    assert code == 2 and "graders.c: max_cost" in said and "no pricing: block" in said, said
    code, said = _validate(tmp_path, server, {"c": {"kind": "cost", "max_cost": 1.0}},
                           pricing={"other-model": {"input": 1.0, "output": 1.0}})
    assert code == 2 and "graders.c: max_cost" in said and "'scripted'" in said and "other-model" in said, said
    code, said = _validate(tmp_path, server, {"c": {"kind": "cost"}})
    assert code == 2 and "graders.c" in said and "max_tokens, max_cost" in said, said
    code, said = _validate(tmp_path, server, {"l": {"kind": "latency", "max_s": 0}})
    assert code == 2 and "graders.l.max_s" in said, said
    code, said = _validate(tmp_path, server, {"l": {"kind": "latency", "max_s": 1, "measure": "cpu"}})
    assert code == 2 and "graders.l.measure" in said, said
    assert not server.requests  # validate calls no model


# --- the measures, on trajectories built by hand -------------------------------------------------------------


def _step(started: float, latency: float, calls: int = 0, tokens: int = 0) -> Step:
    return Step(started=started, latency_s=latency, usage=Usage(prompt_tokens=tokens, completion_tokens=tokens),
                tool_calls=[ToolCall(name="t") for _ in range(calls)])


def test_the_measures_add_up_model_calls_tool_gaps_and_each_turns_span() -> None:
    turns = [Turn(steps=[_step(100.0, 1.0, calls=1), _step(103.0, 0.5)]),  # 1 s model, 2 s tool, 0.5 s model
             Turn(steps=[_step(200.0, 0.25)])]  # 96.5 s later: the user's time, not the agent's
    assert model_seconds(turns) == 1.75
    assert tool_seconds(turns) == 2.0
    assert wall_seconds(turns) == 3.5 + 0.25


def _grade(grader: Any, trajectory: Trajectory, sample: Sample | None = None) -> Any:
    sample = sample or Sample(id="s", input="hi")
    return asyncio.run(grader.grade(GradeContext(sample, trajectory, trajectory, None, None)))


def test_what_was_not_measured_is_not_applicable_never_a_pass(tmp_path: Path) -> None:
    ctx = GraderContext(tmp_path)
    wall = LatencyGrader("l", LatencySpec(max_s=1), ctx)
    untimed = Trajectory(turns=[Turn(steps=[Step(content="hi")])])  # a step without a start time
    assert not _grade(wall, untimed).applicable
    assert _grade(LatencyGrader("m", LatencySpec(max_s=1, measure="model"), ctx), untimed).score == 1.0
    assert not _grade(wall, Trajectory()).applicable
    cost = CostGrader("c", CostSpec(max_tokens=10), ctx)
    assert not _grade(cost, untimed).applicable  # no tokens reported: not a count of zero
    priced = GraderContext(tmp_path, pricing={"m": Price(input=1.0, output=1.0)}, agent_model="m")
    money = CostGrader("c", CostSpec(max_cost=1e-5), priced)
    spent = Trajectory(turns=[Turn(steps=[_step(1.0, 0.1, tokens=4)])])  # 8 tokens: 8e-6
    assert _grade(money, spent).score == 1.0
    own = Sample(id="s", input="hi", agent_model="dear")  # a row's own model has no price: an error, never a 0
    assert _grade(money, spent, own).score is None
    assert money.check_sample(own) and "agent_model" in money.check_sample(own)[0]
