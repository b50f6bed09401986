"""gate.reducer over hand-computed examples: each repeat judged by the gate as the runner judges it, folded by the
Accumulator, and every reduced score, verdict, count and pass rate checked against the numbers worked out here."""

from __future__ import annotations

from typing import Any

import pytest

from evals_cli.gate.gate import Gate
from evals_cli.gate.reducers import Reducer
from evals_cli.models.results import ErrorInfo, Grade, RunSummary, SampleResult
from evals_cli.models.specs import GateSpec
from evals_cli.models.trajectory import Step, ToolCall, Trajectory, Turn
from evals_cli.output.summary import Accumulator

ERR = "error"


def _result(gate: Gate, sample_id: str, repeat: int, scores: dict[str, Any], unknown: bool = False) -> SampleResult:
    """One repeat as the runner writes it: its grades judged by the gate's one rule (or an endpoint error)."""
    if scores == ERR:
        return SampleResult(sample_id=sample_id, repeat=repeat, error=ErrorInfo(category="endpoint", message="down"))
    grades = {n: Grade.not_applicable("n/a") if s == "na" else Grade(score=s) for n, s in scores.items()}
    calls = [ToolCall(name="wipe", unknown_tool=True)] if unknown else []
    trajectory = Trajectory(turns=[Turn(user="q", steps=[Step(tool_calls=calls, content="a")])])
    verdict = gate.judge_sample(grades, trajectory)
    return SampleResult(sample_id=sample_id, repeat=repeat, grades=grades, score=verdict.score,
                        passed=verdict.passed, failed_by=verdict.failed_by, error=verdict.incomplete,
                        score_note=verdict.note, trajectory=trajectory)


def _summary(spec: dict[str, Any], runs: dict[str, list[Any]], graders: list[str] | None = None,
             specs: dict[str, Any] | None = None) -> RunSummary:
    names = graders or ["a"]
    gate = Gate(GateSpec(**spec), names, specs=specs)
    repeats = max(len(r) for r in runs.values())
    acc = Accumulator(gate, "suite", names, repeats=repeats)
    for sample_id, repeats_of in runs.items():
        for i, scores in enumerate(repeats_of):
            acc.add(_result(gate, sample_id, i, scores if isinstance(scores, dict | str) else {"a": scores}))
    return acc.summary()


# s1 [0.2, 0.9, 0.9, 0.5]; s2 [0.4, 1.0, error, 0.3]; a repeat passes at 0.6 (pass_value), the run on
# avg_score >= 0.5 (the reduced samples' average)
RUNS: dict[str, list[Any]] = {"s1": [0.2, 0.9, 0.9, 0.5], "s2": [0.4, 1.0, ERR, 0.3]}
GATE = {"value": 0.5, "pass_value": 0.6}


