"""The statistics `evals compare` needs, in plain `math` and `random` (no numpy/scipy dependency for two tests),
and the shape of a score distribution the gate aggregates.

- McNemar's test on paired pass/fail outcomes: only the discordant pairs carry information about a
  change; exact binomial when they are few (the chi-square approximation is poor below ~25), chi-square
  with continuity correction otherwise.
- A paired percentile bootstrap of a mean difference, seeded so the same two runs always give the same
  interval (a CI that moves between invocations would make a CI gate flaky).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from typing import Literal, NamedTuple, Protocol, runtime_checkable

EXACT_BELOW = 25  # discordant pairs under which McNemar's test uses the exact binomial distribution


class McNemarResult(NamedTuple):
    method: Literal["exact", "chi2", "none"]
    statistic: float | None  # chi-square statistic (chi2 method only)
    p_value: float


def binomial_two_sided(k: int, n: int) -> float:
    """Two-sided exact p-value of k successes in n fair coin flips: 2·P(X ≤ min(k, n−k)), capped at 1."""
    if n <= 0:
        return 1.0
    low = min(k, n - k)
    tail = sum(math.comb(n, i) for i in range(low + 1)) / 2**n
    return min(1.0, 2.0 * tail)


def chi2_sf_1df(x: float) -> float:
    """Survival function of the chi-square distribution with one degree of freedom: P(X > x) = erfc(√(x/2))."""
    return math.erfc(math.sqrt(max(x, 0.0) / 2.0))


def mcnemar(b: int, c: int, exact_below: int = EXACT_BELOW) -> McNemarResult:
    """McNemar's test for b pairs that went one way and c that went the other (both ways count alike)."""
    n = b + c
    if n == 0:
        return McNemarResult("none", None, 1.0)
    if n < exact_below:
        return McNemarResult("exact", None, binomial_two_sided(b, n))
    statistic = (abs(b - c) - 1) ** 2 / n
    return McNemarResult("chi2", statistic, chi2_sf_1df(statistic))


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """The q-quantile by linear interpolation between order statistics (numpy's default method)."""
    if not sorted_values:
        raise ValueError("quantile of an empty sequence")
    pos = q * (len(sorted_values) - 1)
    low = math.floor(pos)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (pos - low)


def bootstrap_mean_ci(differences: Sequence[float], *, resamples: int = 10_000, seed: int = 0,
                      confidence: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean of paired differences, from a fresh `random.Random(seed)`.

    Each call starts its own generator, so a grader's interval does not depend on which other graders
    were compared before it.
    """
    if not differences:
        raise ValueError("bootstrap of an empty sample")
    values = list(differences)
    n = len(values)
    rng = random.Random(seed)
    means = sorted(math.fsum(rng.choices(values, k=n)) / n for _ in range(resamples))
    alpha = (1.0 - confidence) / 2.0
    return quantile(means, alpha), quantile(means, 1.0 - alpha)


@runtime_checkable
class ScoreDistribution(Protocol):
    """A grader's sample scores kept as counts (streaming_stats.ScoreCounts): what `gate.aggregate` reads
    besides a plain list. A protocol here, so that the gate (a lower layer) never imports the output package."""

    total: float

    def __len__(self) -> int: ...

    def min(self) -> float: ...

    def max(self) -> float: ...

    def share(self, predicate: Callable[[float], bool]) -> float: ...

    def quantile(self, q: float) -> float: ...
