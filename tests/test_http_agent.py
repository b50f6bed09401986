"""`kind: http`: an agent behind its own HTTP API on 127.0.0.1, one POST per user turn with the session id,
through the openai SDK's client (retries, masking); its spans, sent as OTLP/JSON in the trace whose traceparent
evals-cli sent, rebuild the trajectory; replayed from --record with no request."""

from __future__ import annotations

import json
import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers import read_jsonl, run_cli
from tests.real_model_server import free_port


def _attr(key: str, value: Any) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value if isinstance(value, str) else json.dumps(value)}}


def _span(trace: str, n: int, name: str, attrs: dict[str, Any], parent: str | None = None) -> dict[str, Any]:
    span = {"traceId": trace, "spanId": f"{n:016x}", "name": name, "startTimeUnixNano": str(1_000 + n),
            "endTimeUnixNano": str(2_000 + n), "attributes": [_attr(k, v) for k, v in attrs.items()]}
    return {**span, "parentSpanId": parent} if parent else span


def _spans(trace: str, question: str) -> list[dict[str, Any]]:
    """What an instrumented agent reports for one turn: a chat call asking for a tool, the tool run, the answer."""
    user = {"role": "user", "parts": [{"type": "text", "content": question}]}
    ask = {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "read_file",
                                           "arguments": {"path": "config.toml"}}]}
    tool = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "port = 5433"}]}
    done = {"role": "assistant", "parts": [{"type": "text", "content": "The port is 5433."}]}
    root = f"{1:016x}"
    return [_span(trace, 1, "invoke_agent helper", {"gen_ai.operation.name": "invoke_agent",
                                                     "gen_ai.agent.name": "helper"}),
            _span(trace, 2, "chat m", {"gen_ai.operation.name": "chat", "gen_ai.input.messages": [user],
                                       "gen_ai.output.messages": [ask]}, root),
            _span(trace, 3, "execute_tool read_file", {"gen_ai.operation.name": "execute_tool",
                                                       "gen_ai.tool.name": "read_file", "gen_ai.tool.call.id": "c1",
                                                       "gen_ai.tool.call.arguments": {"path": "config.toml"},
                                                       "gen_ai.tool.call.result": "port = 5433"}, root),
            _span(trace, 4, "chat m", {"gen_ai.operation.name": "chat", "gen_ai.input.messages": [user, ask, tool],
                                       "gen_ai.output.messages": [done]}, root)]


