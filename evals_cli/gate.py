"""Aggregation and the pass/fail decision. Grades with score None (errors) are left out, never counted as 0."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Iterable

from evals_cli.models.results import GateResult, Grade, GraderAggregate, RunSummary, SampleResult
from evals_cli.models.specs import GateSpec
from evals_cli.models.trajectory import Usage

_EPS = 1e-9  # averages of 0.7s land on 0.69999...: compare as a person reading the table would
OPS: dict[str, Callable[[float, float], bool]] = {
    "gt": lambda a, b: a > b + _EPS, "gte": lambda a, b: a >= b - _EPS,
    "lt": lambda a, b: a < b - _EPS, "lte": lambda a, b: a <= b + _EPS,
    "eq": lambda a, b: abs(a - b) <= _EPS,
}
SYMBOLS = {"gt": ">", "gte": "≥", "lt": "<", "lte": "≤", "eq": "="}


def effective_weights(gate: GateSpec, graders: Iterable[str]) -> dict[str, float]:
    """The gate's weights over the graders that actually run (equal weights when none are given)."""
    active = list(graders)
    if gate.weights:
        weights = {g: w for g, w in gate.weights.items() if g in active}
        if weights and sum(weights.values()) > 0:
            return weights
    return {g: 1.0 for g in active}


def weighted(scores: dict[str, float | None], weights: dict[str, float]) -> float | None:
    """Weighted mean over the scores present; missing ones are dropped and the rest renormalised."""
    total = sum(w for g, w in weights.items() if scores.get(g) is not None)
    if total <= 0:
        return None
    return sum(w * scores[g] for g, w in weights.items() if scores.get(g) is not None) / total  # type: ignore[operator]


def aggregate(scores: list[float], aggregation: str, passes: Callable[[float], bool]) -> float | None:
    if not scores:
        return None
    if aggregation == "avg_score":
        return sum(scores) / len(scores)
    if aggregation == "accuracy":
        return sum(1 for s in scores if passes(s)) / len(scores)
    if aggregation == "min":
        return min(scores)
    if aggregation == "max":
        return max(scores)
    if aggregation == "median":
        return statistics.median(scores)
    raise ValueError(f"unknown aggregation {aggregation}")


class Gate:
    """Decides per sample and over the run."""

    def __init__(self, spec: GateSpec, graders: Iterable[str]) -> None:
        self.spec = spec
        self.weights = effective_weights(spec, graders)

    def passes(self, score: float) -> bool:
        return OPS[self.spec.sample_op](score, self.spec.sample_value)

    def score_sample(self, grades: dict[str, Grade]) -> tuple[float | None, bool | None]:
        score = weighted({g: grade.score for g, grade in grades.items()}, self.weights)
        return score, (None if score is None else self.passes(score))

    def decide(self, aggregates: dict[str, GraderAggregate]) -> GateResult:
        spec = self.spec
        metrics = {g: getattr(aggregates[g], spec.aggregation) if g in aggregates else None for g in self.weights}
        metric = weighted(metrics, self.weights)
        parts = ", ".join(f"{g}×{w:g}" for g, w in self.weights.items())
        if metric is None:
            return GateResult(passed=None, metric=None, op=spec.op, value=spec.value, aggregation=spec.aggregation,
                              weights=self.weights, message="Gate could not be evaluated: no sample was graded")
        passed = OPS[spec.op](metric, spec.value)
        verdict = "PASSED" if passed else "FAILED"
        message = (f"Gate {verdict}: weighted {spec.aggregation} ({parts}) = {metric:.3f} "
                   f"{SYMBOLS[spec.op] if passed else 'not ' + SYMBOLS[spec.op]} {spec.value:g}")
        return GateResult(passed=passed, metric=metric, op=spec.op, value=spec.value, aggregation=spec.aggregation,
                          weights=self.weights, message=message)


class Accumulator:
    """Folds results into a summary as they arrive (no need to keep every result in memory)."""

    def __init__(self, gate: Gate, suite: str, grader_names: Iterable[str]) -> None:
        self.gate = gate
        self.suite = suite
        self.scores: dict[str, list[float]] = {g: [] for g in grader_names}
        self.grade_errors: Counter[str] = Counter()
        self.total = self.errored = self.passed = self.failed = 0
        self.errors_by_category: Counter[str] = Counter()
        self.usage = Usage()
        self.judge_usage = Usage()

    def add(self, result: SampleResult) -> None:
        self.total += 1
        self.usage.add(result.usage)
        self.judge_usage.add(result.judge_usage)
        if result.error is not None:
            self.errored += 1
            self.errors_by_category[result.error.category] += 1
            return
        for name, grade in result.grades.items():
            if grade.score is None:
                self.grade_errors[name] += 1
                self.errors_by_category["judge" if "judge" in grade.metadata else "grader"] += 1
            else:
                self.scores.setdefault(name, []).append(grade.score)
        if result.passed is True:
            self.passed += 1
        elif result.passed is False:
            self.failed += 1

    def aggregates(self) -> dict[str, GraderAggregate]:
        out = {}
        for name, scores in self.scores.items():
            out[name] = GraderAggregate(
                count=len(scores), errors=self.grade_errors[name],
                avg_score=aggregate(scores, "avg_score", self.gate.passes),
                accuracy=aggregate(scores, "accuracy", self.gate.passes),
                min=aggregate(scores, "min", self.gate.passes), max=aggregate(scores, "max", self.gate.passes),
                median=aggregate(scores, "median", self.gate.passes),
            )
        return out

    def summary(self) -> RunSummary:
        aggregates = self.aggregates()
        return RunSummary(
            suite=self.suite, total=self.total, graded=self.total - self.errored, errored=self.errored,
            passed=self.passed, failed=self.failed, errors_by_category=dict(self.errors_by_category),
            graders=aggregates, gate=self.gate.decide(aggregates), usage=self.usage, judge_usage=self.judge_usage,
        )
