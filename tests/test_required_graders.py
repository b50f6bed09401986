"""Issue 11 items 1 and 13(c): a sample's verdict is one rule. The weighted score against the gate's per-sample
pass value, and every required grader at or above its own threshold (tools_avoided by default), and no call to a
tool that was never offered. The row, the results, JUnit and the HTML report name what failed the sample."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from evals_cli.gate.gate import Gate
from evals_cli.graders.kinds.trajectory import ToolOrderSpec, ToolsAvoidedSpec
from evals_cli.models.results import Grade
from evals_cli.models.specs import GateSpec
from evals_cli.models.trajectory import Step, ToolCall, Trajectory, Turn
from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, call, text

ROWS = [
    {"id": "host", "input": "db host?", "ground_truth": "localhost", "expected_tool_order": ["read_file"]},
    {"id": "math", "input": "math: 2+2?", "ground_truth": "4", "forbidden_tools": ["read_file", "list_files"]},
]
# a weighted gate lenient enough that one zero among the graders that applied still passes on the weighted rule alone
# (an n/a grade is left out of the weighted score: one 1.0 and one 0.0 weigh 0.5)
LENIENT = {"kind": "weighted_average", "aggregation": "avg_score", "op": "gte", "value": 0.5, "pass_value": 0.5}


def _run(server: ScriptedServer, tmp_path: Path, replies: dict[str, list[Any]], *,
         graders: dict[str, Any] | None = None, gate: dict[str, Any] | None = None,
         rows: list[dict[str, Any]] | None = None) -> tuple[Any, dict[str, dict[str, Any]]]:
    server.script = agent_script(replies)
    suite = write_suite(tmp_path, rows or ROWS, base_url=server.url, graders=graders, gate=gate or LENIENT)
    out = tmp_path / "out"
    result = run_cli("run", str(suite), "-o", str(out), "--junit", str(tmp_path / "junit.xml"))
    lines = {r["sample_id"]: r for r in read_jsonl(out / "results.jsonl")}
    return result, lines


def _row(stdout: str, sample: str) -> str:
    return next(line for line in stdout.splitlines() if line.strip().startswith(sample))


def _junit_failure(tmp_path: Path, sample: str) -> ET.Element | None:
    root = ET.parse(tmp_path / "junit.xml").getroot()
    case = next(c for c in root.iter("testcase") if c.get("name") == sample)
    return case.find("failure")


def test_forbidden_tool_fails_the_sample_whatever_its_weighted_score(server: ScriptedServer, tmp_path: Path) -> None:
    # math: right answer (1.0), order n/a (left out), a forbidden read_file (0.0): weighted 0.5 >= 0.5
    result, lines = _run(server, tmp_path, {"host": [call("read_file", {"path": ".env"}), text("localhost")],
                                            "math": [call("read_file", {"path": "calc"}), text("4")]})
    math = lines["math"]
    assert math["score"] == pytest.approx(0.5) and math["grades"]["avoided"]["score"] == 0.0
    assert math["passed"] is False
    assert [(f["rule"], f["grader"]) for f in math["failed_by"]] == [("required", "avoided")]
    assert "avoided 0.00 < 1 (required)" == math["failed_by"][0]["reason"]
    assert "✗ avoided" in _row(result.stdout, "math")
    failure = _junit_failure(tmp_path, "math")
    assert failure is not None and "failed by avoided" in failure.get("message", "")
    assert lines["host"]["passed"] is True and lines["host"]["failed_by"] == []


def test_required_grader_named_by_the_suite_fails_a_guess(server: ScriptedServer, tmp_path: Path) -> None:
    # host answered without reading the file: answer 1.0, order 0.0, avoided n/a → weighted 0.5 passes alone
    graders = {"answer": {"kind": "tool", "function": "contains"}, "order": {"kind": "tool_order", "required": True},
               "avoided": {"kind": "tools_avoided"}}
    result, lines = _run(server, tmp_path, {"host": [text("It is localhost.")], "math": [text("4")]}, graders=graders)
    host = lines["host"]
    assert host["score"] == pytest.approx(0.5) and host["passed"] is False
    assert [f["grader"] for f in host["failed_by"]] == ["order"]
    assert "✗ order" in _row(result.stdout, "host")
    assert result.returncode == 0  # the run-level gate (avg 0.67 >= 0.5) is another question: it still passes
    summary_line = next(line for line in result.stdout.splitlines() if line.startswith("2 samples"))
    assert "1 passed, 1 failed" in summary_line


def test_required_false_opts_out_of_the_tools_avoided_default(server: ScriptedServer, tmp_path: Path) -> None:
    graders = {"answer": {"kind": "tool", "function": "contains"}, "order": {"kind": "tool_order"},
               "avoided": {"kind": "tools_avoided", "required": False}}
    _, lines = _run(server, tmp_path, {"host": [call("read_file", {"path": ".env"}), text("localhost")],
                                       "math": [call("read_file", {"path": "calc"}), text("4")]}, graders=graders)
    assert lines["math"]["passed"] is True and lines["math"]["failed_by"] == []


def test_sample_pass_all_needs_every_grader_at_its_threshold(server: ScriptedServer, tmp_path: Path) -> None:
    gate = {**LENIENT, "sample_pass": "all"}
    graders = {"answer": {"kind": "tool", "function": "contains"}, "order": {"kind": "tool_order"},
               "avoided": {"kind": "tools_avoided"}}
    result, lines = _run(server, tmp_path, {"host": [text("It is localhost.")], "math": [text("4")]},
                         graders=graders, gate=gate)
    assert lines["host"]["passed"] is False
    assert [(f["rule"], f["grader"]) for f in lines["host"]["failed_by"]] == [("threshold", "order")]
    assert lines["math"]["passed"] is True


def test_grader_threshold_is_its_own_pass_mark() -> None:
    specs = {"order": ToolOrderSpec(required=True, threshold=0.5), "avoided": ToolsAvoidedSpec()}
    gate = Gate(GateSpec(pass_value=0.9, value=0.1), ["order", "avoided"], specs=specs)
    # tools_avoided's own pass mark is 1 (forbidden means forbidden), whatever the gate's pass value
    assert gate.threshold("order") == 0.5 and gate.threshold("avoided") == 1.0
    assert Gate(GateSpec(pass_value=0.9), ["x"], specs={"x": ToolOrderSpec()}).threshold("x") == 0.9
    half = gate.judge_sample({"order": Grade(score=0.5), "avoided": Grade(score=1.0)})
    assert half.failed_by[0].rule == "weighted"  # 0.75 < 0.9, but order itself reached its 0.5
    assert all(f.grader != "order" for f in half.failed_by)
    low = gate.judge_sample({"order": Grade(score=0.4), "avoided": Grade(score=1.0)})
    assert any(f.grader == "order" and f.threshold == 0.5 for f in low.failed_by)


def test_tools_avoided_is_required_by_default_and_others_are_not() -> None:
    assert ToolsAvoidedSpec().is_required and not ToolsAvoidedSpec(required=False).is_required
    assert not ToolOrderSpec().is_required and ToolOrderSpec(required=True).is_required


def test_stop_behavior_keeps_its_list_of_required_tools() -> None:
    from evals_cli.graders.kinds.stop_behavior import StopBehaviorSpec

    spec = StopBehaviorSpec.model_validate({"kind": "stop_behavior", "required": ["read_*"]})
    assert spec.required_tools == ["read_*"] and spec.required is None
    flagged = StopBehaviorSpec.model_validate({"kind": "stop_behavior", "required": True, "required_tools": ["a"]})
    assert flagged.is_required and flagged.required_tools == ["a"]


def test_sample_pass_only_on_the_top_level_gate(tmp_path: Path) -> None:
    gate = {"kind": "logical", "operator": "and",
            "gates": [{"kind": "simple", "metric_key": "answer", "sample_pass": "all"}]}
    suite = write_suite(tmp_path, ROWS, gate=gate)
    result = run_cli("validate", str(suite))
    assert result.returncode == 2
    assert "sample_pass is read from the top-level gate only" in result.stdout + result.stderr


# --- 13(c): a call to a tool that was never offered ---------------------------------------------------------

def test_unknown_tool_call_fails_the_sample_by_default(server: ScriptedServer, tmp_path: Path) -> None:
    # "What is 2 + 2?" answered right after three calls to a made-up tool `add`: every grader is happy
    replies = {"host": [call("read_file", {"path": ".env"}), text("localhost")],
               "math": [call("add", {"a": 2, "b": 2}), call("add", {"a": 2, "b": 2}), call("add", {}), text("4")]}
    result, lines = _run(server, tmp_path, replies)
    math = lines["math"]
    assert all(g["score"] == 1.0 for g in math["grades"].values())
    assert math["passed"] is False
    assert [f["rule"] for f in math["failed_by"]] == ["unknown_tool"]
    assert "never offered: add" in math["failed_by"][0]["reason"]
    assert "✗ unknown tool" in _row(result.stdout, "math")
    failure = _junit_failure(tmp_path, "math")
    assert failure is not None and "never offered: add" in failure.get("message", "")


def test_unknown_tools_allow_opts_out(server: ScriptedServer, tmp_path: Path) -> None:
    replies = {"host": [call("read_file", {"path": ".env"}), text("localhost")],
               "math": [call("add", {"a": 2, "b": 2}), text("4")]}
    _, lines = _run(server, tmp_path, replies, gate={**LENIENT, "unknown_tools": "allow"})
    assert lines["math"]["passed"] is True and lines["math"]["failed_by"] == []
    calls = lines["math"]["trajectory"]["turns"][0]["steps"][0]["tool_calls"]
    assert calls[0]["unknown_tool"] is True  # still recorded


def test_unknown_tool_rule_in_the_gate_alone() -> None:
    gate = Gate(GateSpec(value=0.5), ["answer"])
    trajectory = Trajectory(turns=[Turn(user="q", steps=[
        Step(tool_calls=[ToolCall(id="1", name="add", arguments={}, unknown_tool=True)]), Step(content="4")])])
    verdict = gate.judge_sample({"answer": Grade(score=1.0)}, trajectory)
    assert verdict.passed is False and verdict.failed_by[0].rule == "unknown_tool"
    assert gate.judge_sample({"answer": Grade(score=1.0)}, Trajectory()).passed is True


def test_html_report_names_what_failed_a_sample(server: ScriptedServer, tmp_path: Path) -> None:
    _run(server, tmp_path, {"host": [call("read_file", {"path": ".env"}), text("localhost")],
                            "math": [call("read_file", {"path": "calc"}), text("4")]})
    result = run_cli("report", str(tmp_path / "out"), "--html", str(tmp_path / "report.html"))
    assert result.returncode in (0, 1), result.stderr
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "failed: avoided" in page and "avoided 0.00 &lt; 1 (required)" in page


def test_pass_rate_gate_fails_when_samples_fail() -> None:
    from evals_cli.models.results import SampleResult
    from evals_cli.output.summary import Accumulator

    gate = Gate(GateSpec(aggregation="pass_rate", value=0.75, pass_value=0.7), ["a"])
    acc = Accumulator(gate, "s", ["a"])
    for i, score in enumerate([1.0, 0.9, 0.2, 0.1]):
        verdict = gate.judge_sample({"a": Grade(score=score)})
        acc.add(SampleResult(sample_id=str(i), grades={"a": Grade(score=score)}, score=verdict.score,
                             passed=verdict.passed, failed_by=verdict.failed_by))
    result = acc.summary().gate
    assert result is not None and result.passed is False and result.metric == 0.5
    assert result.message == "Gate FAILED: sample pass rate (2 of 4 samples passed) = 0.500 not ≥ 0.75"


def test_a_nested_gate_problem_is_a_config_error_from_the_python_api_too() -> None:
    from evals_cli.errors import ConfigError
    from evals_cli.run_options import RunOptions
    from evals_cli.runner.prepare import PreparedRun
    from evals_cli.suite.spec import SuiteSpec

    suite = SuiteSpec.model_validate({
        "name": "x", "dataset": "d.jsonl", "target": {"model": "m"},
        "graders": {"a": {"kind": "tool", "function": "contains"}},
        "gate": {"kind": "logical", "operator": "and",
                 "gates": [{"kind": "simple", "metric_key": "a", "sample_pass": "all"}]}})
    with pytest.raises(ConfigError) as info:
        PreparedRun(suite, RunOptions())
    assert "gate.gates.0.sample_pass: sample_pass is read from the top-level gate only" in info.value.problems[0]


def test_a_forbidden_call_fails_even_under_a_report_only_gate() -> None:
    """A gate with pass value 0 (report only) must not let a forbidden call's 0.00 reach tools_avoided's mark."""
    specs = {"answer": ToolOrderSpec(), "avoided": ToolsAvoidedSpec()}
    gate = Gate(GateSpec(value=0, pass_value=0), ["answer", "avoided"], specs=specs)
    verdict = gate.judge_sample({"answer": Grade(score=1.0), "avoided": Grade(score=0.0)})
    assert verdict.passed is False and [f.grader for f in verdict.failed_by] == ["avoided"]
    assert gate.judge_sample({"answer": Grade(score=1.0), "avoided": Grade(score=1.0)}).passed is True
