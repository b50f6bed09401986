"""Aggregation and the pass/fail gate: errors (score None) are left out, never counted as 0; and the gate kinds
(weighted_average, simple, logical) with their aggregations, through the public Gate API, the summary
Accumulator, the suite loader and a real run against the scripted server."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml

from evals_cli.errors import ConfigError
from evals_cli.gate.gate import Gate
from evals_cli.gate.kinds import effective_weights
from evals_cli.gate.scores import aggregate, percentile, weighted
from evals_cli.graders.functions import load_reward
from evals_cli.models.results import ErrorInfo, Grade, GraderAggregate, SampleResult
from evals_cli.models.specs import GateSpec, LogicalGate, SimpleGate, WeightedAverageGate
from evals_cli.models.trajectory import Usage
from evals_cli.output.summary import Accumulator
from evals_cli.suite.loader import load_suite
from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, call, text


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

# === gate kinds (weighted_average, simple, logical) ===========================================================


def run_gate(spec: dict[str, Any], rows: list[dict[str, float | None]], graders: list[str] | None = None):
    """Feed samples (grader -> score) through Gate + Accumulator as the runner does; (gate, summary, results)."""
    names = graders or sorted({g for row in rows for g in row})
    gate = Gate(GateSpec.model_validate(spec), names)
    acc = Accumulator(gate, "suite", names)
    results = []
    for i, row in enumerate(rows):
        grades = {g: Grade(score=s) for g, s in row.items()}
        score, passed = gate.score_sample(grades)
        result = SampleResult(sample_id=str(i), grades=grades, score=score, passed=passed)
        acc.add(result)
        results.append(result)
    return gate, acc.summary(), results


# --- aggregations ---------------------------------------------------------------------------------------------


SPREAD_SCORES = [0.0, 0.25, 0.5, 1.0, 1.0]


@pytest.mark.parametrize(("aggregation", "expected"), [
    ("avg_score", 0.55), ("accuracy", 0.4), ("min", 0.0), ("max", 1.0), ("median", 0.5),
    ("p50", 0.5), ("p95", 1.0), ("p99", 1.0),
])
def test_every_aggregation(aggregation: str, expected: float) -> None:
    assert aggregate(SPREAD_SCORES, aggregation, lambda s: s >= 1.0) == pytest.approx(expected)


def test_percentiles_interpolate_between_ranks() -> None:
    scores = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    assert percentile(scores, 0.95) == pytest.approx(0.955)
    assert percentile(scores, 0.99) == pytest.approx(0.991)
    assert percentile(scores, 0.50) == pytest.approx(0.55)  # the median
    assert percentile([0.3], 0.95) == 0.3


@pytest.mark.parametrize("aggregation", ["p50", "p95", "p99"])
def test_percentiles_of_nothing_are_none(aggregation: str) -> None:
    assert aggregate([], aggregation, lambda s: True) is None


def test_summary_carries_percentiles_per_grader() -> None:
    _, summary, _ = run_gate({"kind": "simple", "metric_key": "a"}, [{"a": s} for s in SPREAD_SCORES])
    agg = summary.graders["a"]
    assert (agg.p50, agg.p95, agg.p99) == (pytest.approx(0.5), pytest.approx(1.0), pytest.approx(1.0))
    assert agg.median == pytest.approx(0.5)


# --- the union --------------------------------------------------------------------------------------------------


def test_gate_spec_builds_each_kind_and_defaults_to_weighted_average() -> None:
    assert isinstance(GateSpec(), WeightedAverageGate)
    assert isinstance(GateSpec(weights={"a": 2}), WeightedAverageGate)
    assert isinstance(GateSpec.model_validate({"kind": "simple", "metric_key": "a"}), SimpleGate)
    logical = GateSpec.model_validate({"kind": "logical", "operator": "or", "gates": [
        {"kind": "simple", "metric_key": "a"}, {"kind": "logical", "operator": "and", "gates": [{}]}]})
    assert isinstance(logical, LogicalGate) and isinstance(logical, GateSpec)
    assert isinstance(logical.gates[1], LogicalGate) and isinstance(logical.gates[1].gates[0], WeightedAverageGate)


# --- simple -----------------------------------------------------------------------------------------------------


def test_simple_gate_decides_on_its_grader_alone() -> None:
    spec = {"kind": "simple", "metric_key": "answer", "aggregation": "avg_score", "op": "gte", "value": 0.75}
    gate, summary, results = run_gate(spec, [{"answer": 1.0, "order": 0.0}, {"answer": 0.5, "order": 0.0}])

    assert gate.weights == {"answer": 1.0}
    assert [r.score for r in results] == [1.0, 0.5]  # the other grader does not move the sample score
    assert [r.passed for r in results] == [True, False]
    assert summary.gate is not None and summary.gate.passed is True
    assert summary.gate.metric == pytest.approx(0.75)
    assert summary.gate.message == "Gate PASSED: answer avg_score = 0.750 ≥ 0.75"


def test_simple_gate_failure_message_and_percentile() -> None:
    spec = {"kind": "simple", "metric_key": "latency_ok", "aggregation": "p95", "op": "gte", "value": 0.9}
    _, summary, _ = run_gate(spec, [{"latency_ok": s} for s in (1.0, 1.0, 0.2, 0.4)])
    assert summary.gate is not None and summary.gate.passed is True  # p95 of these is 1.0
    spec["aggregation"] = "min"
    _, summary, _ = run_gate(spec, [{"latency_ok": s} for s in (1.0, 1.0, 0.2, 0.4)])
    assert summary.gate is not None and summary.gate.passed is False
    assert summary.gate.message == "Gate FAILED: latency_ok min = 0.200 not ≥ 0.9"


def test_simple_accuracy_uses_its_pass_rule() -> None:
    spec = {"kind": "simple", "metric_key": "a", "aggregation": "accuracy", "op": "gte", "value": 0.5,
            "pass_op": "gte", "pass_value": 1.0}
    _, summary, results = run_gate(spec, [{"a": 1.0}, {"a": 0.9}, {"a": 1.0}, {"a": 0.0}])
    assert [r.passed for r in results] == [True, False, True, False]
    assert summary.graders["a"].accuracy == pytest.approx(0.5)
    assert summary.gate is not None and summary.gate.passed is True


def test_simple_gate_on_a_grader_that_did_not_run_is_undecided() -> None:
    """--no-judge with a simple gate on the judge: no verdict (exit 3), never a silent pass."""
    spec = {"kind": "simple", "metric_key": "judge"}
    gate, summary, results = run_gate(spec, [{"answer": 1.0}], graders=["answer"])
    assert gate.weights == {} and results[0].passed is None
    assert summary.gate is not None and summary.gate.passed is None
    assert summary.gate.message == "Gate could not be evaluated: grader 'judge' did not run"


def test_run_level_aggregation_in_a_simple_gate() -> None:
    gate = Gate(GateSpec.model_validate({"kind": "simple", "metric_key": "a", "aggregation": "pass_at_k",
                                         "value": 0.5}), ["a"])
    acc = Accumulator(gate, "suite", ["a"], repeats=2)
    for sid, score in (("x", 1.0), ("x", 0.0), ("y", 0.0), ("y", 0.0)):
        grades = {"a": Grade(score=score)}
        s, passed = gate.score_sample(grades)
        acc.add(SampleResult(sample_id=sid, grades=grades, score=s, passed=passed))
    summary = acc.summary()
    assert summary.gate is not None and summary.gate.metric == pytest.approx(0.5)
    # pass@2 passes, and the verdict line still says that most runs failed (issue 24 item 2)
    assert summary.gate.message == ("Gate PASSED (but only 1 of 4 sample runs passed): pass_at_k (over 2 samples × 2) "
                                    "= 0.500 ≥ 0.5")


# --- logical ----------------------------------------------------------------------------------------------------


AND_GATE = {"kind": "logical", "operator": "and", "gates": [
    {"kind": "simple", "metric_key": "answer", "aggregation": "avg_score", "op": "gte", "value": 0.7},
    {"kind": "simple", "metric_key": "order", "aggregation": "accuracy", "op": "gte", "value": 0.9,
     "pass_op": "gte", "pass_value": 1.0},
]}


def test_logical_gate_offers_one_per_sample_rule_for_callers_that_need_one() -> None:
    """Exporters read `gate.sample_value` (e.g. to blame graders in JUnit): a logical gate answers with its first
    sub-gate's rule, the one `Gate.passes` applies."""
    spec = GateSpec.model_validate(AND_GATE)
    assert (spec.sample_op, spec.sample_value) == ("gte", 0.7)
    gate = Gate(spec, ["answer", "order"])
    assert gate.sample_rule == ("gte", 0.7) and gate.passes(0.7) and not gate.passes(0.69)
    assert Gate(spec, ["order"]).sample_rule == ("gte", 1.0)  # the answer sub-gate did not run


