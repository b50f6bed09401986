"""The statistics `evals compare` needs, in plain `math` and `random` (no numpy/scipy dependency for two tests),
and the shape of a score distribution the gate aggregates.

- McNemar's test on paired pass/fail outcomes: only the discordant pairs carry information about a
  change; exact binomial when they are few (the chi-square approximation is poor below ~25), chi-square
  with continuity correction otherwise.
- A paired percentile bootstrap of a mean difference, seeded so the same two runs always give the same
  interval (a CI that moves between invocations would make a CI gate flaky).
- The exact (Clopper-Pearson) interval of a pass rate: it keeps its coverage where a bootstrap collapses to a
  point (every sample passed, or none did), which a rolling gate over a few dozen conversations often meets.
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


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz), which converges in about
    sqrt(max(a, b)) steps where x < (a + 1) / (a + b + 2)."""
    tiny, eps = 1e-300, 1e-15
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 100_000):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < eps:
            break
    return h


def beta_cdf(x: float, a: float, b: float) -> float:
    """The regularized incomplete beta function I_x(a, b): the CDF of Beta(a, b) at x."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def _beta_quantile(q: float, a: float, b: float) -> float:
    lo, hi = 0.0, 1.0
    while hi - lo > 1e-10:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if beta_cdf(mid, a, b) < q else (lo, mid)
    return (lo + hi) / 2


def clopper_pearson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The exact two-sided interval of a binomial proportion after k successes in n trials: the alpha/2 quantile
    of Beta(k, n - k + 1) (0 when k = 0) and the 1 - alpha/2 quantile of Beta(k + 1, n - k) (1 when k = n)."""
    if n <= 0 or not 0 <= k <= n:
        raise ValueError(f"clopper_pearson: {k} successes in {n} trials")
    alpha = (1.0 - confidence) / 2.0
    low = 0.0 if k == 0 else _beta_quantile(alpha, k, n - k + 1)
    high = 1.0 if k == n else _beta_quantile(1.0 - alpha, k + 1, n - k)
    return low, high


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
