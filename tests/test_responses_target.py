"""The openai_responses agent loop against the scripted server's /v1/responses, through the real openai client;
record and replay of it; and (once SuiteSpec.target takes the union) the same through `evals run`."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import openai
import pytest
from pydantic import ValidationError

from evals_cli.endpoints.errors import classify
from evals_cli.endpoints.pool import ClientPool
from evals_cli.endpoints.resolve import resolve_agent
from evals_cli.models.sample import Sample
from evals_cli.models.tools import ToolSpec
from evals_cli.models.trajectory import Trajectory
from evals_cli.suite.spec import SuiteSpec
from evals_cli.targets.base import SampleFailed, TargetContext
from evals_cli.targets.openai_chat import OpenAIChat, OpenAIChatTarget
from evals_cli.targets.openai_responses import OpenAIResponses, OpenAIResponsesTarget
from tests.helpers import TOOLS, read_jsonl, run_cli, write_suite
from tests.scripted_server import (
    Reply,
    ScriptedServer,
    agent_script,
    call,
    function_call_item,
    judge_score,
    message_item,
    response,
    response_call,
    response_text,
    text,
)

SUITE_TOOLS = {name: ToolSpec.model_validate(t) for name, t in TOOLS.items()}


def run_target(server: ScriptedServer, sample: dict[str, Any], system_prompt: str | None = "Be brief.",
               pool: ClientPool | None = None, **target: Any) -> Trajectory:
    spec = OpenAIResponsesTarget(base_url=server.url, model="scripted", api_key="sk-test", max_retries=0, **target)

    async def go() -> Trajectory:
        own = pool or ClientPool()
        try:
            agent = OpenAIResponses(spec, TargetContext(SUITE_TOOLS, resolve_agent(spec), own, system_prompt))
            return await agent.run(Sample.model_validate({"id": "s1", **sample}))
        finally:
            await own.aclose()

    return asyncio.run(go())


def bodies(server: ScriptedServer) -> list[dict[str, Any]]:
    assert all(r["path"] == "/v1/responses" for r in server.requests)
    return [r["body"] for r in server.requests]


def test_tool_call_is_answered_from_the_mock_and_fed_back_as_function_call_output(server: ScriptedServer) -> None:
    server.script = agent_script({"host": [response_call("read_file", {"path": ".env"}), response_text("localhost")]})
    trajectory = run_target(server, {"input": "db host?"})
    assert trajectory.stop_reason == "completed" and trajectory.final_answer == "localhost"
    [tool_call] = trajectory.tool_calls
    assert tool_call.name == "read_file" and tool_call.arguments == {"path": ".env"}
    assert tool_call.result == "DB_HOST=localhost\nDB_PORT=5432"
    first, second = bodies(server)
    assert first["input"] == [{"role": "user", "content": "db host?"}]
    user, fc, output = second["input"]
    assert user == {"role": "user", "content": "db host?"}
    assert fc == {"type": "function_call", "call_id": tool_call.id, "name": "read_file",
                  "arguments": '{"path": ".env"}'}
    assert output == {"type": "function_call_output", "call_id": tool_call.id, "output": tool_call.result}
    assert "messages" not in second and "previous_response_id" not in second  # stateless: the whole conversation


def test_instructions_carry_the_system_prompt_and_tools_are_flat_function_tools(server: ScriptedServer) -> None:
    server.script = agent_script({"x": [response_text("ok")]})
    run_target(server, {"input": "x"})
    body = bodies(server)[0]
    assert body["instructions"] == "Be brief."
    assert all(item.get("role") != "system" for item in body["input"])
    tools = {t["name"]: t for t in body["tools"]}
    assert tools["read_file"] == {"type": "function", "name": "read_file", "description": "Read a file",
                                  "parameters": {"type": "object", "required": ["path"],
                                                 "properties": {"path": {"type": "string", "description": "File path"}}}}
    assert body["tool_choice"] == "auto" and body["model"] == "scripted"


def test_without_a_system_prompt_no_instructions_are_sent(server: ScriptedServer) -> None:
    server.script = agent_script({"x": [response_text("ok")]})
    run_target(server, {"input": "x"}, system_prompt=None, strict_tools=False)
    body = bodies(server)[0]
    assert "instructions" not in body
    assert all(t["strict"] is False for t in body["tools"])


def test_prefilled_messages_become_input_items(server: ScriptedServer) -> None:
    server.script = agent_script({"replicas": [response_text("3")]})
    prefilled = [
        {"role": "system", "content": "You are the ops bot."},
        {"role": "user", "content": "region?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "r"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "region: eu"},
        {"role": "assistant", "content": "eu"},
    ]
    trajectory = run_target(server, {"messages": prefilled, "input": "replicas?"})
    body = bodies(server)[0]
    assert body["instructions"] == "You are the ops bot."  # the conversation's own system message wins
    assert body["input"] == [
        {"role": "user", "content": "region?"},
        {"type": "function_call", "call_id": "c1", "name": "read_file", "arguments": '{"path": "r"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "region: eu"},
        {"role": "assistant", "content": "eu"},
        {"role": "user", "content": "replicas?"},
    ]
    assert trajectory.final_answer == "3"
    assert [m["role"] for m in trajectory.prefilled] == ["system", "user", "assistant", "tool", "assistant"]


def test_parallel_calls_in_one_step_are_all_answered(server: ScriptedServer) -> None:
    server.script = agent_script({"both": [
        response_call("read_file", {"path": ".env"}, ("list_files", {"directory": "."})), response_text("done")]})
    trajectory = run_target(server, {"input": "both please"}, parallel_tool_calls=True)
    assert [len(s.tool_calls) for s in trajectory.turns[0].steps] == [2, 0]
    items = bodies(server)[1]["input"]
    assert [i.get("type", "message") for i in items] == ["message", "function_call", "function_call",
                                                         "function_call_output", "function_call_output"]
    assert {i["output"] for i in items[-2:]} == {"DB_HOST=localhost\nDB_PORT=5432", ".env\nsrc/"}
    assert bodies(server)[0]["parallel_tool_calls"] is True


def test_text_alongside_calls_is_kept_and_fed_back(server: ScriptedServer) -> None:
    server.script = agent_script({"x": [response([message_item("Let me look."), function_call_item("list_files", {})]),
                                        response_text("found it")]})
    trajectory = run_target(server, {"input": "x"})
    assert trajectory.turns[0].steps[0].content == "Let me look."
    assert bodies(server)[1]["input"][1] == {"role": "assistant", "content": "Let me look."}


def test_loop_bound_keeps_the_partial_trajectory(server: ScriptedServer) -> None:
    server.script = agent_script({"loop": [response_call("list_files", {"directory": "."})]})
    trajectory = run_target(server, {"input": "loop forever"}, max_steps=3)
    assert trajectory.stop_reason == "max_steps"
    assert [c.name for c in trajectory.tool_calls] == ["list_files"] * 3 and len(server.requests) == 3
    assert run_target(server, {"input": "loop", "max_steps": 2}, max_steps=10).stop_reason == "max_steps"
    assert len(server.requests) == 5  # the sample's own bound wins


def test_malformed_tool_arguments_are_recorded_not_fatal(server: ScriptedServer) -> None:
    server.script = agent_script({"bad": [response_call("read_file", '{"path": ".env"'), response_text("sorry")]})
    trajectory = run_target(server, {"input": "bad args"})
    [tool_call] = trajectory.tool_calls
    assert tool_call.arguments is None and tool_call.raw_arguments == '{"path": ".env"'
    assert tool_call.arguments_error and tool_call.is_error
    items = bodies(server)[1]["input"]
    assert items[1]["arguments"] == '{"path": ".env"'  # sent back exactly as the model wrote it
    assert items[2]["type"] == "function_call_output" and "not valid JSON" in items[2]["output"]
    assert trajectory.final_answer == "sorry"


def test_unknown_tool_gets_an_error_result(server: ScriptedServer) -> None:
    server.script = agent_script({"rm": [response_call("delete_everything", {"really": True}), response_text("no")]})
    trajectory = run_target(server, {"input": "rm all"})
    [tool_call] = trajectory.tool_calls
    assert tool_call.unknown_tool and tool_call.is_error
    assert "unknown tool 'delete_everything'" in tool_call.result and "read_file" in tool_call.result
    assert bodies(server)[1]["input"][-1]["output"] == tool_call.result


def test_usage_and_latency_are_recorded_per_step(server: ScriptedServer) -> None:
    last_reply = response_text("hi", input_tokens=7, output_tokens=3)
    server.script = agent_script({"x": [response_call("list_files", {}), last_reply]})
    trajectory = run_target(server, {"input": "x"})
    first, last = trajectory.turns[0].steps
    assert (first.usage.prompt_tokens, first.usage.completion_tokens) == (10, 5)
    assert (last.usage.prompt_tokens, last.usage.completion_tokens) == (7, 3)
    assert first.latency_s > 0 and last.latency_s > 0 and first.started > 0
    assert (first.finish_reason, last.finish_reason) == ("tool_calls", "stop")
    assert trajectory.usage().total_tokens == 25


def test_per_turn_inputs_share_one_growing_conversation(server: ScriptedServer) -> None:
    server.script = agent_script({"first": [call("read_file", {"path": ".env"}), text("localhost")],
                                  "second": [text("5432")]})  # chat replies, converted for /responses
    trajectory = run_target(server, {"input": ["first q", "second q"], "ground_truth": ["localhost", "5432"]})
    assert [t.answer for t in trajectory.turns] == ["localhost", "5432"]
    assert [i.get("type", i.get("role")) for i in bodies(server)[-1]["input"]] == [
        "user", "function_call", "function_call_output", "assistant", "user"]


def test_request_options_reach_the_server(server: ScriptedServer) -> None:
    server.script = agent_script({"x": [response_text("ok")]})
    run_target(server, {"input": "x"}, temperature=0.0, max_tokens=64, store=False, tool_choice="required",
               extra_body={"seed": 7})
    body = bodies(server)[0]
    assert body["temperature"] == 0 and body["max_output_tokens"] == 64 and body["store"] is False
    assert body["tool_choice"] == "required" and body["seed"] == 7 and "max_tokens" not in body
    assert server.requests[0]["headers"]["authorization"] == "Bearer sk-test"


def test_an_incomplete_response_is_a_step_with_its_reason(server: ScriptedServer) -> None:
    cut = response([{"type": "reasoning", "id": "rs_1", "summary": []}, message_item("The answer is")],
                   status="incomplete", incomplete_details={"reason": "max_output_tokens"})
    server.script = agent_script({"x": [cut]})
    trajectory = run_target(server, {"input": "x"})
    step = trajectory.turns[0].steps[0]
    assert (step.content, step.finish_reason) == ("The answer is", "max_output_tokens")  # reasoning left out


@pytest.mark.parametrize(("reply", "says"), [
    (response([]), "no output items"),
    (response([], status="failed", error={"code": "server_error", "message": "the model crashed"}), "the model crashed"),
])
def test_unusable_responses_fail_the_sample_with_its_partial_trajectory(server: ScriptedServer, reply: dict[str, Any],
                                                                        says: str) -> None:
    server.script = agent_script({"x": [response_call("list_files", {}), reply]})
    with pytest.raises(SampleFailed) as info:
        run_target(server, {"input": "x"})
    assert says in str(info.value.cause)
    assert info.value.trajectory.stop_reason == "error"
    assert [c.name for c in info.value.trajectory.tool_calls] == ["list_files"]
    spec = OpenAIResponsesTarget(model="scripted")
    assert classify(info.value.cause, resolve_agent(spec)).category == "invalid_response"


def test_http_errors_are_classified_like_chat(server: ScriptedServer) -> None:
    server.script = lambda path, body: Reply({"error": {"message": "bad key"}}, status=401)
    with pytest.raises(SampleFailed) as info:
        run_target(server, {"input": "x"})
    assert isinstance(info.value.cause, openai.AuthenticationError)
    found = classify(info.value.cause, resolve_agent(OpenAIResponsesTarget(model="scripted")))
    assert found.category == "auth" and found.fatal


def test_one_script_gives_the_same_trajectory_through_both_apis(server: ScriptedServer) -> None:
    server.script = agent_script({"host": [call("read_file", {"path": ".env"}), call("list_files", {"directory": "."}),
                                           text("localhost")]})
    via_responses = run_target(server, {"input": "db host?"})
    spec = OpenAIChatTarget(base_url=server.url, model="scripted", api_key="sk-test", max_retries=0)

    async def chat() -> Trajectory:
        pool = ClientPool()
        try:
            return await OpenAIChat(spec, TargetContext(SUITE_TOOLS, resolve_agent(spec), pool, "Be brief.")).run(
                Sample.model_validate({"id": "s1", "input": "db host?"}))
        finally:
            await pool.aclose()

    via_chat = asyncio.run(chat())

    def essence(t: Trajectory) -> list[Any]:
        return [[(c.name, c.arguments, c.result) for c in s.tool_calls] + [s.content] for s in t.turns[0].steps]

    assert essence(via_responses) == essence(via_chat)
    assert via_responses.prefilled == via_chat.prefilled


def test_record_and_replay_round_trip_without_the_server(tmp_path: Path) -> None:
    recording = tmp_path / "rec.jsonl"
    server = ScriptedServer(agent_script({
        "host": [response_call("read_file", {"path": ".env"}), response_text("localhost")],
        "math": [Reply({"error": {"message": "model overloaded"}}, status=400)]})).start()
    try:
        live = run_target(server, {"input": "db host?"}, pool=ClientPool(record=recording))
        with pytest.raises(SampleFailed) as live_error:
            run_target(server, {"input": "math"}, pool=ClientPool(record=recording))
    finally:
        server.stop()
    entries = read_jsonl(recording)
    assert [e["path"] for e in entries] == ["responses"] * 3
    assert [e["context"] for e in entries] == ["sample s1, turn 1, step 1", "sample s1, turn 1, step 2",
                                               "sample s1, turn 1, step 1"]
    replayed = run_target(server, {"input": "db host?"}, pool=ClientPool(replay=recording))
    assert replayed.model_dump(exclude={"turns": {0: {"steps": {"__all__": {"latency_s", "started"}}}}}) == \
        live.model_dump(exclude={"turns": {0: {"steps": {"__all__": {"latency_s", "started"}}}}})
    with pytest.raises(SampleFailed) as replay_error:  # a recorded error is replayed as the same SDK error
        run_target(server, {"input": "math"}, pool=ClientPool(replay=recording))
    assert type(replay_error.value.cause) is type(live_error.value.cause) is openai.BadRequestError
    with pytest.raises(SampleFailed) as miss:  # a request the recording does not hold
        run_target(server, {"input": "db host?"}, system_prompt="Another prompt.", pool=ClientPool(replay=recording))
    found = classify(miss.value.cause, resolve_agent(OpenAIResponsesTarget(model="scripted")))
    assert found.category == "replay" and "sample s1, turn 1, step 1" in found.message


# --- through `evals run`, once SuiteSpec.target is evals_cli.suite.spec.TargetSpec ----------------------------

def suite_accepts(target: dict[str, Any]) -> bool:
    try:
        SuiteSpec.model_validate({"name": "n", "dataset": "d.jsonl", "target": target,
                                  "graders": {"a": {"kind": "tool", "function": "contains"}}})
    except ValidationError:
        return False
    return True


needs_union = pytest.mark.skipif(not suite_accepts({"kind": "openai_responses"}),
                                 reason="needs SuiteSpec.target = evals_cli.suite.spec.TargetSpec")
ROWS = [{"id": "host", "input": "db host?", "ground_truth": "localhost", "expected_tool_order": ["read_file"]},
        {"id": "math", "input": "math: 2+2?", "ground_truth": "4"}]
GRADERS = {"answer": {"kind": "tool", "function": "contains"}, "order": {"kind": "tool_order"},
           "judge": {"kind": "model_judge", "prompt": "Grade {{ submission }} against {{ ground_truth }}."}}


@needs_union
def test_evals_run_records_and_replays_a_responses_target(tmp_path: Path) -> None:
    server = ScriptedServer(agent_script({"host": [call("read_file", {"path": ".env"}), text("localhost")],
                                          "math": [text("4")]}, judge=lambda body: judge_score(8))).start()
    suite = write_suite(tmp_path, ROWS, base_url=server.url, graders=GRADERS, target={"kind": "openai_responses"})
    recording = tmp_path / "rec.jsonl"
    try:
        live = run_cli("run", str(suite), "-o", str(tmp_path / "live"), "--record", str(recording))
    finally:
        server.stop()
    assert live.returncode == 0, live.stderr
    assert sorted({e["path"] for e in read_jsonl(recording)}) == ["chat/completions", "responses"]  # agent, judge
    replay = run_cli("run", str(suite), "-o", str(tmp_path / "replay"), "--replay", str(recording))
    assert replay.returncode == 0, replay.stderr

    def essence(run: str) -> dict[str, Any]:
        return {r["sample_id"]: ([c["name"] for t in r["trajectory"]["turns"] for s in t["steps"]
                                  for c in s["tool_calls"]], r["trajectory"]["turns"][-1]["steps"][-1]["content"],
                                 {k: g["score"] for k, g in r["grades"].items()})
                for r in read_jsonl(tmp_path / run / "results.jsonl")}

    assert essence("replay") == essence("live")
    assert essence("live")["host"] == (["read_file"], "localhost", {"answer": 1.0, "order": 1.0, "judge": 0.8})
