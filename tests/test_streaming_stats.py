"""The flat-memory run statistics agree with the exact computations over every value."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evals_cli.gate.scores import aggregate
from evals_cli.graders.agreement import krippendorff_alpha
from evals_cli.streaming_stats import AlphaSums, LatencyHistogram, ScoreCounts

AGGREGATIONS = ["avg_score", "accuracy", "min", "max", "median", "p50", "p95", "p99"]
scores = st.lists(st.sampled_from([0.0, 0.1, 0.25, 1 / 3, 0.5, 0.7, 0.9, 1.0]) | st.floats(0, 1), min_size=1,
                  max_size=60)


@settings(max_examples=200, deadline=None)
@given(scores)
def test_score_counts_match_the_list_aggregates(values: list[float]) -> None:
    counts = ScoreCounts(values)
    for name in AGGREGATIONS:
        assert aggregate(counts, name, lambda s: s >= 0.5) == pytest.approx(aggregate(values, name, lambda s: s >= 0.5))


def pairwise_alpha(units: list[dict[str, float]]) -> float | None:
    """Krippendorff's interval alpha straight from its definition, pair by pair (O(n^2)): the reference."""
    pairable = [list(u.values()) for u in units if len(u) >= 2]
    n = sum(len(u) for u in pairable)
    if n < 2:
        return None
    observed = sum(sum((a - b) ** 2 for i, a in enumerate(u) for j, b in enumerate(u) if i != j) / (len(u) - 1)
                   for u in pairable) / n
    pooled = [v for u in pairable for v in u]
    expected = sum((a - b) ** 2 for i, a in enumerate(pooled) for j, b in enumerate(pooled) if i != j) / (n * (n - 1))
    if expected < 1e-12:  # the definition's degenerate case (no variance at all), within float error
        return 1.0 if observed < 1e-12 else None
    return 1.0 - observed / expected


@settings(max_examples=200, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["a", "b", "c"]), st.floats(0, 1), max_size=3), max_size=12))
def test_alpha_from_running_sums_matches_the_definition(units: list[dict[str, float]]) -> None:
    sums = AlphaSums()
    for unit in units:
        sums.add(unit)
    reference = pairwise_alpha(units)
    got = sums.alpha()
    if reference is None or got is None:
        assert reference is None or got is None
    elif abs(reference) < 1e3:
        assert got == pytest.approx(reference, abs=1e-6)
    assert krippendorff_alpha(units) == got


def test_latency_percentiles_within_one_percent() -> None:
    rng = random.Random(0)
    values = [rng.lognormvariate(-2, 1) for _ in range(5000)]
    histogram = LatencyHistogram()
    for v in values:
        histogram.add(v)
    ordered = sorted(values)
    for q in (0.5, 0.95):
        exact = ordered[int(q * len(ordered))]
        assert histogram.quantile(q) == pytest.approx(exact, rel=0.01)
    assert len(histogram.bins) < 1500  # bounded by the value range, not by the count
