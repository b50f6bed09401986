"""How several verdicts become one score, and how much the verdicts agree.

One judge sampled n times: the spread (max - min) of its normalised scores. A panel of judges over a
whole run: Krippendorff's alpha (interval metric), which corrects agreement for chance and tolerates a
judge that failed on some samples (missing values).
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Mapping


def combine(scores: list[float], method: str) -> float:
    """mean, median, or majority (the most frequent score; a tie falls back to the median)."""
    if method == "mean":
        return sum(scores) / len(scores)
    if method == "median":
        return statistics.median(scores)
    counts = Counter(round(s, 9) for s in scores).most_common()
    if len(counts) > 1 and counts[0][1] == counts[1][1]:
        return statistics.median(scores)
    return counts[0][0]


def spread(scores: list[float]) -> float:
    return max(scores) - min(scores) if scores else 0.0


def _pair_sum(values: list[float]) -> float:
    """Sum over ordered pairs i != j of (v_i - v_j)^2, in O(n)."""
    n, total, squares = len(values), sum(values), sum(v * v for v in values)
    return 2 * (n * squares - total * total)


def krippendorff_alpha(units: Iterable[Mapping[str, float]]) -> float | None:
    """Interval alpha over units (each: judge -> score). None when there is nothing to compare.

    alpha = 1 - D_o / D_e, with D_o the disagreement within units and D_e the disagreement expected from
    all pairable values pooled; only units with two or more values count.
    """
    pairable = [list(u.values()) for u in units if len(u) >= 2]
    n = sum(len(u) for u in pairable)
    if n < 2:
        return None
    observed = sum(_pair_sum(u) / (len(u) - 1) for u in pairable) / n
    pooled = [v for u in pairable for v in u]
    expected = _pair_sum(pooled) / (n * (n - 1))
    if expected == 0:
        return 1.0 if observed == 0 else None
    return 1.0 - observed / expected