def test_logical_and_passes_only_when_every_sub_gate_does() -> None:
    rows = [{"answer": 1.0, "order": 1.0}, {"answer": 0.5, "order": 1.0}]
    _, summary, results = run_gate(AND_GATE, rows)
    assert summary.gate is not None and summary.gate.passed is True
    assert summary.gate.message == ("Gate PASSED: all of (answer avg_score = 0.750 ≥ 0.7; "
                                    "order accuracy = 1.000 ≥ 0.9)")
    assert [r.passed for r in results] == [True, False]  # answer 0.5 fails its sub-gate's sample rule
    assert summary.gate.op == "and" and summary.gate.aggregation == "logical" and summary.gate.metric == 1.0


def test_logical_and_fails_and_names_the_failing_part() -> None:
    rows = [{"answer": 1.0, "order": 1.0}, {"answer": 1.0, "order": 0.5}]
    _, summary, _ = run_gate(AND_GATE, rows)
    assert summary.gate is not None and summary.gate.passed is False
    assert summary.gate.message == ("Gate FAILED: all of (answer avg_score = 1.000 ≥ 0.7; "
                                    "order accuracy = 0.500 not ≥ 0.9)")
    assert summary.gate.metric == pytest.approx(0.5)


def test_logical_or_passes_when_one_sub_gate_does() -> None:
    spec = {**AND_GATE, "operator": "or"}
    rows = [{"answer": 1.0, "order": 1.0}, {"answer": 1.0, "order": 0.5}]
    _, summary, results = run_gate(spec, rows)
    assert summary.gate is not None and summary.gate.passed is True
    assert summary.gate.message.startswith("Gate PASSED: any of (answer avg_score = 1.000 ≥ 0.7; ")
    assert [r.passed for r in results] == [True, True]


