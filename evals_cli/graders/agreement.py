"""How several verdicts become one score, and how much the verdicts agree.

One judge sampled n times: the spread (max - min) of its normalised scores. A panel of judges over a
whole run: Krippendorff's alpha (interval metric), which corrects agreement for chance and tolerates a
judge that failed on some samples (missing values).
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Mapping

from evals_cli.streaming_stats import AlphaSums


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


def krippendorff_alpha(units: Iterable[Mapping[str, float]]) -> float | None:
    """Interval alpha over units (each: judge -> score); None when there is nothing to compare.

    alpha = 1 - D_o / D_e, with D_o the disagreement within units and D_e the disagreement expected from
    all pairable values pooled; only units with two or more values count. Computed from running sums
    (`AlphaSums`), the same code the run summary uses.
    """
    sums = AlphaSums()
    for unit in units:
        sums.add(dict(unit))
    return sums.alpha()
