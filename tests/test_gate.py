"""Aggregation and the pass/fail gate: errors (score None) are left out, never counted as 0."""

from __future__ import annotations

from typing import Any

import pytest

from evals_cli.gate import Gate, aggregate, effective_weights, weighted
from evals_cli.models.results import ErrorInfo, Grade, GraderAggregate, SampleResult
from evals_cli.models.specs import GateSpec
from evals_cli.models.trajectory import Usage
from evals_cli.output.summary import Accumulator


def gate_spec(**fields: Any) -> GateSpec:
    return GateSpec.model_validate(fields)


# --- weighted -------------------------------------------------------------------------------------------------


def test_weighted_mean() -> None:
    assert weighted({"a": 1.0, "b": 0.0}, {"a": 3, "b": 1}) == pytest.approx(0.75)


def test_weighted_drops_none_and_renormalises() -> None:
    scores = {"a": 0.8, "judge": None, "b": 0.2}
    assert weighted(scores, {"a": 1, "judge": 5, "b": 1}) == pytest.approx(0.5)


def test_weighted_ignores_scores_without_weight() -> None:
    assert weighted({"a": 1.0, "extra": 0.0}, {"a": 1}) == 1.0


def test_weighted_missing_grader_is_dropped() -> None:
    assert weighted({"a": 0.4}, {"a": 1, "absent": 1}) == pytest.approx(0.4)


@pytest.mark.parametrize("scores", [{}, {"a": None, "b": None}])
def test_weighted_nothing_to_weigh_is_none(scores: dict[str, float | None]) -> None:
    assert weighted(scores, {"a": 1, "b": 1}) is None


def test_weighted_only_zero_weights_present_is_none() -> None:
    assert weighted({"a": 1.0, "b": None}, {"a": 0, "b": 1}) is None


# --- aggregate ------------------------------------------------------------------------------------------------


SCORES = [0.2, 0.9, 0.5, 1.0]


@pytest.mark.parametrize(
    ("aggregation", "expected"),
    [("avg_score", 0.65), ("accuracy", 0.5), ("min", 0.2), ("max", 1.0), ("median", 0.7)],
)
def test_aggregate(aggregation: str, expected: float) -> None:
    assert aggregate(SCORES, aggregation, lambda s: s >= 0.9) == pytest.approx(expected)


def test_aggregate_median_of_odd_count() -> None:
    assert aggregate([0.1, 0.8, 0.3], "median", lambda s: True) == pytest.approx(0.3)


@pytest.mark.parametrize("aggregation", ["avg_score", "accuracy", "min", "max", "median"])
def test_aggregate_empty_is_none(aggregation: str) -> None:
    assert aggregate([], aggregation, lambda s: True) is None


def test_aggregate_unknown() -> None:
    with pytest.raises(ValueError, match="unknown aggregation"):
        aggregate([0.5], "mean", lambda s: True)


# --- effective_weights ------------------------------------------------------------------------------------------


def test_effective_weights_default_equal() -> None:
    assert effective_weights(gate_spec(), ["a", "b"]) == {"a": 1.0, "b": 1.0}


def test_effective_weights_given() -> None:
    assert effective_weights(gate_spec(weights={"a": 2, "b": 1}), ["a", "b", "c"]) == {"a": 2, "b": 1}


def test_effective_weights_when_the_judge_is_not_active() -> None:
    spec = gate_spec(weights={"answer": 1, "judge": 3})
    assert effective_weights(spec, ["answer", "order"]) == {"answer": 1}


def test_effective_weights_are_none_when_no_weighted_grader_is_active() -> None:
    """A gate weighing only a judge skipped by --no-judge reads nothing (it cannot decide, exit 3): equal weights
    over the graders the suite gave no weight would be a verdict the suite never defined."""
    spec = gate_spec(weights={"judge": 3})
    assert effective_weights(spec, ["answer", "order"]) == {}


def test_effective_weights_are_none_when_active_weights_are_zero() -> None:
    spec = gate_spec(weights={"answer": 0, "judge": 3})
    assert effective_weights(spec, ["answer", "order"]) == {}


# --- Gate -----------------------------------------------------------------------------------------------------


def aggregates(**avg: float | None) -> dict[str, GraderAggregate]:
    return {name: GraderAggregate(count=1, avg_score=value, accuracy=value, min=value, max=value, median=value)
            for name, value in avg.items()}


def test_decide_weighted_pass_message() -> None:
    gate = Gate(gate_spec(weights={"answer": 3, "order": 1}, op="gte", value=0.7), ["answer", "order"])

    result = gate.decide(aggregates(answer=0.8, order=0.4))

    assert result.passed is True
    assert result.metric == pytest.approx(0.7)
    assert result.weights == {"answer": 3, "order": 1}
    assert result.message == "Gate PASSED: weighted avg_score (answer×3, order×1) = 0.700 ≥ 0.7"


