"""Issue 11 items 2 and 13(a): a grader with nothing to check still scores 1.0 (the harness convention), but the
grade says it was not applicable, the table shows a dim `n/a`, and the aggregates say how many samples were really
checked ("3 of 8"). An empty ground truth is nothing to check, never "found '' in the submission"."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter

from evals_cli.gate.turns import settle_turns
from evals_cli.graders.base import GRADERS, GraderContext
from evals_cli.graders.grading import grade_sample
from evals_cli.models.results import Grade, TurnScores
from evals_cli.models.sample import Sample
from evals_cli.models.trajectory import Trajectory
from evals_cli.suite.spec import GraderSpec
from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, call, text
from tests.trajectory_builders import c, run, traj

_SPEC: TypeAdapter[Any] = TypeAdapter(GraderSpec)


def grader(spec: dict[str, Any]) -> Any:
    parsed = _SPEC.validate_python(spec)
    return GRADERS[parsed.kind].impl("g", parsed, GraderContext(Path(".")))


# (spec, sample, trajectory): every grader's "nothing to check" path
NOTHING_TO_CHECK = {
    "contains, no ground truth": ({"kind": "tool", "function": "contains"}, Sample(input="q"), traj()),
    "exact_match, no ground truth": ({"kind": "tool", "function": "exact_match"}, Sample(input="q"), traj()),
    "regex_match, no ground truth": ({"kind": "tool", "function": "regex_match"}, Sample(input="q"), traj()),
    "tool_order, no expected order": ({"kind": "tool_order"}, Sample(input="q"), traj("read_file")),
    "tools_avoided, nothing forbidden": ({"kind": "tools_avoided"}, Sample(input="q"), traj("read_file")),
    "tool_args, no expected calls": ({"kind": "tool_args"}, Sample(input="q"), traj("read_file")),
    "no_loops, no calls": ({"kind": "no_loops"}, Sample(input="q"), traj()),
    "tool_schema, no calls": ({"kind": "tool_schema"}, Sample(input="q"), traj()),
    "grounding, nothing to cite": ({"kind": "grounding"}, Sample(input="q"), traj()),
    "stop_behavior, nothing required": ({"kind": "stop_behavior", "checks": ["premature_stop", "no_stop"]},
                                        Sample(input="q"), traj()),
}
# the same graders with something to check
SOMETHING_TO_CHECK = {
    "contains": ({"kind": "tool", "function": "contains"}, Sample(input="q", ground_truth="done"), traj()),
    "tool_order": ({"kind": "tool_order"}, Sample(input="q", expected_tool_order=["read_file"]), traj("read_file")),
    "tools_avoided": ({"kind": "tools_avoided", "tools": ["rm"]}, Sample(input="q"), traj("read_file")),
    "no_loops": ({"kind": "no_loops"}, Sample(input="q"), traj("read_file")),
    "tool_schema": ({"kind": "tool_schema"}, Sample(input="q"), traj(c("read_file", {"path": "x"}))),
    "grounding": ({"kind": "grounding", "must_not_say": ["secret"]}, Sample(input="q"), traj()),
    "stop_behavior": ({"kind": "stop_behavior"}, Sample(input="q", expected_tool_order=["read_file"]),
                      traj("read_file")),
}


@pytest.mark.parametrize("case", list(NOTHING_TO_CHECK))
def test_nothing_to_check_is_1_but_not_applicable(case: str) -> None:
    spec, sample, trajectory = NOTHING_TO_CHECK[case]
    grade = run(grader(spec), trajectory, sample)
    assert grade.score == 1.0 and grade.applicable is False, grade


@pytest.mark.parametrize("case", list(SOMETHING_TO_CHECK))
def test_something_to_check_is_applicable(case: str) -> None:
    spec, sample, trajectory = SOMETHING_TO_CHECK[case]
    grade = run(grader(spec), trajectory, sample)
    assert grade.applicable is True, grade


@pytest.mark.parametrize("function", ["contains", "exact_match", "regex_match"])
@pytest.mark.parametrize("ground_truth", ["", "   ", [""], ["", " "]])
def test_an_empty_ground_truth_never_passes_as_found(function: str, ground_truth: Any) -> None:
    grade = run(grader({"kind": "tool", "function": function}), traj(answer="anything at all"),
                Sample(input="q", ground_truth=ground_truth))
    assert grade.applicable is False and grade.score == 1.0
    assert "found ''" not in grade.rationale and "empty" in grade.rationale


def test_an_empty_alternative_does_not_match_everything() -> None:
    grade = run(grader({"kind": "tool", "function": "contains"}), traj(answer="no idea"),
                Sample(input="q", ground_truth=["", "localhost"]))
    assert grade.score == 0.0 and grade.applicable is True


def test_a_per_turn_grade_is_applicable_when_any_turn_was_checked() -> None:
    from tests.trajectory_builders import turn

    answer = grader({"kind": "tool", "function": "contains"})
    trajectory = Trajectory(turns=[turn(answer="a"), turn(answer="b")])

    def grade_of(ground_truth: list[str]) -> Grade:
        sample = Sample(input=["one", "two"], ground_truth=ground_truth)
        raw = asyncio.run(grade_sample({"g": answer}, sample, trajectory))["g"]
        assert isinstance(raw, TurnScores)  # the grader hands the gate raw turn grades; the gate settles them
        return settle_turns(raw, lambda s: s >= 1.0, na_pass=False)

    assert grade_of(["", "b"]).applicable is True
    assert grade_of(["", " "]).applicable is False


def test_the_table_shows_na_and_the_aggregates_count_the_samples_checked(server: ScriptedServer,
                                                                           tmp_path: Path) -> None:
    rows = [{"id": "host", "input": "db host?", "ground_truth": "localhost", "expected_tool_order": ["read_file"]},
            {"id": "math", "input": "math: 2+2?", "ground_truth": "4", "forbidden_tools": ["read_file"]},
            {"id": "chat", "input": "chat: hi", "ground_truth": ""}]
    server.script = agent_script({"host": [call("read_file", {"path": ".env"}), text("localhost")],
                                  "math": [text("4")], "chat": [text("hello")]})
    suite = write_suite(tmp_path, rows, base_url=server.url)
    out = tmp_path / "out"
    result = run_cli("run", str(suite), "-o", str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    lines = {r["sample_id"]: r for r in read_jsonl(out / "results.jsonl")}
    assert lines["host"]["grades"]["avoided"]["applicable"] is False
    assert lines["chat"]["grades"]["answer"]["applicable"] is False
    assert lines["math"]["grades"]["avoided"]["applicable"] is True
    def row(sample: str) -> str:
        return next(line for line in result.stdout.splitlines() if line.strip().startswith(sample))

    assert row("host").split()[-3] == "n/a"  # columns ... answer order avoided score mark: avoided is n/a
    # nothing to check for any of its graders: no weighted score, and no verdict (issue 24 item 1)
    # columns: sample, tools, answer, order, avoided, score, mark
    assert row("chat").split()[2:] == ["n/a"] * 4 + ["n/a:", "nothing", "to", "check"], row("chat")
    aggregates = {line.split()[0]: line for line in result.stdout.splitlines()
                  if line.strip().startswith(("answer", "order", "avoided"))}
    assert "2 of 3" in aggregates["answer"]  # chat's empty ground truth was not really checked
    assert "1 of 3" in aggregates["order"] and "1 of 3" in aggregates["avoided"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["graders"]["avoided"]["applicable"] == 1 and summary["graders"]["avoided"]["count"] == 3
