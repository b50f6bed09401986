"""The verdict in one place (issue 38 item 2): a grader that grades per turn or per reply hands the gate raw turn
grades and takes no pass rule; the gate counts turns passed by its own marks (the grader's threshold, letta-evals'
1.0, not_applicable) and only then decides the sample."""

from __future__ import annotations

import inspect

from evals_cli.gate.gate import Gate
from evals_cli.graders.grading import grade_sample
from evals_cli.models.results import Grade, TurnGrade, TurnScores
from evals_cli.models.specs import WeightedAverageGate


def _turns(*grades: Grade) -> TurnScores:
    turns = [TurnGrade(turn=i, score=g.score, rationale=g.rationale) for i, g in enumerate(grades)]
    return TurnScores("turn", list(grades), turns, {"usage": {"prompt_tokens": 0, "completion_tokens": 0}})


def test_grading_takes_no_rule_of_the_gate() -> None:
    parameters = set(inspect.signature(grade_sample).parameters)
    assert {"graders", "sample", "trajectory", "tools"} <= parameters
    assert not parameters & {"passes", "grader_passes", "turn_pass", "na_pass"}  # the gate's rules stay the gate's


def test_the_gate_counts_turns_by_its_pass_value_and_letta_counts_only_perfect_turns() -> None:
    spec = WeightedAverageGate(op="gte", value=0.5)
    raw = _turns(Grade(score=0.8), Grade(score=0.2), Grade(score=1.0))
    own = Gate(spec, ["g"]).settle({"g": raw})["g"]
    letta = Gate(spec, ["g"], turn_pass=1.0).settle({"g": raw})["g"]
    assert (own.turns_passed, own.turns_total, own.rationale) == (2, 3, "2/3 turns passed")
    assert (letta.turns_passed, letta.turns_total) == (1, 3)
    assert own.score == letta.score == (0.8 + 0.2 + 1.0) / 3  # the count is the gate's; the score is the turns'
    assert list(own.metadata) == ["usage", "turns_passed", "turns_total", "turns_checked"]


def test_not_applicable_pass_puts_a_turn_with_nothing_to_check_into_the_count() -> None:
    raw = _turns(Grade(score=1.0), Grade.not_applicable("no ground truth"))
    excluded = Gate(WeightedAverageGate(op="gte", value=1.0), ["g"]).settle({"g": raw})["g"]
    counted = Gate(WeightedAverageGate(op="gte", value=1.0, not_applicable="pass"), ["g"]).settle({"g": raw})["g"]
    assert (excluded.turns_passed, excluded.metadata["turns_checked"]) == (1, 1)
    assert (counted.turns_passed, counted.metadata["turns_checked"]) == (2, 2)


def test_a_turn_that_could_not_be_graded_leaves_the_grade_missing_never_a_zero() -> None:
    raw = _turns(Grade(score=1.0), Grade.failed("judge timed out"))
    grade = Gate(WeightedAverageGate(op="gte", value=0.5), ["g"]).settle({"g": raw})["g"]
    assert grade.score is None and "judge timed out" in (grade.error or "")


def test_a_reply_passes_at_the_gates_value_when_its_grader_sets_no_threshold() -> None:
    grades = [Grade(score=0.6), Grade(score=0.4)]
    raw = TurnScores("reply", grades, [TurnGrade(turn=i, score=g.score) for i, g in enumerate(grades)],
                     {"scope": "reply", "min_share": 1.0, "usage": {}})
    lenient = Gate(WeightedAverageGate(op="gte", value=0.5), ["g"]).settle({"g": raw})["g"]
    strict = Gate(WeightedAverageGate(op="gte", value=0.7), ["g"]).settle({"g": raw})["g"]
    assert (lenient.score, lenient.metadata["replies_failed"]) == (0.5, [1])
    assert (strict.score, strict.metadata["replies_failed"]) == (0.0, [0, 1])
