"""The openai_chat agent loop against the scripted server, through the real openai client."""

from __future__ import annotations

import asyncio

import pytest

from evals_cli.endpoints.pool import ClientPool
from evals_cli.endpoints.resolve import resolve_agent
from evals_cli.models.sample import Sample
from evals_cli.models.tools import ToolSpec
from evals_cli.targets.base import SampleFailed, TargetContext
from evals_cli.targets.openai_chat import OpenAIChat, OpenAIChatTarget
from tests.helpers import TOOLS
from tests.scripted_server import ScriptedServer, agent_script, call, completion, text


def run_target(server: ScriptedServer, sample: dict, system_prompt: str | None = "Be brief.", **target: object):
    spec = OpenAIChatTarget(base_url=server.url, model="scripted", api_key="sk-test", max_retries=0, **target)
    tools = {name: ToolSpec.model_validate(t) for name, t in TOOLS.items()}

    async def go():
        pool = ClientPool()
        try:
            agent = OpenAIChat(spec, TargetContext(tools, resolve_agent(spec), pool, system_prompt))
            return await agent.run(Sample.model_validate({"id": "s1", **sample}))
        finally:
            await pool.aclose()

    return asyncio.run(go())


def test_tool_call_is_answered_from_the_mock_and_fed_back(server: ScriptedServer) -> None:
    server.script = agent_script({"host": [call("read_file", {"path": ".env"}), text("localhost")]})
    trajectory = run_target(server, {"input": "db host?"})
    assert trajectory.stop_reason == "completed"
    assert trajectory.final_answer == "localhost"
    [tool_call] = trajectory.tool_calls
    assert tool_call.name == "read_file" and tool_call.arguments == {"path": ".env"}
    assert tool_call.result.startswith("DB_HOST=localhost")
    second = server.requests[1]["body"]["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "tool"]
    assert second[2]["content"] == ""  # never null: some servers reject it
    assert second[3]["tool_call_id"] == second[2]["tool_calls"][0]["id"]
    assert second[3]["content"] == tool_call.result


def test_the_agent_sees_proper_function_tool_schemas(server: ScriptedServer) -> None:
    server.script = agent_script({"x": [text("ok")]})
    run_target(server, {"input": "x"})
    tools = {t["function"]["name"]: t for t in server.requests[0]["body"]["tools"]}
    assert tools["read_file"]["type"] == "function"
    assert tools["read_file"]["function"]["parameters"] == {
        "type": "object", "properties": {"path": {"type": "string", "description": "File path"}},
        "required": ["path"]}
    assert server.requests[0]["body"]["tool_choice"] == "auto"


def test_parallel_calls_in_one_step_are_all_answered(server: ScriptedServer) -> None:
    server.script = agent_script({"both": [
        call("read_file", {"path": ".env"}, ("list_files", {"directory": "."})), text("done")]})
    trajectory = run_target(server, {"input": "both please"})
    assert [len(s.tool_calls) for s in trajectory.turns[0].steps] == [2, 0]
    messages = server.requests[1]["body"]["messages"]
    assert [m["role"] for m in messages[-2:]] == ["tool", "tool"]
    assert {m["content"] for m in messages[-2:]} == {"DB_HOST=localhost\nDB_PORT=5432", ".env\nsrc/"}


def test_loop_bound_keeps_the_partial_trajectory(server: ScriptedServer) -> None:
    server.script = agent_script({"loop": [call("list_files", {"directory": "."})]})
    trajectory = run_target(server, {"input": "loop forever"}, max_steps=3)
    assert trajectory.stop_reason == "max_steps"
    assert len(trajectory.turns[0].steps) == 3
    assert [c.name for c in trajectory.tool_calls] == ["list_files"] * 3
    assert len(server.requests) == 3


def test_sample_max_steps_overrides_the_target(server: ScriptedServer) -> None:
    server.script = agent_script({"loop": [call("list_files", {"directory": "."})]})
    trajectory = run_target(server, {"input": "loop", "max_steps": 2}, max_steps=10)
    assert trajectory.stop_reason == "max_steps" and len(server.requests) == 2


def test_malformed_tool_arguments_are_recorded_not_fatal(server: ScriptedServer) -> None:
    server.script = agent_script({"bad": [call("read_file", '{"path": ".env"'), text("sorry")]})
    trajectory = run_target(server, {"input": "bad args"})
    [tool_call] = trajectory.tool_calls
    assert tool_call.arguments is None and tool_call.raw_arguments == '{"path": ".env"'
    assert tool_call.arguments_error and tool_call.is_error
    fed_back = server.requests[1]["body"]["messages"][-1]
    assert fed_back["role"] == "tool" and "not valid JSON" in fed_back["content"]
    assert trajectory.final_answer == "sorry"


def test_unknown_tool_gets_an_error_result(server: ScriptedServer) -> None:
    server.script = agent_script({"rm": [call("delete_everything", {"really": True}), text("could not")]})
    trajectory = run_target(server, {"input": "rm all"})
    [tool_call] = trajectory.tool_calls
    assert tool_call.unknown_tool and tool_call.is_error
    assert "unknown tool 'delete_everything'" in tool_call.result and "read_file" in tool_call.result


def test_prefilled_messages_continue_the_conversation(server: ScriptedServer) -> None:
    server.script = agent_script({"replicas": [text("3")]})
    prefilled = [
        {"role": "user", "content": "region?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "region: eu"},
        {"role": "assistant", "content": "eu"},
    ]
    trajectory = run_target(server, {"messages": prefilled, "input": "replicas?"})
    sent = server.requests[0]["body"]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert sent[2]["content"] == ""
    assert trajectory.final_answer == "3" and len(trajectory.prefilled) == 5


def test_prefilled_conversation_ending_with_user_runs_without_input(server: ScriptedServer) -> None:
    server.script = agent_script({"pending question": [text("answer")]})
    trajectory = run_target(server, {"messages": [{"role": "user", "content": "pending question"}]},
                            system_prompt=None)
    assert [m["role"] for m in server.requests[0]["body"]["messages"]] == ["user"]
    assert trajectory.turns[0].user is None and trajectory.final_answer == "answer"


def test_per_turn_inputs_share_one_growing_conversation(server: ScriptedServer) -> None:
    server.script = agent_script({"first": [call("read_file", {"path": ".env"}), text("localhost")],
                                  "second": [text("5432")]})
    trajectory = run_target(server, {"input": ["first q", "second q"], "ground_truth": ["localhost", "5432"]})
    assert [t.answer for t in trajectory.turns] == ["localhost", "5432"]
    last = server.requests[-1]["body"]["messages"]
    assert [m["role"] for m in last] == ["system", "user", "assistant", "tool", "assistant", "user"]


def test_usage_and_latency_are_recorded_per_step(server: ScriptedServer) -> None:
    server.script = agent_script({"x": [completion(content="hi", prompt_tokens=7, completion_tokens=3)]})
    trajectory = run_target(server, {"input": "x"})
    step = trajectory.turns[0].steps[0]
    assert (step.usage.prompt_tokens, step.usage.completion_tokens) == (7, 3)
    assert step.latency_s > 0
    assert trajectory.usage().total_tokens == 10


def test_empty_choices_fail_the_sample_with_its_partial_trajectory(server: ScriptedServer) -> None:
    bad = completion(content="x")
    bad["choices"] = []
    server.script = agent_script({"x": [call("list_files", {"directory": "."}), bad]})
    with pytest.raises(SampleFailed) as info:
        run_target(server, {"input": "x"})
    assert "no choices" in str(info.value.cause)
    assert info.value.trajectory.stop_reason == "error"
    assert [c.name for c in info.value.trajectory.tool_calls] == ["list_files"]


def test_request_options_reach_the_server(server: ScriptedServer) -> None:
    server.script = agent_script({"x": [text("ok")]})
    run_target(server, {"input": "x"}, temperature=0.0, max_tokens=64, extra_body={"seed": 7})
    body = server.requests[0]["body"]
    assert body["temperature"] == 0 and body["max_tokens"] == 64 and body["seed"] == 7
    assert body["model"] == "scripted"


def test_api_key_is_sent_as_bearer(server: ScriptedServer) -> None:
    server.script = agent_script({"x": [text("ok")]})
    run_target(server, {"input": "x"})
    assert server.requests[0]["headers"]["authorization"] == "Bearer sk-test"
