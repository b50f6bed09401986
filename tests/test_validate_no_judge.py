"""`evals validate --no-judge` checks a suite as `evals run --no-judge` runs it: a python agent has no model for the
judge to default to, and validate demanded a judge model (and had no --no-judge nor the --judge-model its own
message named) for a run that would never call one."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import run_cli
from tests.test_python_target import AGENT, python_suite


def test_validate_no_judge_needs_no_judge_model_for_a_python_agent(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(AGENT, encoding="utf-8")
    (tmp_path / "rubric.j2").write_text("Grade: {{ submission }}\n", encoding="utf-8")
    suite = python_suite(tmp_path, [{"id": "math", "input": "2+2?", "ground_truth": "4"}], "agent.py:run_agent",
                         graders={"answer": {"kind": "match", "function": "contains"},
                                  "quality": {"kind": "model_judge", "rubric": "rubric.j2"}})
    plain = run_cli("validate", str(suite))
    assert plain.returncode == 2 and "graders.quality: judge: no model set" in plain.stderr
    assert run_cli("validate", str(suite), "--no-judge").returncode == 0
    named = run_cli("validate", str(suite), "--judge-model", "some-judge")
    assert named.returncode == 0, named.stderr  # the option the message names exists
    assert run_cli("run", str(suite), "--no-judge", "-o", str(tmp_path / "out")).returncode == 0  # as validate said