@pytest.mark.parametrize(("reducer", "scores", "verdicts"), [
    ("mean", {"s1": 2.5 / 4, "s2": 1.7 / 3}, {"s1": True, "s2": False}),  # the errored repeat left out
    ("median", {"s1": 0.7, "s2": 0.4}, {"s1": True, "s2": False}),  # (0.5 + 0.9) / 2; the middle of 3
    ("mode", {"s1": 0.9, "s2": 0.3}, {"s1": True, "s2": False}),  # s2: a three-way tie takes the lowest
    ("max", {"s1": 0.9, "s2": 1.0}, {"s1": True, "s2": True}),  # a pass stands whatever the errored repeat
])
def test_each_statistic_over_a_hand_computed_example(reducer: str, scores: dict[str, float],
                                                     verdicts: dict[str, bool]) -> None:
    summary = _summary({**GATE, "reducer": reducer}, RUNS)
    reduced = summary.reduced
    assert reduced is not None and reduced.reducer == reducer and reduced.repeats == 4
    by_id = {s.sample_id: s for s in reduced.per_sample}
    assert {k: s.score for k, s in by_id.items()} == pytest.approx(scores)
    assert {k: s.grades["a"] for k, s in by_id.items()} == pytest.approx(scores)
    assert {k: s.passed for k, s in by_id.items()} == verdicts
    assert (by_id["s2"].repeats, by_id["s2"].graded, by_id["s2"].passes) == (4, 3, 1)
    passed = sum(verdicts.values())
    assert (reduced.samples, reduced.passed, reduced.failed, reduced.errored) == (2, passed, 2 - passed, 0)
    mean = sum(scores.values()) / 2
    assert reduced.graders["a"].avg_score == pytest.approx(mean)
    assert reduced.graders["a"].accuracy == passed / 2
    assert summary.gate is not None and summary.gate.metric == pytest.approx(mean)
    assert summary.gate.passed is (mean >= 0.5)
    # the run's own counts still count runs: 7 graded, 3 passed (0.9, 0.9, 1.0), 1 errored
    assert (summary.total, summary.passed, summary.failed, summary.errored) == (8, 3, 4, 1)
    assert summary.graders["a"].avg_score == pytest.approx((0.2 + 0.9 + 0.9 + 0.5 + 0.4 + 1.0 + 0.3) / 7)


def test_at_least_n_counts_passed_repeats_and_an_errored_one_is_unknown() -> None:
    two = _summary({**GATE, "reducer": "at_least_2", "aggregation": "pass_rate"}, RUNS)
    assert two.reduced is not None
    by_id = {s.sample_id: s for s in two.reduced.per_sample}
    assert by_id["s1"].passed is True and by_id["s1"].score == 1.0  # 0.9 and 0.9 passed
    # s2: 1.0 passed, and the errored repeat could have been the second pass: not known, never a fail
    assert by_id["s2"].passed is None and by_id["s2"].error is not None
    assert by_id["s2"].error.category == "endpoint" and "not known" in by_id["s2"].error.message
    assert (two.reduced.passed, two.reduced.failed, two.reduced.errored) == (1, 0, 1)
    assert two.gate is not None and two.gate.metric == 1.0  # pass_rate over the samples with a verdict
    three = _summary({**GATE, "reducer": "at_least_3", "aggregation": "pass_rate"}, RUNS)
    assert three.reduced is not None
    by_id = {s.sample_id: s for s in three.reduced.per_sample}
    assert by_id["s1"].passed is False and by_id["s1"].failed_by[0].rule == "at_least"  # 2 of 4
    assert by_id["s2"].passed is False  # 1 passed + 1 errored: 3 cannot be reached
    assert by_id["s1"].grades["a"] == 0.0 and three.gate is not None and three.gate.passed is False


def test_max_that_fails_while_a_repeat_errored_has_no_verdict() -> None:
    summary = _summary({**GATE, "reducer": "max", "aggregation": "pass_rate"},
                       {"s1": [0.2, ERR, 0.5], "s2": [0.1, 0.4, 0.3]})
    assert summary.reduced is not None
    by_id = {s.sample_id: s for s in summary.reduced.per_sample}
    assert by_id["s1"].passed is None and by_id["s1"].error is not None  # the errored one might have passed
    assert by_id["s2"].passed is False and by_id["s2"].score == pytest.approx(0.4)
    assert (summary.reduced.failed, summary.reduced.errored) == (1, 1)


def test_a_sample_whose_every_repeat_errored_is_errored_not_zero() -> None:
    summary = _summary({**GATE, "reducer": "mean", "aggregation": "pass_rate"},
                       {"s1": [ERR, ERR], "s2": [0.9, 0.8]})
    assert summary.reduced is not None
    s1 = summary.reduced.per_sample[0]
    assert s1.passed is None and s1.score is None and s1.error is not None and "all 2 repeats errored" in \
        s1.error.message
    assert summary.reduced.graders["a"].avg_score == pytest.approx(0.85)  # s2 alone: no zero for s1
    assert summary.gate is not None and summary.gate.metric == 1.0