def test_decide_fail_message() -> None:
    gate = Gate(gate_spec(value=0.9), ["answer", "order"])
    result = gate.decide(aggregates(answer=0.8, order=0.4))
    assert result.passed is False
    assert result.metric == pytest.approx(0.6)
    assert result.message == "Gate FAILED: weighted avg_score (answer×1, order×1) = 0.600 not ≥ 0.9"


@pytest.mark.parametrize(
    ("op", "value", "passed"),
    [
        ("gt", 0.25, True), ("gt", 0.5, False), ("gt", 0.75, False),
        ("gte", 0.25, True), ("gte", 0.5, True), ("gte", 0.75, False),
        ("lt", 0.75, True), ("lt", 0.5, False), ("lt", 0.25, False),
        ("lte", 0.75, True), ("lte", 0.5, True), ("lte", 0.25, False),
        ("eq", 0.5, True), ("eq", 0.25, False), ("eq", 0.75, False),
    ],
)
def test_decide_every_op(op: str, value: float, passed: bool) -> None:
    gate = Gate(gate_spec(op=op, value=value), ["a", "b"])
    result = gate.decide(aggregates(a=0.75, b=0.25))  # metric exactly 0.5
    assert result.metric == 0.5
    assert result.passed is passed
    assert result.op == op
    assert ("PASSED" in result.message) is passed
    assert ("FAILED" in result.message) is (not passed)


@pytest.mark.parametrize(("op", "passed"), [("eq", True), ("gte", True), ("lte", True), ("gt", False),
                                            ("lt", False)])
def test_every_op_tolerates_float_rounding(op: str, passed: bool) -> None:
    result = Gate(gate_spec(op=op, value=0.6), ["a", "b"]).decide(aggregates(a=0.8, b=0.4))
    assert result.metric != 0.6  # 0.6000000000000001
    assert result.passed is passed


def test_gate_at_the_threshold_is_not_failed_by_rounding() -> None:
    """0.7 three times averages to 0.6999999999999998; an earlier version then said '0.700 not ≥ 0.7'."""
    gate = Gate(gate_spec(op="gte", value=0.7), ["judge"])
    acc = Accumulator(gate, "suite", ["judge"])
    for sid in ("1", "2", "3"):
        grades = {"judge": Grade(score=0.7)}
        score, passed = gate.score_sample(grades)
        acc.add(SampleResult(sample_id=sid, grades=grades, score=score, passed=passed))

    summary = acc.summary()

    assert summary.passed == 3
    assert summary.gate is not None and summary.gate.passed is True


@pytest.mark.parametrize(("op", "symbol"), [("gt", ">"), ("gte", "≥"), ("lt", "<"), ("lte", "≤"), ("eq", "=")])
def test_decide_message_symbols(op: str, symbol: str) -> None:
    result = Gate(gate_spec(op=op, value=0.5), ["a"]).decide(aggregates(a=0.5))
    assert result.message.endswith(f" {symbol} 0.5")


def test_decide_uses_the_configured_aggregation() -> None:
    gate = Gate(gate_spec(aggregation="min", value=0.3), ["a"])
    aggs = {"a": GraderAggregate(count=3, avg_score=0.9, min=0.2, max=1.0, median=0.9, accuracy=0.66)}
    result = gate.decide(aggs)
    assert result.metric == pytest.approx(0.2)
    assert result.passed is False
    assert result.aggregation == "min"
    assert "weighted min" in result.message


def test_decide_drops_graders_without_aggregate() -> None:
    gate = Gate(gate_spec(value=0.5), ["a", "judge"])
    result = gate.decide(aggregates(a=0.6, judge=None))
    assert result.metric == pytest.approx(0.6)
    assert result.passed is True


@pytest.mark.parametrize("aggs", [{}, aggregates(a=None, b=None)])
def test_decide_without_graded_samples_is_undecided(aggs: dict[str, GraderAggregate]) -> None:
    result = Gate(gate_spec(), ["a", "b"]).decide(aggs)
    assert result.passed is None
    assert result.metric is None
    assert "could not be evaluated" in result.message
    assert "PASSED" not in result.message and "FAILED" not in result.message


def test_sample_pass_uses_pass_op_and_pass_value() -> None:
    gate = Gate(gate_spec(op="gte", value=0.9, pass_op="gt", pass_value=0.5), ["a"])
    assert gate.passes(0.6) and not gate.passes(0.5)
    assert gate.score_sample({"a": Grade(score=0.6)}) == (pytest.approx(0.6), True)
    assert gate.score_sample({"a": Grade(score=None)}) == (None, None)


