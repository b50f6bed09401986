"""Run statistics kept in memory that does not grow with the number of samples.

Scores are stored as counts of distinct values: graders give few distinct scores (0, 1, k/n, judge
levels), so medians and percentiles stay exact while memory stays flat. Latencies are continuous, so they go
into log-spaced bins 1% wide (percentiles within 1%). Krippendorff's alpha needs only running sums.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable


class ScoreCounts:
    """A multiset of scores: what `gate.aggregate` needs, without keeping every score."""

    def __init__(self, values: Iterable[float] = ()) -> None:
        self.counts: Counter[float] = Counter()
        self.n = 0
        self.total = 0.0
        for value in values:
            self.append(value)

    def append(self, value: float) -> None:
        self.counts[value] += 1
        self.n += 1
        self.total += value

    def __len__(self) -> int:
        return self.n

    def __bool__(self) -> bool:
        return self.n > 0

    def min(self) -> float:
        return min(self.counts)

    def max(self) -> float:
        return max(self.counts)

    def share(self, predicate: Callable[[float], bool]) -> float:
        return sum(c for v, c in self.counts.items() if predicate(v)) / self.n

    def at_rank(self, rank: int) -> float:
        seen = 0
        for value in sorted(self.counts):
            seen += self.counts[value]
            if rank < seen:
                return value
        raise IndexError(rank)

    def quantile(self, q: float) -> float:
        """Linear interpolation between the closest ranks (numpy's default): q=0.5 is the median."""
        position = (self.n - 1) * q
        low = math.floor(position)
        high = min(low + 1, self.n - 1)
        a, b = self.at_rank(low), self.at_rank(high)
        return a + (b - a) * (position - low)


class LatencyHistogram:
    """Latencies in log-spaced bins (each 1% wider than the last, from 0.1 ms)."""

    FLOOR = 1e-4
    STEP = math.log(1.01)

    def __init__(self) -> None:
        self.bins: Counter[int] = Counter()
        self.n = 0

    def add(self, seconds: float) -> None:
        index = 0 if seconds <= self.FLOOR else round(math.log(seconds / self.FLOOR) / self.STEP)
        self.bins[index] += 1
        self.n += 1

    def quantile(self, q: float) -> float | None:
        if not self.n:
            return None
        rank = min(self.n - 1, int(q * self.n))
        seen = 0
        for index in sorted(self.bins):
            seen += self.bins[index]
            if rank < seen:
                return self.FLOOR * math.exp(index * self.STEP)
        return None


class AlphaSums:
    """Krippendorff's alpha (interval) from running sums over units (each: judge -> score)."""

    def __init__(self) -> None:
        self.units = 0
        self.n = 0
        self.total = 0.0
        self.squares = 0.0
        self.within = 0.0
        self.judges: set[str] = set()

    def add(self, unit: dict[str, float]) -> None:
        self.units += 1
        self.judges.update(unit)
        values = list(unit.values())
        if len(values) < 2:
            return
        m, s, sq = len(values), sum(values), sum(v * v for v in values)
        self.within += 2 * (m * sq - s * s) / (m - 1)
        self.n += m
        self.total += s
        self.squares += sq

    def alpha(self) -> float | None:
        if self.n < 2:
            return None
        observed = self.within / self.n
        expected = 2 * (self.n * self.squares - self.total * self.total) / (self.n * (self.n - 1))
        if abs(expected) < 1e-12:
            return 1.0 if abs(observed) < 1e-12 else None
        return 1.0 - observed / expected