def test_a_required_grader_is_judged_on_its_reduced_score() -> None:
    from evals_cli.graders.kinds.tool import MatchSpec

    # avoid is required at 1 and weighs nothing: a gate weighted on `a` alone
    specs = {"a": MatchSpec(function="contains"), "avoid": MatchSpec(function="contains", required=True,
                                                                    threshold=1.0)}
    runs = {"s1": [{"a": 1.0, "avoid": 1.0}, {"a": 1.0, "avoid": 0.0}, {"a": 1.0, "avoid": 1.0}]}
    spec = {**GATE, "weights": {"a": 1.0, "avoid": 0.0}}
    mean = _summary({**spec, "reducer": "mean"}, runs, ["a", "avoid"], specs)
    assert mean.reduced is not None
    s1 = mean.reduced.per_sample[0]
    assert s1.passed is False and s1.failed_by[0].grader == "avoid"  # its mean 0.67 < its threshold 1
    assert s1.grades["avoid"] == pytest.approx(2 / 3) and s1.score == 1.0
    mode = _summary({**spec, "reducer": "mode"}, runs, ["a", "avoid"], specs)
    assert mode.reduced is not None and mode.reduced.per_sample[0].passed is True  # mode 1 of (1, 0, 1)


def test_a_call_to_a_tool_never_offered_fails_under_mean_not_under_max() -> None:
    gate = Gate(GateSpec(**GATE, reducer="mean"), ["a"])
    acc = Accumulator(gate, "suite", ["a"], repeats=2)
    acc.add(_result(gate, "s1", 0, {"a": 1.0}, unknown=True))
    acc.add(_result(gate, "s1", 1, {"a": 1.0}))
    reduced = acc.summary().reduced
    assert reduced is not None and reduced.per_sample[0].passed is False
    assert reduced.per_sample[0].failed_by[-1].rule == "unknown_tool"
    gate = Gate(GateSpec(**GATE, reducer="max"), ["a"])
    acc = Accumulator(gate, "suite", ["a"], repeats=2)
    acc.add(_result(gate, "s1", 0, {"a": 1.0}, unknown=True))
    acc.add(_result(gate, "s1", 1, {"a": 1.0}))
    reduced = acc.summary().reduced
    assert reduced is not None and reduced.per_sample[0].passed is True


def test_na_repeats_are_left_out_and_an_all_na_sample_has_nothing_to_check() -> None:
    summary = _summary({**GATE, "reducer": "mean"}, {"s1": [{"a": "na"}, {"a": 1.0}], "s2": [{"a": "na"}] * 2})
    assert summary.reduced is not None
    by_id = {s.sample_id: s for s in summary.reduced.per_sample}
    assert by_id["s1"].score == 1.0 and by_id["s1"].passed is True  # n/a is not a score
    assert by_id["s2"].passed is None and by_id["s2"].note is not None and summary.reduced.unchecked == 1


def test_without_a_reducer_or_with_one_repeat_nothing_is_reduced() -> None:
    plain = _summary(GATE, RUNS)
    assert plain.reduced is None and plain.gate is not None
    assert plain.gate.metric == pytest.approx((0.2 + 0.9 + 0.9 + 0.5 + 0.4 + 1.0 + 0.3) / 7)  # every run
    one = _summary({**GATE, "reducer": "mean"}, {"s1": [0.9], "s2": [0.4]})
    assert one.reduced is None and one.gate is not None and "each sample" not in one.gate.message


def test_reducer_names() -> None:
    assert Reducer.parse("at_least_12") == Reducer("at_least_12", "at_least", 12)
    assert Reducer.parse("mode").statistic([1.0, 0.0]) == 0.0  # a tie is no majority: the lowest
    for bad in ("at_least_0", "at_least_", "at_least_02", "avg", "at_least_x"):
        with pytest.raises(ValueError, match="unknown reducer"):
            GateSpec(reducer=bad)
