"""Issue 11 item 12: a grade that is missing (score None) for a grader the verdict reads (weight > 0, or required)
never lets the sample pass on the graders that remain. The sample is incomplete: errored with the grade error's
category (`judge` or `grader`), kept out of the averages, and shown as such."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from evals_cli.gate.gate import Gate
from evals_cli.graders.kinds.trajectory import ToolOrderSpec
from evals_cli.models.results import Grade, SampleResult
from evals_cli.models.specs import GateSpec
from evals_cli.output.summary import Accumulator
from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import Reply, ScriptedServer, agent_script, call, judge_score, text

ROWS = [
    {"id": "fresh", "input": "db port?", "ground_truth": "5432", "expected_tool_order": ["read_file"]},
    {"id": "host", "input": "db host?", "ground_truth": "localhost", "expected_tool_order": ["read_file"]},
]
GRADERS = {"answer": {"kind": "tool", "function": "contains"}, "order": {"kind": "tool_order"},
           "quality": {"kind": "model_judge", "prompt": "Grade: {{ submission }}", "scale": "0-1"}}
GATE = {"kind": "weighted_average", "weights": {"answer": 1, "order": 1, "quality": 2}, "aggregation": "avg_score",
        "op": "gte", "value": 0.5, "pass_value": 0.5}


def _judge(body: dict) -> Reply | dict:
    """The judge fails on the sample about the port (as a timed-out judge would), and grades the rest."""
    if "5432" in json.dumps(body):
        return Reply({"error": {"message": "judge overloaded"}}, status=400)
    return judge_score(1.0)


def test_a_missing_judge_grade_makes_the_sample_incomplete(server: ScriptedServer, tmp_path: Path) -> None:
    # fresh: no tool call (order 0), a right-looking answer (1): over the rest, (1 + 0) / 2 = 0.5 passed before
    server.script = agent_script({"port": [text("It is 5432.")],
                                  "host": [call("read_file", {"path": ".env"}), text("localhost")]}, judge=_judge)
    suite = write_suite(tmp_path, ROWS, base_url=server.url, graders=GRADERS, gate=GATE,
                        judge={"base_url": server.url, "model": "scripted", "max_retries": 0})
    out = tmp_path / "out"
    result = run_cli("run", str(suite), "-o", str(out), "--max-error-rate", "0.9", "--junit", str(tmp_path / "j.xml"))
    lines = {r["sample_id"]: r for r in read_jsonl(out / "results.jsonl")}
    fresh = lines["fresh"]
    assert fresh["grades"]["quality"]["score"] is None
    assert fresh["passed"] is None and fresh["score"] is None
    assert fresh["error"]["category"] == "judge" and "quality" in fresh["error"]["message"]
    assert lines["host"]["passed"] is True
    row = next(line for line in result.stdout.splitlines() if line.strip().startswith("fresh"))
    assert "incomplete: judge" in row and "✓" not in row
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["passed"], summary["failed"], summary["errored"]) == (1, 0, 1)
    assert summary["errors_by_category"]["judge"] == 1
    # kept out of the averages: the order grader's average is host's 1.0, not (0 + 1) / 2
    assert summary["graders"]["order"]["count"] == 1 and summary["graders"]["order"]["avg_score"] == 1.0
    assert summary["graders"]["quality"]["errors"] == 1
    case = next(c for c in ET.parse(tmp_path / "j.xml").getroot().iter("testcase") if c.get("name") == "fresh")
    error = case.find("error")
    assert error is not None and error.get("type") == "evals.judge" and "incomplete" in error.get("message", "")
    assert "order: score 0.00" in (error.text or "")


def test_a_missing_grade_the_verdict_does_not_read_changes_nothing() -> None:
    gate = Gate(GateSpec(weights={"answer": 1, "side": 0}, pass_value=0.5), ["answer", "side"])
    verdict = gate.judge_sample({"answer": Grade(score=1.0), "side": Grade.failed("boom")})
    assert verdict.incomplete is None and verdict.passed is True


def test_a_missing_required_grade_is_a_grader_error() -> None:
    specs = {"answer": ToolOrderSpec(), "order": ToolOrderSpec(required=True)}
    gate = Gate(GateSpec(weights={"answer": 1, "order": 0}, pass_value=0.5), ["answer", "order"], specs=specs)
    verdict = gate.judge_sample({"answer": Grade(score=1.0), "order": Grade.failed("grader raised KeyError")})
    assert verdict.passed is None and verdict.score is None
    assert verdict.incomplete is not None and verdict.incomplete.category == "grader"
    assert "order" in verdict.incomplete.message and "KeyError" in verdict.incomplete.message
    assert gate.score_sample({"answer": Grade(score=1.0), "order": Grade.failed("x")}) == (None, None)


def test_the_accumulator_keeps_incomplete_samples_out_of_the_averages() -> None:
    gate = Gate(GateSpec(value=0.5), ["a", "b"])
    acc = Accumulator(gate, "s", ["a", "b"])
    ok = SampleResult(sample_id="ok", grades={"a": Grade(score=1.0), "b": Grade(score=1.0)}, score=1.0, passed=True)
    verdict = gate.judge_sample({"a": Grade(score=0.0), "b": Grade.failed("judge timed out", judge="m")})
    bad = SampleResult(sample_id="bad", grades={"a": Grade(score=0.0), "b": Grade.failed("judge timed out", judge="m")},
                       error=verdict.incomplete)
    acc.add(ok)
    acc.add(bad)
    summary = acc.summary()
    assert (summary.passed, summary.errored) == (1, 1)
    assert summary.graders["a"].avg_score == 1.0 and summary.graders["a"].count == 1
    assert summary.grades_missing == 1 and summary.errors_by_category == {"judge": 1}
