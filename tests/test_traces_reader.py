"""Reading OpenTelemetry traces (evals_cli/traces): the fixtures were recorded by the real openai
instrumentations (tests/fixtures/traces/record.py) around a small agent loop against the scripted server, and
one file is hand-made for the edge cases."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evals_cli.errors import ConfigError
from evals_cli.traces import Conversation, read_traces

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "traces"
RECORDED = ["genai", "openinference"]


def shape(conversation: Conversation) -> dict[str, Any]:
    """What a conversation says happened, without timings and generated ids."""
    return {
        "id": conversation.id,
        "turns": [{"user": turn.user,
                   "steps": [(agent, step.content, [(c.name, c.arguments, c.result, c.unknown_tool, c.is_error)
                                                    for c in step.tool_calls])
                             for agent, step in zip(agents, turn.steps, strict=True)]}
                  for turn, agents in zip(conversation.trajectory.turns, conversation.step_agents, strict=True)],
        "agents": {name: (info.parent, [t["name"] for t in info.tools or []])
                   for name, info in conversation.agents.items()},
        "handoffs": conversation.handoffs,
        "complete": conversation.complete,
        "notes": conversation.notes,
    }


@pytest.mark.parametrize("convention", RECORDED)
def test_recorded_traces_become_the_conversations_the_agent_had(convention: str) -> None:
    traces = read_traces(FIXTURES / f"{convention}.otlp.jsonl")
    assert traces.problems == []
    first, second = traces.conversations
    assert shape(first) == {
        "id": "order-42",  # two traces (one per user message), one conversation: the id on the root agent span
        "turns": [
            {"user": "Where is my order 42?", "steps": [
                ("support", None, [("lookup_order", {"order_id": "42"},
                                    '{"order_id": "42", "status": "delivered", "total": 30}', False, False)]),
                ("support", "Order 42 was delivered.", [])]},
            {"user": "It arrived broken, please refund it.", "steps": [
                ("support", None, [("transfer_to_billing", {"reason": "refund order 42"},
                                    "Refunded 30 EUR for order 42.", False, False)]),
                ("billing", None, [("refund_order", {"order_id": "42"}, '{"refunded": true, "amount": 30}',
                                    False, False)]),
                ("billing", "Refunded 30 EUR for order 42.", []),
                ("support", "Billing refunded order 42: 30 EUR are on their way.", [])]},
        ],
        "agents": {"support": (None, ["lookup_order", "transfer_to_billing"]),
                   "billing": ("support", ["refund_order"])},
        "handoffs": [("support", "billing", 1)],
        "complete": True,
        "notes": [],
    }
    # a tool never offered to the agent is marked, and its error status is kept
    assert shape(second)["turns"][0]["steps"][0][2] == [
        ("delete_account", {"user": "me"}, "error: unknown tool delete_account", True, True)]
    usage = first.trajectory.usage()
    assert (usage.prompt_tokens, usage.completion_tokens) == (60, 30)  # 6 model calls of 10 + 5 tokens
    assert first.latency_s > 0 and all(s.latency_s > 0 for t in first.trajectory.turns for s in t.steps)
    assert first.trajectory.final_answer == "Billing refunded order 42: 30 EUR are on their way."


@pytest.mark.parametrize("convention", RECORDED)
def test_a_fresh_recording_with_the_installed_instrumentation_reads_the_same(convention: str, tmp_path: Path) -> None:
    """The committed fixture is what today's instrumentation writes: record again, read the same."""
    out = tmp_path / "trace.jsonl"
    subprocess.run([sys.executable, str(FIXTURES / "record.py"), convention, str(out)], check=True, timeout=120)
    fresh = read_traces(out).conversations
    committed = read_traces(FIXTURES / f"{convention}.otlp.jsonl").conversations
    assert [shape(c) for c in fresh] == [shape(c) for c in committed]


def test_content_capture_off_is_said_per_conversation_and_nothing_is_graded() -> None:
    with pytest.raises(ConfigError) as caught:
        read_traces(FIXTURES / "no_content.otlp.jsonl")
    problems = caught.value.problems
    assert "no conversation could be read" in problems[0]
    assert [p.split(": ", 2)[1] for p in problems[1:]] == ["conversation 'order-42'", "conversation 'order-7'"]
    assert all("were not recorded (content capture was off" in p for p in problems[1:])


