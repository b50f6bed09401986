"""The numbers the gate reads: a grade's counted score, the weighted score, and a grader's aggregates over the
run. Grades with score None (errors) are left out, never counted as 0; n/a grades too, unless the gate says
`not_applicable: pass`."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable

from evals_cli.models.results import Grade
from evals_cli.stats import ScoreDistribution

RUN_LEVEL = ("pass_at_k", "pass_hat_k")
SAMPLE_LEVEL = ("pass_rate",)  # the share of samples whose own verdict passed: a gate that fails when samples do
PERCENTILES = {"p50": 0.50, "p95": 0.95, "p99": 0.99}


def threshold_key(op: str, value: float) -> str:
    """How a per-sample pass rule is named in `GraderAggregate.accuracy_at` (e.g. 'gte 1')."""
    return f"{op} {value:g}"


def weighted(scores: dict[str, float | None], weights: dict[str, float]) -> float | None:
    """Weighted mean over the scores present; missing ones are dropped and the rest renormalised."""
    present = [(w, score) for g, w in weights.items() if (score := scores.get(g)) is not None]
    total = sum(w for w, _ in present)
    if total <= 0:
        return None
    return sum(w * score for w, score in present) / total


def counted(grade: Grade, na_pass: bool = False) -> float | None:
    """The score a weighted score or an aggregate reads from a grade: None for an error, and for n/a unless
    the gate counts n/a as a pass (its conventional 1.0 is not a result)."""
    if grade.applicable or na_pass:
        return grade.score
    return None


def percentile(scores: list[float], q: float) -> float:
    """Linear interpolation between the closest ranks (numpy's default), so p50 is the median."""
    ordered = sorted(scores)
    position = (len(ordered) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def aggregate(scores: list[float] | ScoreDistribution, aggregation: str,
              passes: Callable[[float], bool]) -> float | None:
    """One number from a grader's sample scores (a list, or their counts); `passes` decides what counts for
    accuracy."""
    if not scores:
        return None
    if isinstance(scores, ScoreDistribution):
        return _aggregate_counts(scores, aggregation, passes)
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
    if aggregation in PERCENTILES:
        return percentile(scores, PERCENTILES[aggregation])
    raise ValueError(f"unknown aggregation {aggregation}")


def _aggregate_counts(scores: ScoreDistribution, aggregation: str, passes: Callable[[float], bool]) -> float:
    if aggregation == "avg_score":
        return scores.total / len(scores)
    if aggregation == "accuracy":
        return scores.share(passes)
    if aggregation == "min":
        return scores.min()
    if aggregation == "max":
        return scores.max()
    if aggregation == "median":
        return scores.quantile(0.5)
    if aggregation in PERCENTILES:
        return scores.quantile(PERCENTILES[aggregation])
    raise ValueError(f"unknown aggregation {aggregation}")
