"""OpenTelemetry: spans per run, sample, model call and tool call, checked with the SDK's in-memory exporter."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT, write_suite
from tests.scripted_server import ScriptedServer, agent_script, call, completion

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from evals_cli import load_suite, run_suite  # noqa: E402
from evals_cli.runner import RunOptions  # noqa: E402


def test_spans_with_genai_attributes_and_grades(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script({"host": [call("read_file", {"path": ".env"}),
                                           completion(content="localhost", prompt_tokens=30, completion_tokens=4)]})
    rows = [{"id": "a", "input": "db host?", "ground_truth": "localhost", "expected_tool_order": ["read_file"]},
            {"id": "b", "input": "db host again?", "ground_truth": "localhost"}]
    suite = load_suite(write_suite(tmp_path, rows, base_url=server.url))
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    outcome = run_suite(suite, RunOptions(output=tmp_path / "out", otel=True, tracer_provider=provider))
    assert outcome.exit_code == 0
    spans = {s.name: s for s in exporter.get_finished_spans()}
    run = spans["evals run test-suite"]
    sample = spans["sample a"]
    assert sample.parent.span_id == run.context.span_id
    assert sample.attributes["evals.grade.order"] == 1.0 and sample.attributes["evals.passed"] is True
    assert "evals.grade.order" not in spans["sample b"].attributes  # no expected order: n/a, not a 1.0
    assert sample.attributes["gen_ai.usage.input_tokens"] == 40
    chats = [s for s in exporter.get_finished_spans() if s.name == "chat scripted"]
    assert len(chats) == 4  # two steps for each of the two samples
    assert {c.attributes["gen_ai.request.model"] for c in chats} == {"scripted"}
    assert all(c.parent.span_id in (sample.context.span_id, spans["sample b"].context.span_id) for c in chats)
    assert sorted(c.attributes["gen_ai.usage.output_tokens"] for c in chats) == [4, 4, 5, 5]
    tools = [s for s in exporter.get_finished_spans() if s.name == "execute_tool read_file"]
    assert len(tools) == 2 and tools[0].attributes["gen_ai.tool.name"] == "read_file"
    assert chats[0].start_time <= chats[0].end_time and sample.start_time <= chats[0].start_time
    assert run.attributes["evals.gate.passed"] is True and run.attributes["evals.samples"] == 2


def test_without_the_extra_otel_says_how_to_install(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, [{"id": "a", "input": "x"}])
    probe = ("import sys; sys.modules['opentelemetry'] = None; sys.modules['opentelemetry.sdk'] = None\n"
             "sys.modules['opentelemetry.sdk.trace'] = None\n"
             f"sys.argv = ['evals', 'run', {str(suite)!r}, '--otel', '-o', {str(tmp_path / 'out')!r}]\n"
             "from evals_cli.cli import main\nmain()")
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True,
                            env={"PATH": "/usr/bin", "NO_COLOR": "1"})
    assert result.returncode == 2
    assert "pip install 'evals-cli[otel]'" in result.stderr and "Traceback" not in result.stderr