def test_edge_cases_are_reported_per_line_and_per_conversation() -> None:
    path = FIXTURES / "edge_cases.otlp.jsonl"
    traces = read_traces(path)
    by_id = {c.id: c for c in traces.conversations}
    # what is readable is read: the older gen_ai.prompt.N form, and a span whose parent is missing
    assert [c.id for c in traces.complete] == ["legacy-1", "cut-1", "orphan-1"]
    legacy = by_id["legacy-1"].trajectory
    assert [(c.name, c.arguments, c.result) for c in legacy.tool_calls] == [("lookup_order", {"order_id": "9"},
                                                                             "order 9: shipped")]
    assert legacy.final_answer == "Order 9 has shipped."
    assert [t["name"] for t in by_id["legacy-1"].agents["agent"].tools or []] == ["lookup_order"]
    notes = traces.notes()
    assert any(n.startswith(f"{path}:2: not JSON") for n in notes)
    assert any(n.startswith(f"{path}:3: not an OTLP/JSON ExportTraceServiceRequest") for n in notes)
    assert any(n.startswith(f"{path}:8: intValue 'many' is not an integer") for n in notes)
    assert any(n.startswith(f"{path}:4: conversation 'cut-1'") and "cut off mid-call" in n
               and "cancel_order" in n for n in notes)
    assert any("no model call span in a convention evals-cli reads" in n and "ai.prompt" in n for n in notes)
    assert any(n.startswith(f"{path}:5: conversation 'orphan-1'") and "parent that is not in the files" in n
               for n in notes)
    assert any(n.startswith(f"{path}:7: conversation 'noresult-1'") and "was never recorded" in n for n in notes)
    assert not by_id["noresult-1"].complete  # an empty result would be graded as what the tool returned
    # cut off mid-call: graded as recorded, its stop reason says so (the call it was cut off in has no result yet)
    assert by_id["cut-1"].trajectory.stop_reason == "cut_off"


def test_secrets_the_trace_carries_are_masked_everywhere() -> None:
    traces = read_traces(FIXTURES / "edge_cases.otlp.jsonl")
    dumped = json.dumps([(c.trajectory.model_dump(mode="json"), c.notes) for c in traces.conversations])
    for secret in ("sk-live-SECRETSECRET123", "SECRETSECRET", "hunter2pass", "abcdef123456"):
        assert secret not in dumped
    assert traces.conversations[0].trajectory.turns[0].user == "My key is ***, where is order 9?"


def _request(spans: list[dict[str, Any]]) -> str:
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}) + "\n"


def _chat(span_id: str, inputs: list[Any], outputs: list[Any], start: int) -> dict[str, Any]:
    return {"traceId": "6" * 32, "spanId": span_id, "name": "chat m", "startTimeUnixNano": str(start),
            "endTimeUnixNano": str(start + 10**9),
            "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                           {"key": "gen_ai.input.messages", "value": {"stringValue": json.dumps(inputs)}},
                           {"key": "gen_ai.output.messages", "value": {"stringValue": json.dumps(outputs)}}]}


def test_huge_payloads_are_capped_like_a_live_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALS_MAX_FIELD_CHARS", "1000")
    huge = "x" * 50_000
    user = {"role": "user", "parts": [{"type": "text", "content": "dump it " + huge}]}
    call = {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "dump", "arguments": {}}]}
    tool = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": huge}]}
    path = tmp_path / "big.jsonl"
    path.write_text(_request([
        _chat("1" * 16, [user], [call], 10**18),
        _chat("2" * 16, [user, call, tool], [{"role": "assistant", "parts": [{"type": "text", "content": huge}]}],
              10**18 + 2 * 10**9)]), encoding="utf-8")
    (conversation,) = read_traces(path).conversations
    turn = conversation.trajectory.turns[0]
    for text in (turn.user, turn.tool_calls[0].result, turn.answer):
        assert text is not None and len(text) < 1200 and "truncated by evals: " in text