class Agent:
    """The HTTP agent: answers {"session_id", "message"} with {"output": {"text"}} and exports its spans."""

    def __init__(self, otlp_port: int) -> None:
        self.otlp_port = otlp_port
        self.unavailable = 0
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        agent = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                agent.bodies.append(body)
                if agent.unavailable > 0:  # overloaded: the client retries as with a model endpoint
                    agent.unavailable -= 1
                    self.send_response(503)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                agent.headers.append({k.lower(): v for k, v in self.headers.items()})
                trace = self.headers["traceparent"].split("-")[1]
                export = {"resourceSpans": [{"resource": {"attributes": []},
                                             "scopeSpans": [{"spans": _spans(trace, body["message"])}]}]}
                request = urllib.request.Request(f"http://127.0.0.1:{otlp_port}/v1/traces",
                                                 json.dumps(export).encode(), {"Content-Type": "application/json"})
                try:
                    with urllib.request.urlopen(request, timeout=10) as response:
                        response.read()
                except OSError:  # no receiver (telemetry: false): an agent's exporter drops the spans
                    pass
                reply = json.dumps({"output": {"text": "The port is 5433."}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/chat"


@pytest.fixture
def agent() -> Iterator[Agent]:
    running = Agent(free_port())
    yield running
    running.server.shutdown()
    running.server.server_close()


def _suite(tmp: Path, agent: Agent, **target: Any) -> Path:
    (tmp / "rows.jsonl").write_text(json.dumps({"id": "port", "input": "Which port?", "ground_truth": "5433"}) + "\n",
                                    encoding="utf-8")
    suite = {"name": "http", "dataset": "rows.jsonl",
             "target": {"kind": "http", "url": agent.url, "reply_path": "output.text", "otlp_port": agent.otlp_port,
                        "headers": {"Authorization": "Bearer sk-agent-secret-123456"}, **target},
             "graders": {"order": {"kind": "tool_order", "expected": ["read_file"], "mode": "strict"},
                         "answer": {"kind": "match", "function": "contains", "extractor": "last_assistant"}},
             "gate": {"kind": "weighted_average", "aggregation": "avg_score", "op": "gte", "value": 0.5}}
    (tmp / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    return tmp / "suite.yaml"


def test_each_turn_is_posted_with_its_session_and_graded_on_the_agents_spans(tmp_path: Path, agent: Agent) -> None:
    suite, recording = _suite(tmp_path, agent), tmp_path / "rec.jsonl"
    live = run_cli("run", str(suite), "-o", str(tmp_path / "live"), "--record", str(recording))
    assert live.returncode == 0, live.stdout + live.stderr
    assert f"OTLP receiver for the agent's spans: http://127.0.0.1:{agent.otlp_port}/v1/traces" in live.stderr
    row = read_jsonl(tmp_path / "live" / "results.jsonl")[0]
    assert agent.bodies == [{"session_id": agent.bodies[0]["session_id"], "message": "Which port?"}]
    assert agent.bodies[0]["session_id"].startswith("port-")
    assert agent.headers[0]["authorization"] == "Bearer sk-agent-secret-123456"
    assert agent.headers[0]["baggage"] == f"evals.episode={agent.bodies[0]['session_id']}"
    calls = [c for s in row["trajectory"]["turns"][0]["steps"] for c in s["tool_calls"]]
    assert [(c["name"], c["arguments"], c["result"]) for c in calls] == [
        ("read_file", {"path": "config.toml"}, "port = 5433")]
    assert row["grades"]["order"]["score"] == 1.0 and row["grades"]["answer"]["score"] == 1.0
    assert "sk-agent-secret-123456" not in recording.read_text() + live.stdout + live.stderr
    replay = run_cli("run", str(suite), "-o", str(tmp_path / "replay"), "--replay", str(recording))
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert len(agent.bodies) == 1  # served from the recording: no request
    again = read_jsonl(tmp_path / "replay" / "results.jsonl")[0]
    assert again["trajectory"]["turns"] == row["trajectory"]["turns"]


def test_a_reply_path_that_is_not_there_is_the_samples_error_naming_it(tmp_path: Path, agent: Agent) -> None:
    result = run_cli("run", str(_suite(tmp_path, agent, reply_path="reply.text", telemetry=False)),
                     "-o", str(tmp_path / "out"))
    row = read_jsonl(tmp_path / "out" / "results.jsonl")[0]
    assert "nothing at 'reply.text' (no 'reply'; found ['output'])" in row["error"]["message"]
    assert result.returncode == 3


def test_a_503_is_retried_as_for_a_model_endpoint(tmp_path: Path, agent: Agent) -> None:
    agent.unavailable = 1
    result = run_cli("run", str(_suite(tmp_path, agent, telemetry=False)), "-o", str(tmp_path / "out"))
    row = read_jsonl(tmp_path / "out" / "results.jsonl")[0]
    assert len(agent.bodies) == 2 and agent.bodies[0] == agent.bodies[1]  # the same turn, sent again
    assert row["error"] is None and row["trajectory"]["turns"][0]["steps"][-1]["content"] == "The port is 5433."
    assert row["grades"]["order"]["applicable"] is False and result.returncode == 0, result.stdout


def _export(trace: str, question: str) -> dict[str, Any]:
    return {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": _spans(trace, question)}]}]}


def test_spans_that_do_not_rebuild_every_turn_leave_the_replies_and_say_why() -> None:
    from evals_cli.models.trajectory import Step, Trajectory, Turn
    from evals_cli.targets.external import observe

    trajectory = Trajectory(turns=[Turn(user=u, steps=[Step(content=f"re: {u}")]) for u in ("Which port?", "Host?")])
    observe(trajectory, [_export("ab" * 16, "Which port?")], "ep")
    assert trajectory.not_observed == "trajectory not observed (the agent's spans hold 1 turn(s), the conversation 2)"
    assert [[s.content for s in t.steps] for t in trajectory.turns] == [["re: Which port?"], ["re: Host?"]]


def test_the_reply_the_user_was_shown_stays_the_answer() -> None:
    from evals_cli.models.trajectory import Step, Trajectory, Turn
    from evals_cli.targets.external import observe

    trajectory = Trajectory(turns=[Turn(user="Which port?", steps=[Step(content="It is 5433, I think.")])])
    observe(trajectory, [_export("cd" * 16, "Which port?")], "ep")
    assert trajectory.not_observed is None
    assert [c.name for c in trajectory.turns[0].tool_calls] == ["read_file"]
    assert trajectory.turns[0].answer == "It is 5433, I think."  # the spans' last text differs: the reply wins
