"""The loopback OTLP/HTTP receiver (evals_cli/traces/receiver.py): OTLP/JSON and protobuf (the OpenTelemetry SDK's
own encoder) taken on 127.0.0.1, an episode's spans told apart by its resource tag or session id, bad bodies
refused with a reason kept."""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from evals_cli.traces.otlp import spans_of_request
from evals_cli.traces.receiver import OtlpReceiver
from tests.helpers import run_cli


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    running = OtlpReceiver().start()
    yield running
    running.stop()


def _post(url: str, body: bytes, content_type: str) -> int:
    request = urllib.request.Request(url, body, {"Content-Type": content_type})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def _sdk_spans(episode: str | None, session: str | None) -> bytes:
    exporter = InMemorySpanExporter()
    attributes = {"evals.episode": episode} if episode else {}
    provider = TracerProvider(resource=Resource.create(attributes))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("t").start_as_current_span("invoke_agent a") as span:
        if session:
            span.set_attribute("session.id", session)
        with provider.get_tracer("t").start_as_current_span("chat m"):
            pass
    return encode_spans(exporter.get_finished_spans()).SerializeToString()


def test_protobuf_from_the_sdk_is_read_and_kept_per_episode(receiver: OtlpReceiver) -> None:
    url = f"{receiver.endpoint}/v1/traces"
    assert _post(url, _sdk_spans("ep-1", None), "application/x-protobuf") == 200
    assert _post(url, _sdk_spans(None, "ep-2"), "application/x-protobuf") == 200
    mine = receiver.requests_for("ep-1")
    assert [s.name for r in mine for s in spans_of_request(r, "x")] == ["chat m", "invoke_agent a"]
    by_session = [s for r in receiver.requests_for("ep-2") for s in spans_of_request(r, "x")]
    assert {s.name for s in by_session} == {"chat m", "invoke_agent a"}  # the whole trace of the session's span
    assert receiver.requests_for("ep-3") == []


def test_json_is_read_and_a_bad_body_is_refused_with_its_reason(receiver: OtlpReceiver) -> None:
    url = f"{receiver.endpoint}/v1/traces"
    span = {"traceId": "ab" * 16, "spanId": "cd" * 8, "name": "chat m", "startTimeUnixNano": "1",
            "endTimeUnixNano": "2", "attributes": []}
    body = {"resourceSpans": [{"resource": {"attributes": [{"key": "evals.episode", "value": {"stringValue": "e"}}]},
                               "scopeSpans": [{"spans": [span]}]}]}
    assert _post(url, json.dumps(body).encode(), "application/json") == 200
    assert len(receiver.requests_for("e")) == 1
    assert _post(url, b"{not json", "application/json") == 400
    assert _post(url, b"\xff\x00garbage", "application/x-protobuf") == 400
    assert _post(f"{receiver.endpoint}/v1/metrics", b"{}", "application/json") == 404
    assert len(receiver.problems) == 2 and "could not be read" in receiver.problems[0]
    assert receiver.accepted == 1 and receiver.refused == 2


def test_without_the_otel_extra_a_suite_with_telemetry_is_exit_2_naming_the_install(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.proto.collector.trace.v1.trace_service_pb2", None)  # not installed
    (tmp_path / "rows.jsonl").write_text('{"id": "a", "input": "hi"}\n', encoding="utf-8")
    suite = {"name": "x", "dataset": "rows.jsonl", "target": {"kind": "command", "command": [sys.executable, "-c", ""]},
             "graders": {"loops": {"kind": "no_loops"}},
             "gate": {"kind": "weighted_average", "aggregation": "avg_score", "op": "gte", "value": 0.5}}
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite), encoding="utf-8")
    result = run_cli("run", str(tmp_path / "suite.yaml"), "-o", str(tmp_path / "out"))
    assert result.returncode == 2 and "pip install 'evals-cli[otel]'" in result.stderr
    assert "telemetry: false" in result.stderr and "Traceback" not in result.stderr