def test_nothing_readable_is_one_error_naming_each_line(tmp_path: Path) -> None:
    path = tmp_path / "notes.jsonl"
    path.write_text('{"id": "s1", "task": "a session"}\nplain text\n', encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        read_traces(path)
    problems = caught.value.problems
    assert "no conversation could be read" in problems[0]
    assert problems[1].startswith(f"{path}:1: not an OTLP/JSON ExportTraceServiceRequest")
    assert problems[2].startswith(f"{path}:2: not JSON")


def test_hex_and_base64_ids_and_ancestor_ids(tmp_path: Path) -> None:
    """protobuf's own JSON mapping writes ids as base64: read as the same span; a conversation id set on the
    root span reaches the model call below it."""
    import base64

    root = {"traceId": base64.b64encode(bytes.fromhex("7" * 32)).decode(), "spanId": "a" * 16, "name": "agent",
            "startTimeUnixNano": "1", "endTimeUnixNano": str(10**10),
            "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
                           {"key": "gen_ai.conversation.id", "value": {"stringValue": "conv-9"}}]}
    chat = _chat(base64.b64encode(bytes.fromhex("b" * 16)).decode(),
                 [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}],
                 [{"role": "assistant", "parts": [{"type": "text", "content": "hello"}]}], 2)
    chat["traceId"], chat["parentSpanId"] = "7" * 32, "a" * 16
    path = tmp_path / "b64.jsonl"
    path.write_text(_request([root, chat]), encoding="utf-8")
    (conversation,) = read_traces(path).conversations
    assert conversation.id == "conv-9" and conversation.notes == []
    assert conversation.trajectory.final_answer == "hello"


def test_a_trimmed_history_still_starts_a_new_turn(tmp_path: Path) -> None:
    """An application that sends only the latest messages (a sliding window) still has two turns."""
    def user(text: str) -> dict[str, Any]:
        return {"role": "user", "parts": [{"type": "text", "content": text}]}

    def said(text: str) -> dict[str, Any]:
        return {"role": "assistant", "parts": [{"type": "text", "content": text}]}

    path = tmp_path / "window.jsonl"
    first, second = _chat("1" * 16, [user("hi")], [said("hello")], 10**18), \
        _chat("2" * 16, [user("bye")], [said("goodbye")], 10**18 + 5 * 10**9)
    path.write_text(_request([first, second]), encoding="utf-8")
    (conversation,) = read_traces(path).conversations
    assert [(t.user, t.answer) for t in conversation.trajectory.turns] == [("hi", "hello"), ("bye", "goodbye")]


def _partial(span_id: str, inputs: list[Any] | None, outputs: list[Any] | None, start: int) -> dict[str, Any]:
    """A chat span of conversation 'partial-<trace>' that records only the sides given."""
    span = _chat(span_id, inputs or [], outputs or [], start)
    span["attributes"] = [a for a in span["attributes"]
                          if not (a["key"] == "gen_ai.input.messages" and inputs is None)
                          and not (a["key"] == "gen_ai.output.messages" and outputs is None)]
    return span


def test_a_reply_or_a_tool_result_never_recorded_is_not_graded(tmp_path: Path) -> None:
    """Output capture off (inputs recorded, replies not), or a tool result no span nor request carries: the
    conversation is said not gradable, never rebuilt as an empty answer or an empty result."""
    user = {"role": "user", "parts": [{"type": "text", "content": "Which host?"}]}
    said = {"role": "assistant", "parts": [{"type": "text", "content": "localhost"}]}
    call = {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "lookup", "arguments": {}}]}
    empty = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": ""}]}
    no_reply = _partial("1" * 16, [user], None, 10**18)
    no_result = [_partial("2" * 16, [user], [call], 10**18), _partial("3" * 16, [user, call], [said], 10**18 + 10**9)]
    empty_result = [_partial("4" * 16, [user], [call], 10**18),
                    _partial("5" * 16, [user, call, empty], [said], 10**18 + 10**9)]
    whole = _chat("6" * 16, [user], [said], 10**18)
    for trace, spans in (("a", [no_reply]), ("b", no_result), ("c", empty_result), ("d", [whole])):
        for span in spans:
            span["traceId"] = trace * 32
    path = tmp_path / "partial.jsonl"
    path.write_text(_request([no_reply, *no_result, *empty_result, whole]), encoding="utf-8")
    traces = read_traces(path)
    by_id = {c.id: c for c in traces.conversations}
    assert [c.id for c in traces.complete] == ["c" * 32, "d" * 32]  # an empty result that was recorded is one
    assert not by_id["a" * 32].complete and by_id["a" * 32].trajectory.stop_reason != "empty_answer"
    assert "model calls were not recorded (content capture was off" in by_id["a" * 32].problem()
    assert not by_id["b" * 32].complete and "was never recorded" in by_id["b" * 32].problem()
    assert by_id["c" * 32].notes == [] and by_id["c" * 32].trajectory.tool_calls[0].result == ""
