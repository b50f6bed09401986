"""Aggregation and the pass/fail decision. Grades with score None (errors) are left out, never counted as 0."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable

from evals_cli.models.results import GateResult, Grade, GraderAggregate, Reliability
from evals_cli.models.specs import GateSpec

_EPS = 1e-9  # averages of 0.7s land on 0.69999...: compare as a person reading the table would
OPS: dict[str, Callable[[float, float], bool]] = {
    "gt": lambda a, b: a > b + _EPS, "gte": lambda a, b: a >= b - _EPS,
    "lt": lambda a, b: a < b - _EPS, "lte": lambda a, b: a <= b + _EPS,
    "eq": lambda a, b: abs(a - b) <= _EPS,
}
RUN_LEVEL = ("pass_at_k", "pass_hat_k")
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

    def decide(self, aggregates: dict[str, GraderAggregate], reliability: Reliability | None = None) -> GateResult:
        spec = self.spec
        if spec.aggregation in RUN_LEVEL:
            # pass@k / pass^k are properties of whole samples over their repeats, not of single graders
            metric = getattr(reliability, spec.aggregation) if reliability else None
            parts = f"over {reliability.samples if reliability else 0} samples × {reliability.repeats if reliability else 1}"
        else:
            metrics = {g: getattr(aggregates[g], spec.aggregation) if g in aggregates else None for g in self.weights}
            metric = weighted(metrics, self.weights)
            parts = ", ".join(f"{g}×{w:g}" for g, w in self.weights.items())
        if metric is None:
            return GateResult(passed=None, metric=None, op=spec.op, value=spec.value, aggregation=spec.aggregation,
                              weights=self.weights, message="Gate could not be evaluated: no sample was graded")
        passed = OPS[spec.op](metric, spec.value)
        verdict = "PASSED" if passed else "FAILED"
        what = spec.aggregation if spec.aggregation in RUN_LEVEL else f"weighted {spec.aggregation}"
        message = (f"Gate {verdict}: {what} ({parts}) = {metric:.3f} "
                   f"{SYMBOLS[spec.op] if passed else 'not ' + SYMBOLS[spec.op]} {spec.value:g}")
        return GateResult(passed=passed, metric=metric, op=spec.op, value=spec.value, aggregation=spec.aggregation,
                          weights=self.weights, message=message)


def __getattr__(name: str):  # type: ignore[no-untyped-def]
    if name == "Accumulator":  # moved to evals_cli.output.summary; kept importable from here
        from evals_cli.output.summary import Accumulator

        return Accumulator
    raise AttributeError(name)
