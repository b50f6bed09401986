"""Issue 37 item 7 (and issue 35 item 7): a file's format is recognised from its content as a whole, not its
first line; a `kind: traces` target always reads its file as traces; duplicate span ids are a warning naming
them, never a silent merge."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from evals_cli.traces import read_traces
from tests.helpers import read_jsonl, run_cli

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "traces"
GENAI = FIXTURES / "genai.otlp.jsonl"


def _suite(tmp: Path, trace: Path) -> Path:
    (tmp / "suite.yaml").write_text(yaml.safe_dump({
        "name": "traced", "target": {"kind": "traces", "path": str(trace)},
        "graders": {"loops": {"kind": "no_loops"}, "forbidden": {"kind": "forbidden_tools"}},
        "gate": {"kind": "weighted_average", "aggregation": "avg_score", "op": "gte", "value": 0.5}}),
        encoding="utf-8")
    return tmp / "suite.yaml"


def test_a_trace_file_whose_first_line_is_not_otlp_is_still_read_as_traces(tmp_path: Path) -> None:
    trace = tmp_path / "traces.jsonl"  # a stray line first: a log message, then the good conversations
    trace.write_text('{"level": "info", "msg": "exporter started"}\n' + GENAI.read_text(encoding="utf-8"),
                     encoding="utf-8")
    run = run_cli("run", str(_suite(tmp_path, trace)), "-o", str(tmp_path / "out"))
    assert run.returncode == 0, run.stderr
    assert [r["sample_id"] for r in read_jsonl(tmp_path / "out" / "results.jsonl")] == ["order-42", "order-7"]
    assert f"warning: {trace}:1: not an OTLP/JSON ExportTraceServiceRequest" in run.stderr
    analyzed = run_cli("analyze", str(trace), "--no-judge", "--json", "-o", str(tmp_path / "an"))
    assert [s["session_id"] for s in json.loads(analyzed.stdout)["sessions"]] == ["order-42", "order-7"]


def test_detection_looks_past_unreadable_lines(tmp_path: Path) -> None:
    trace = tmp_path / "spans.txt"
    trace.write_text("\x00garbage that is no JSON\n\n{not json either\n" + GENAI.read_text(encoding="utf-8"),
                     encoding="utf-8")
    analyzed = run_cli("analyze", str(trace), "--no-judge", "--json", "-o", str(tmp_path / "an"))
    assert analyzed.returncode == 0, analyzed.stderr
    assert [s["session_id"] for s in json.loads(analyzed.stdout)["sessions"]] == ["order-42", "order-7"]


def test_a_session_file_is_still_a_session_file(tmp_path: Path) -> None:
    """Content as a whole: a file of sessions with one trace line among them is sessions (its trace line is then
    that file's problem, named at its line)."""
    sessions = tmp_path / "sessions.jsonl"
    good = (Path(__file__).resolve().parent.parent / "datasets" / "multi_agent_sessions.jsonl").read_text()
    sessions.write_text(good + GENAI.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    result = run_cli("analyze", str(sessions), "--no-judge", "-o", str(tmp_path / "an"))
    assert result.returncode == 2 and f"{sessions}:9" in result.stderr  # read as sessions: line 9 is named


def test_a_traces_target_reads_its_file_as_traces_whatever_it_looks_like(tmp_path: Path) -> None:
    """More dataset-looking lines than trace lines: `evals analyze` would not guess traces, but a traces target's
    file is a trace file by declaration."""
    trace = tmp_path / "traces.jsonl"
    first = GENAI.read_text(encoding="utf-8").splitlines()[0]
    trace.write_text('{"id": "a", "input": "hi"}\n{"id": "b", "input": "ho"}\n' + first + "\n", encoding="utf-8")
    run = run_cli("run", str(_suite(tmp_path, trace)), "-o", str(tmp_path / "out"))
    assert [r["sample_id"] for r in read_jsonl(tmp_path / "out" / "results.jsonl")] == ["order-42"]
    assert "not an OTLP/JSON ExportTraceServiceRequest" in run.stderr and run.returncode == 0


def test_duplicate_span_ids_are_a_warning_naming_them_and_read_once(tmp_path: Path) -> None:
    lines = GENAI.read_text(encoding="utf-8").splitlines()
    trace = tmp_path / "twice.jsonl"
    trace.write_text("\n".join([*lines, lines[0]]) + "\n", encoding="utf-8")  # an export written twice
    traces = read_traces(trace)
    once = read_traces(GENAI)
    assert [c.trajectory.model_dump() for c in traces.conversations] == \
        [c.trajectory.model_dump() for c in once.conversations]  # no model call counted twice
    (warning,) = [p for p in traces.problems if "span id(s) appear more than once" in p]
    first_span = json.loads(lines[0])["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert first_span["spanId"] in warning and f"{trace}:{len(lines) + 1}" in warning and f"{trace}:1" in warning
    run = run_cli("run", str(_suite(tmp_path, trace)), "-o", str(tmp_path / "out"))
    assert "span id(s) appear more than once" in run.stderr
