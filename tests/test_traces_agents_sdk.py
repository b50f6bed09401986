"""Issue 35 item 6: traces of the OpenAI Agents SDK. Recorded with the real `openai-agents` package against the
scripted server (tests/fixtures/traces/record_agents_sdk.py): the SDK's own export format is read, and through
OpenInference the workflow's span is the run, not an agent, and the user's message is kept."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from evals_cli.traces import Conversation, read_traces
from tests.helpers import read_jsonl, run_cli
from tests.test_traces_reader import shape

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "traces"
EXPORT = FIXTURES / "agents_sdk.export.jsonl"
OPENINFERENCE = FIXTURES / "agents_sdk.openinference.otlp.jsonl"
LOOKUP = '{"order_id": "42", "status": "delivered", "total": 30}'
REFUND_TURN = {"user": "Order 42 arrived broken, please refund it.", "steps": [
    ("support", None, [("transfer_to_billing", {}, '{"assistant": "billing"}', False, False)]),
    ("billing", None, [("refund_order", {"order_id": "42"}, '{"refunded": true, "amount": 30}', False, False)]),
    ("billing", "Refunded 30 EUR for order 42.", [])]}


def _turns(conversation: Conversation) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = shape(conversation)["turns"]
    return turns


def test_the_sdk_export_is_read_as_its_conversations() -> None:
    traces = read_traces(EXPORT)
    assert traces.problems == []
    order, refund = traces.conversations
    # the SDK's group_id joins the two runs (two traces) of one conversation
    assert order.id == "sdk-order-42" and order.conventions == ["openai-agents generation"]
    assert _turns(order) == [
        {"user": "Where is my order 42?", "steps": [
            ("support", None, [("lookup_order", {"order_id": "42"}, LOOKUP, False, False)]),
            ("support", "Order 42 was delivered.", [])]},
        {"user": "Is order 42 paid?", "steps": [("support", "Yes, order 42 is paid: 30 EUR.", [])]}]
    assert refund.id == "sdk-refund-42" and _turns(refund) == [REFUND_TURN]
    # agents with the tools they were offered (a handoff is the SDK's transfer_to_<agent> tool); the handoff span
    # names who handed work to billing, and billing was handed the conversation
    assert shape(refund)["agents"] == {"support": (None, ["lookup_order", "transfer_to_billing"]),
                                       "billing": ("support", ["refund_order"])}
    assert refund.handoffs == [("support", "billing", 0)]
    assert "user: Order 42 arrived broken, please refund it." in refund.handoff_contexts[("billing", 0)]
    usage = refund.trajectory.usage()
    assert (usage.prompt_tokens, usage.completion_tokens) == (30, 15)
    assert all(c.complete and c.notes == [] for c in traces.conversations)


def test_openinference_reads_the_workflow_as_the_run_and_keeps_the_user(tmp_path: Path) -> None:
    traces = read_traces(OPENINFERENCE)
    assert traces.problems == []
    first, follow_up, refund = traces.conversations
    assert _turns(first)[0]["user"] == "Where is my order 42?"  # kept: the workflow span is no agent above it
    assert set(first.agents) == {"support"} and first.root_agent == "support"
    assert _turns(refund) == [REFUND_TURN]
    assert refund.handoffs == [("support", "billing", 0)] and refund.agents["billing"].parent == "support"
    # a run given its history: the earlier turn is not in this trace, and is not made up
    assert [t["user"] for t in _turns(follow_up)] == ["Is order 42 paid?"]
    assert "came as history" in follow_up.notes[0]
    # the analysis sees the task: no false intent drift, no advice about it, and a handoff that carried it
    result = run_cli("analyze", str(OPENINFERENCE), "--no-judge", "--json", "-o", str(tmp_path / "run"))
    sessions = json.loads(result.stdout)["sessions"]
    assert [s["task"] for s in sessions] == ["Where is my order 42?", "Is order 42 paid?",
                                             "Order 42 arrived broken, please refund it."]
    assert all(s["intent_drift_score"] <= 0.5 and not any("strays" in r for r in s["recommendations"])
               for s in sessions)
    assert sessions[2]["coordination"]["lost_handoffs"] == []


def test_evals_analyze_and_a_traces_suite_read_the_sdk_export(tmp_path: Path) -> None:
    analyzed = run_cli("analyze", str(EXPORT), "--no-judge", "--json", "-o", str(tmp_path / "an"))
    assert analyzed.returncode == 0, analyzed.stderr
    assert [s["session_id"] for s in json.loads(analyzed.stdout)["sessions"]] == ["sdk-order-42", "sdk-refund-42"]
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump({
        "name": "sdk", "target": {"kind": "traces", "path": str(EXPORT)},
        "graders": {"loops": {"kind": "no_loops"}, "forbidden": {"kind": "forbidden_tools"}}}), encoding="utf-8")
    run = run_cli("run", str(tmp_path / "suite.yaml"), "-o", str(tmp_path / "out"))
    rows = {r["sample_id"]: r for r in read_jsonl(tmp_path / "out" / "results.jsonl")}
    assert run.returncode == 0 and set(rows) == {"sdk-order-42", "sdk-refund-42"}
    assert all(r["passed"] is True and r["error"] is None for r in rows.values())


def test_the_export_item_by_item_reads_the_same(tmp_path: Path) -> None:
    """The exporter's payloads unwrapped, one trace or span object per line."""
    items = [item for line in EXPORT.read_text(encoding="utf-8").splitlines() for item in json.loads(line)["data"]]
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(i) + "\n" for i in items), encoding="utf-8")
    assert [shape(c) for c in read_traces(path).conversations] == [shape(c) for c in read_traces(EXPORT).conversations]