def test_sample_pass_defaults_to_gate_op_and_value() -> None:
    gate = Gate(gate_spec(op="lt", value=0.3), ["a"])
    assert gate.passes(0.2) and not gate.passes(0.3)


# --- Accumulator ------------------------------------------------------------------------------------------------


def result(sid: str, passed: bool | None = None, error: ErrorInfo | None = None,
           **grades: Grade) -> SampleResult:
    return SampleResult(sample_id=sid, grades=grades, passed=passed, error=error,
                        usage=Usage(prompt_tokens=10, completion_tokens=5))


def test_accumulator_counts_and_averages() -> None:
    gate = Gate(gate_spec(value=0.5), ["answer", "judge"])
    acc = Accumulator(gate, "suite", ["answer", "judge"])

    acc.add(result("1", True, answer=Grade(score=1.0), judge=Grade(score=0.8)))
    acc.add(result("2", False, answer=Grade(score=0.0), judge=Grade.failed("judge error: timeout", judge="m")))
    acc.add(result("3", True, answer=Grade(score=1.0), judge=Grade.failed("grader raised KeyError")))
    acc.add(result("4", error=ErrorInfo(category="timeout", message="agent timed out"),
                   answer=Grade(score=0.0)))  # errored: its grades are not counted

    summary = acc.summary()

    assert (summary.total, summary.errored, summary.graded) == (4, 1, 3)
    assert (summary.passed, summary.failed) == (2, 1)
    answer, judge = summary.graders["answer"], summary.graders["judge"]
    assert (answer.count, answer.errors) == (3, 0)
    assert answer.avg_score == pytest.approx(2 / 3)
    assert answer.accuracy == pytest.approx(2 / 3)
    assert (answer.min, answer.max, answer.median) == (0.0, 1.0, 1.0)
    assert (judge.count, judge.errors) == (1, 2)  # None grades counted apart, not as 0
    assert judge.avg_score == pytest.approx(0.8)
    assert summary.errors_by_category == {"judge": 1, "grader": 1, "timeout": 1}
    assert summary.usage.prompt_tokens == 40 and summary.usage.completion_tokens == 20
    assert summary.gate is not None
    assert summary.gate.metric == pytest.approx((2 / 3 + 0.8) / 2)
    assert summary.gate.passed is True


def test_accumulator_all_errored_leaves_the_gate_undecided() -> None:
    gate = Gate(gate_spec(), ["answer"])
    acc = Accumulator(gate, "suite", ["answer"])
    acc.add(result("1", error=ErrorInfo(category="endpoint", message="refused")))
    acc.add(result("2", error=ErrorInfo(category="endpoint", message="refused")))

    summary = acc.summary()

    assert (summary.total, summary.errored, summary.graded) == (2, 2, 0)
    assert summary.graders["answer"].count == 0
    assert summary.graders["answer"].avg_score is None
    assert summary.errors_by_category == {"endpoint": 2}
    assert summary.gate is not None and summary.gate.passed is None


def test_accumulator_with_judge_skipped() -> None:
    """--no-judge: the judge never runs, so the gate weighs only the active graders."""
    spec = gate_spec(weights={"answer": 1, "order": 1, "judge": 8}, value=0.75)
    active = ["answer", "order"]
    gate = Gate(spec, active)
    acc = Accumulator(gate, "suite", active)
    acc.add(result("1", answer=Grade(score=1.0), order=Grade(score=0.5)))

    summary = acc.summary()

    assert gate.weights == {"answer": 1, "order": 1}
    assert "judge" not in summary.graders
    assert summary.gate is not None
    assert summary.gate.metric == pytest.approx(0.75)
    assert summary.gate.passed is True
    assert "judge" not in summary.gate.message


def test_accumulator_accuracy_uses_the_sample_pass_threshold() -> None:
    gate = Gate(gate_spec(aggregation="accuracy", value=0.5, pass_value=0.8), ["a"])
    acc = Accumulator(gate, "suite", ["a"])
    for score in (0.9, 0.8, 0.7, 0.1):
        acc.add(result("s", a=Grade(score=score)))
    summary = acc.summary()
    assert summary.graders["a"].accuracy == pytest.approx(0.5)
    assert summary.gate is not None and summary.gate.metric == pytest.approx(0.5)
    assert summary.gate.passed is True


def test_accumulator_picks_up_graders_it_was_not_told_about() -> None:
    acc = Accumulator(Gate(gate_spec(), ["a"]), "suite", ["a"])
    acc.add(result("1", a=Grade(score=1.0), surprise=Grade(score=0.5)))
    assert acc.aggregates()["surprise"].avg_score == pytest.approx(0.5)