def test_sub_gates_keep_their_own_accuracy_rule() -> None:
    """The same grader under two pass rules: each sub-gate's accuracy is computed under its own rule."""
    spec = {"kind": "logical", "operator": "and", "gates": [
        {"kind": "simple", "metric_key": "a", "aggregation": "accuracy", "value": 0.5, "pass_value": 0.5},
        {"kind": "simple", "metric_key": "a", "aggregation": "accuracy", "value": 0.5, "pass_value": 0.9},
    ]}
    _, summary, _ = run_gate(spec, [{"a": 1.0}, {"a": 0.6}, {"a": 0.6}, {"a": 0.0}])
    assert summary.graders["a"].accuracy == pytest.approx(0.75)  # under the first sub-gate's rule
    assert summary.graders["a"].accuracy_at == {"gte 0.9": pytest.approx(0.25)}
    assert summary.gate is not None and summary.gate.passed is False
    assert "a accuracy = 0.750 ≥ 0.5; a accuracy = 0.250 not ≥ 0.5" in summary.gate.message


def test_nested_logical_gates() -> None:
    spec = {"kind": "logical", "operator": "or", "gates": [
        {"kind": "simple", "metric_key": "judge", "value": 0.9},
        {"kind": "logical", "operator": "and", "gates": [
            {"kind": "weighted_average", "weights": {"answer": 2, "order": 1}, "value": 0.6},
            {"kind": "simple", "metric_key": "order", "aggregation": "max", "value": 1.0},
        ]},
    ]}
    _, summary, _ = run_gate(spec, [{"judge": 0.5, "answer": 0.6, "order": 1.0}])
    assert summary.gate is not None and summary.gate.passed is True
    assert summary.gate.message == (
        "Gate PASSED: any of (judge avg_score = 0.500 not ≥ 0.9; all of (weighted avg_score (answer×2, order×1) "
        "= 0.733 ≥ 0.6; order max = 1.000 ≥ 1))")


def test_logical_gate_drops_sub_gates_whose_graders_did_not_run() -> None:
    """--no-judge: a sub-gate on the judge is dropped, as a judge weight is renormalised away."""
    spec = {"kind": "logical", "operator": "and", "gates": [
        {"kind": "simple", "metric_key": "judge", "value": 0.9}, {"kind": "simple", "metric_key": "answer"}]}
    gate, summary, _ = run_gate(spec, [{"answer": 1.0}], graders=["answer"])
    assert gate.weights == {"answer": 1.0}
    assert summary.gate is not None and summary.gate.passed is True
    assert "judge" not in summary.gate.message
    assert effective_weights(GateSpec.model_validate(spec), ["answer", "judge"]) == {"judge": 1.0, "answer": 1.0}