def test_a_responses_api_export_says_why_it_cannot_be_graded(tmp_path: Path) -> None:
    """The SDK's export of a Responses API call holds no messages: said, never read as an empty conversation."""
    lines = []
    for line in EXPORT.read_text(encoding="utf-8").splitlines():
        payload = json.loads(line)
        for item in payload["data"]:
            data = item.get("span_data") or {}
            if data.get("type") == "generation":
                item["span_data"] = {"type": "response", "response_id": "resp_1", "usage": data.get("usage")}
        lines.append(json.dumps(payload))
    path = tmp_path / "responses.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = run_cli("analyze", str(path), "--no-judge", "-o", str(tmp_path / "run"))
    assert result.returncode == 2
    assert "export of a Responses API call holds no messages" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("form", ["sdk", pytest.param("openinference", marks=pytest.mark.slow)])
def test_a_fresh_recording_with_the_installed_sdk_reads_the_same(form: str, tmp_path: Path) -> None:
    """The committed fixtures are what today's openai-agents (and its OpenInference instrumentation) write: the
    SDK's export is recorded live in the default run, the OpenInference one with the slow tests (`make test-slow`)."""
    out = tmp_path / "trace.jsonl"
    subprocess.run([sys.executable, str(FIXTURES / "record_agents_sdk.py"), form, str(out)], check=True,
                   timeout=120)
    committed = EXPORT if form == "sdk" else OPENINFERENCE

    def same(c: Conversation) -> Any:  # the ids OpenInference gives are trace ids, new in every recording
        return {**shape(c), "id": c.id if form == "sdk" else None}

    assert [same(c) for c in read_traces(out).conversations] == [same(c) for c in read_traces(committed).conversations]


def test_a_tripped_guardrail_is_noted(tmp_path: Path) -> None:
    text = EXPORT.read_text(encoding="utf-8").replace('"triggered": false', '"triggered": true', 1)
    path = tmp_path / "tripped.jsonl"
    path.write_text(text, encoding="utf-8")
    order, refund = read_traces(path).conversations
    assert order.notes == ["guardrail 'polite' tripped"] and refund.notes == []