def test_logical_gate_with_an_ungraded_sub_gate_is_undecided_not_passed() -> None:
    spec = {"kind": "logical", "operator": "and", "gates": [
        {"kind": "simple", "metric_key": "judge"}, {"kind": "simple", "metric_key": "answer"}]}
    _, summary, _ = run_gate(spec, [{"answer": 1.0, "judge": None}], graders=["answer", "judge"])
    assert summary.gate is not None and summary.gate.passed is None
    assert summary.gate.message == ("Gate could not be evaluated: all of (judge avg_score: not evaluated, no sample "
                                    "was graded; answer avg_score = 1.000 ≥ 0.7)")


# --- in a suite ---------------------------------------------------------------------------------------------------


GRADERS = {"answer": {"kind": "tool", "function": "contains"}, "order": {"kind": "tool_order"}}


def set_gate(path: Path, gate: Any) -> Path:
    """Replace the suite's gate block whole (write_suite merges mappings into its default gate)."""
    suite = yaml.safe_load(path.read_text())
    suite["gate"] = gate
    path.write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    return path


def write_gate(tmp: Path, gate: Any) -> Path:
    return set_gate(write_suite(tmp, [{"id": "a", "input": "hi", "ground_truth": "x"}], graders=GRADERS), gate)


def problems_of(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_suite(path)
    return info.value.problems


def test_suite_gate_kinds_load(tmp_path: Path) -> None:
    suite = load_suite(write_gate(tmp_path, AND_GATE))
    assert isinstance(suite.gate, LogicalGate) and isinstance(suite.gate.gates[0], SimpleGate)


def test_unknown_metric_key_names_the_line_and_the_closest_grader(tmp_path: Path) -> None:
    gate = {"kind": "logical", "operator": "and", "gates": [{"kind": "simple", "metric_key": "answer"},
                                                            {"kind": "simple", "metric_key": "ordr"}]}
    path = write_gate(tmp_path, gate)
    lines = path.read_text().splitlines()
    line = next(i for i, text in enumerate(lines, 1) if "metric_key: ordr" in text)
    assert problems_of(path) == [f"{path}:{line}: gate.gates.1.metric_key: names unknown grader 'ordr' "
                                 "(did you mean 'order'?); graders are: answer, order"]


@pytest.mark.parametrize(("gate", "expected"), [
    ({"kind": "simple"}, "gate.metric_key: required field is missing"),
    ({"kind": "simple", "metric_key": "answer", "aggregation": "p90"}, "gate.aggregation: input should be"),
    ({"kind": "logical", "operator": "xor", "gates": [{"kind": "simple", "metric_key": "answer"}]},
     "gate.operator: input should be 'and' or 'or'"),
    ({"kind": "logical", "operator": "and", "gates": []}, "gate.gates: list should have at least 1 item"),
    ({"kind": "logical", "operator": "and", "gates": [{"kind": "simpel", "metric_key": "answer"}]},
     "gate.gates.0.kind: unknown kind 'simpel'; did you mean 'simple'?"),
    ({"kind": "simple", "metric_key": "answer", "weights": {"answer": 1}},
     "gate.weights: unknown key 'weights'"),
])
def test_invalid_gates_are_reported_with_their_field(tmp_path: Path, gate: dict[str, Any], expected: str) -> None:
    problems = problems_of(write_gate(tmp_path, gate))
    assert any(expected in p for p in problems), problems
    assert all(p.startswith(f"{tmp_path / 'suite.yaml'}:") for p in problems)


def test_simple_gate_end_to_end(server: ScriptedServer, tmp_path: Path) -> None:
    """A real run: the simple gate on `answer` ignores the failing tool_order grader, exit 0."""
    rows = [{"id": "host", "input": "db host?", "ground_truth": "localhost", "expected_tool_order": ["read_file"]}]
    server.script = agent_script({"host": [text("It is localhost.")]})  # right answer, no tool call
    suite = set_gate(write_suite(tmp_path, rows, base_url=server.url, graders=GRADERS),
                     {"kind": "simple", "metric_key": "answer", "value": 1.0})
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Gate PASSED: answer avg_score = 1.000 ≥ 1" in result.stdout
    [line] = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert line["grades"]["order"]["score"] == 0.0 and line["score"] == 1.0 and line["passed"] is True
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["gate"]["aggregation"] == "avg_score" and summary["gate"]["weights"] == {"answer": 1.0}
    assert summary["graders"]["answer"]["p95"] == 1.0


def test_logical_gate_end_to_end_fails_with_exit_1(server: ScriptedServer, tmp_path: Path) -> None:
    rows = [{"id": "host", "input": "db host?", "ground_truth": "localhost", "expected_tool_order": ["read_file"]}]
    server.script = agent_script({"host": [call("read_file", {"path": ".env"}), text("It is db.internal.")]})
    gate = {"kind": "logical", "operator": "and", "gates": [{"kind": "simple", "metric_key": "answer"},
                                                            {"kind": "simple", "metric_key": "order"}]}
    suite = set_gate(write_suite(tmp_path, rows, base_url=server.url, graders=GRADERS), gate)
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"), "-q")
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout.strip() == ("Gate FAILED: all of (answer avg_score = 0.000 not ≥ 0.7; "
                                     "order avg_score = 1.000 ≥ 0.7)")
    [line] = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert line["passed"] is False and line["score"] == pytest.approx(0.5)  # mean of the sub-gates' scores


def test_logical_gate_with_nothing_graded_says_so_plainly() -> None:
    _, summary, _ = run_gate(AND_GATE, [{"answer": None, "order": None}])
    assert summary.gate is not None and summary.gate.passed is None and summary.gate.metric is None
    assert summary.gate.message == "Gate could not be evaluated: no sample was graded"


# --- custom reward gates (letta-evals' reward: {kind: custom, function: ...}) ---------------------------------


REWARDS = '''\
def quality_if_ascii(ctx):
    if ctx.grades["ascii_only"].score < 1.0:
        return 0.0
    return ctx.grades["quality"].score


def shaped(ctx):
    assert ctx.sample.id == "s1" and ctx.trajectory.turns[0].user == "draw"
    return {"score": ctx.scores["quality"], "metadata": {"seen": sorted(ctx.submissions)}}


def raises(ctx):
    raise KeyError("quality_typo")


def too_big(ctx):
    return 1.5


def two_args(ctx, extra):
    return 1.0
'''


def reward_gate(tmp_path: Path, function: str = "rewards.py:quality_if_ascii", **fields: Any) -> Gate:
    (tmp_path / "rewards.py").write_text(REWARDS)
    spec = gate_spec(kind="custom", function=function, **fields)
    return Gate(spec, ["quality", "ascii_only"], load_reward=partial(load_reward, base_dir=tmp_path))


def test_a_custom_reward_is_the_samples_score_and_its_rule_the_verdict(tmp_path: Path) -> None:
    gate = reward_gate(tmp_path)
    good = gate.judge_sample({"quality": Grade(score=0.8), "ascii_only": Grade(score=1.0)})
    assert (good.score, good.passed, good.failed_by) == (0.8, True, [])
    emoji = gate.judge_sample({"quality": Grade(score=0.9), "ascii_only": Grade(score=0.0)})
    assert (emoji.score, emoji.passed) == (0.0, False)
    assert emoji.failed_by[0].reason == "reward 0.00 not ≥ 0.7 (rewards.py:quality_if_ascii)"
    strict = reward_gate(tmp_path, pass_value=0.9).judge_sample({"quality": Grade(score=0.8),
                                                                 "ascii_only": Grade(score=1.0)})
    assert strict.passed is False


def test_a_reward_function_that_raises_or_returns_no_score_leaves_the_sample_errored_never_zero(
        tmp_path: Path) -> None:
    grades = {"quality": Grade(score=0.8), "ascii_only": Grade(score=1.0)}
    for function, expected in (("rewards.py:raises", "reward rewards.py:raises raised KeyError: 'quality_typo'"),
                               ("rewards.py:too_big", "reward rewards.py:too_big returned 1.5, outside [0, 1]")):
        verdict = reward_gate(tmp_path, function).judge_sample(grades)
        assert verdict.score is None and verdict.passed is None
        assert verdict.incomplete is not None and verdict.incomplete.category == "grader"
        assert verdict.incomplete.message == f"incomplete: {expected}"


def test_a_missing_grade_makes_the_sample_incomplete_before_the_reward_runs(tmp_path: Path) -> None:
    gate = reward_gate(tmp_path)
    verdict = gate.judge_sample({"quality": Grade.failed("judge error: timeout"), "ascii_only": Grade(score=1.0)})
    assert verdict.passed is None and verdict.incomplete is not None
    assert "no grade from quality" in verdict.incomplete.message


def test_the_reward_context_has_scores_submissions_sample_and_trajectory(tmp_path: Path) -> None:
    from evals_cli.models.sample import Sample
    from evals_cli.models.trajectory import Trajectory, Turn

    gate = reward_gate(tmp_path, "rewards.py:shaped")
    verdict = gate.judge_sample({"quality": Grade(score=0.75, submission="art"), "ascii_only": Grade(score=1.0)},
                                Trajectory(turns=[Turn(user="draw")]), Sample(id="s1", input="draw"))
    assert (verdict.score, verdict.passed) == (0.75, True)


def test_a_custom_reward_run_passes_on_the_share_of_samples_that_passed(tmp_path: Path) -> None:
    gate = reward_gate(tmp_path, value=0.6, pass_value=0.7)
    acc = Accumulator(gate, "suite", ["quality", "ascii_only"])
    for sid, quality, ascii_only in (("1", 0.9, 1.0), ("2", 0.8, 1.0), ("3", 0.9, 0.0)):
        grades = {"quality": Grade(score=quality), "ascii_only": Grade(score=ascii_only)}
        verdict = gate.judge_sample(grades)
        acc.add(SampleResult(sample_id=sid, grades=grades, score=verdict.score, passed=verdict.passed))
    summary = acc.summary()
    assert summary.gate is not None and summary.gate.passed is True
    assert summary.gate.message == ("Gate PASSED: share of samples whose reward (rewards.py:quality_if_ascii) is "
                                    "≥ 0.7 (2 of 3) = 0.667 ≥ 0.6")
    assert reward_gate(tmp_path).root.decide({}, None, (2, 3)).passed is False  # 0.667 not ≥ 0.7
    assert reward_gate(tmp_path).root.decide({}, None, (0, 0)).passed is None  # nothing graded: undecided


@pytest.mark.parametrize(("function", "expected"), [
    ("rewards.py:two_args", "gate (custom reward): rewards.py:two_args takes (ctx, extra); it must take one "
                            "argument"),
    ("missing.py:f", "gate (custom reward): custom reward file missing.py not found (relative to the suite file)"),
    ("rewards.py:nothing", "gate (custom reward): rewards.py has no function 'nothing'"),
])
def test_the_reward_function_is_checked_when_the_gate_is_built(tmp_path: Path, function: str,
                                                               expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        reward_gate(tmp_path, function)
    assert info.value.problems[0].startswith(expected)


def test_without_the_suite_folder_a_custom_gate_still_decides_runs(tmp_path: Path) -> None:
    """Merging shards and reports rebuild the gate from summary.json: they decide, they score no sample."""
    gate = Gate(gate_spec(kind="custom", function="rewards.py:quality_if_ascii"), ["quality"])
    assert gate.decide({}, None, (3, 4)).passed is True
    verdict = gate.judge_sample({"quality": Grade(score=1.0)})
    assert verdict.passed is None and verdict.incomplete is not None and "was not loaded" in \
        verdict.incomplete.message


def test_a_custom_reward_may_be_a_sub_gate(tmp_path: Path) -> None:
    (tmp_path / "rewards.py").write_text(REWARDS)
    spec = gate_spec(kind="logical", operator="and", gates=[
        {"kind": "custom", "function": "rewards.py:quality_if_ascii"},
        {"kind": "simple", "metric_key": "ascii_only", "pass_value": 1.0}])
    gate = Gate(spec, ["quality", "ascii_only"], load_reward=partial(load_reward, base_dir=tmp_path))
    assert gate.judge_sample({"quality": Grade(score=0.8), "ascii_only": Grade(score=1.0)}).passed is True
    assert gate.judge_sample({"quality": Grade(score=0.5), "ascii_only": Grade(score=1.0)}).passed is False
    spec = gate_spec(kind="logical", operator="or", gates=[
        {"kind": "custom", "function": "rewards.py:raises"}, {"kind": "simple", "metric_key": "ascii_only"}])
    errored = Gate(spec, ["quality", "ascii_only"], load_reward=partial(load_reward, base_dir=tmp_path)).judge_sample(
        {"quality": Grade(score=0.8), "ascii_only": Grade(score=1.0)})
    assert errored.passed is None and errored.incomplete is not None  # an erring reward decides nothing


@pytest.mark.parametrize(("fields", "expected"), [
    ({"function": "rewards.quality"}, "is not 'path/to/file.py:function'"),
    ({}, "function"),
    ({"function": "r.py:f", "aggregation": "avg_score"}, "aggregation"),
])
def test_custom_gate_spec_problems(fields: dict[str, Any], expected: str) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=expected):
        gate_spec(kind="custom", **fields)
