"""The statistics of a judge measured against a person's labels, in plain `math` and `random`: the runtime must not
need numpy or scipy for a handful of counts (the tests check every figure against scipy and scikit-learn).

"pass" is the positive class: the person's label is the truth, the judge's verdict the test.

- tpr (sensitivity) and tnr (specificity) from the confusion counts; Cohen's kappa for agreement beyond chance.
- The Rogan-Gladen estimator corrects an observed pass rate p for a judge of known tpr and tnr:
  (p + tnr - 1) / (tpr + tnr - 1). A value outside [0, 1] means the calibration does not fit the run (the run's
  pass share lies outside what a judge of these rates can produce): it is clipped, and the raw value is kept so
  that the clipping is said. When tpr + tnr <= 1 the judge is no better than chance and there is nothing to
  correct with: refused, never a number.
- Its 95% interval is a Monte Carlo over every source of doubt at once: Beta posteriors (Jeffreys priors,
  Beta(1/2, 1/2)) for tpr and tnr from the labels, and for the judge's pass probability on the run the pair of
  Beta distributions whose quantiles are its Clopper-Pearson bounds, drawn together from a seeded
  `random.Random`, each draw corrected and clipped, and the 2.5% and 97.5% percentiles taken. A bootstrap that
  resamples the run's own items cannot do this: a judge that passed every item gives every resample the same
  pass share, and the interval collapses to a point exactly where the doubt is largest. A draw whose judge is at
  or below chance says nothing of the pass rate: it counts as a uniform draw on [0, 1]. The interval is for the
  pass rate of the population the run's items come from (the agent's pass probability on items like these);
  docs/measuring-the-judge.md has the simulation study of its coverage (bench/calibration_coverage.py).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from evals_cli.stats import quantile

RESAMPLES = 2000  # bootstrap resamples of the paired judge comparison
DRAWS = 20_000  # Monte Carlo draws of the corrected pass rate: the 2.5% bound of 4,000 draws wanders by ±0.02
SEED = 0
JEFFREYS = 0.5  # the Beta prior's two parameters: weak, and symmetric between pass and fail
CHANCE = "the judge is no better than chance"
FIT_TOLERANCE = 1e-9  # a raw correction this far outside [0, 1] is float noise, not a misfit


@dataclass(frozen=True)
class Confusion:
    """Judge against person over the labelled items."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    @classmethod
    def of(cls, pairs: Sequence[tuple[bool, bool]]) -> Confusion:
        """From (judge passed, person passed) pairs."""
        tp = sum(1 for j, h in pairs if j and h)
        fp = sum(1 for j, h in pairs if j and not h)
        fn = sum(1 for j, h in pairs if not j and h)
        return cls(tp, fp, fn, len(pairs) - tp - fp - fn)

    @property
    def n(self) -> int:
        return self.tp + self.fp + self.fn + self.tn

    @property
    def positives(self) -> int:
        """Items the person passed."""
        return self.tp + self.fn

    @property
    def negatives(self) -> int:
        """Items the person failed."""
        return self.tn + self.fp

    @property
    def tpr(self) -> float | None:
        return self.tp / self.positives if self.positives else None

    @property
    def tnr(self) -> float | None:
        return self.tn / self.negatives if self.negatives else None

    @property
    def agreement(self) -> float | None:
        return (self.tp + self.tn) / self.n if self.n else None

    @property
    def kappa(self) -> float | None:
        """Cohen's kappa: (po - pe) / (1 - pe). Undefined (None) when chance agreement is already 1 (the judge and
        the person each gave one and the same verdict to everything)."""
        n = self.n
        if not n:
            return None
        po = (self.tp + self.tn) / n
        pe = ((self.tp + self.fp) * (self.tp + self.fn) + (self.fn + self.tn) * (self.fp + self.tn)) / (n * n)
        if math.isclose(pe, 1.0):
            return None
        return (po - pe) / (1 - pe)


def rogan_gladen_raw(observed: float, tpr: float, tnr: float) -> float | None:
    """The corrected pass rate before clipping (outside [0, 1] when the calibration does not fit the run); None when
    tpr + tnr <= 1 (no better than chance)."""
    youden = tpr + tnr - 1
    if youden <= 1e-12:
        return None
    return (observed + tnr - 1) / youden


def rogan_gladen(observed: float, tpr: float, tnr: float) -> float | None:
    """The corrected pass rate, clipped to [0, 1]; None when tpr + tnr <= 1 (no better than chance)."""
    raw = rogan_gladen_raw(observed, tpr, tnr)
    return None if raw is None else min(1.0, max(0.0, raw))


def outside_unit(value: float) -> bool:
    """A raw correction the clipping changes: the calibration does not fit the run."""
    return value < -FIT_TOLERANCE or value > 1 + FIT_TOLERANCE


@dataclass(frozen=True)
class Interval:
    """An interval, or why there is none (`low`/`high` None with `why`)."""

    low: float | None
    high: float | None
    why: str | None = None
    undefined: int = 0  # draws in which the judge was at or below chance (counted as uniform on [0, 1])
    resamples: int = 0  # draws made


def corrected_interval(confusion: Confusion, passed: int, judged: int, *, draws: int = DRAWS, seed: int = SEED,
                       confidence: float = 0.95) -> Interval:
    """The percentile interval of the corrected pass rate's posterior (see the module's docstring), from
    `random.Random(seed)`, so the same files always give the same interval in the same time.

    tpr and tnr are drawn from their Jeffreys Beta posteriors. The judge's pass probability on the run is drawn
    twice per draw, from the two Beta distributions whose quantiles are the Clopper-Pearson bounds (Beta(x, n-x+1)
    for the lower bound, Beta(x+1, n-x) for the upper): the correction rises with it, so the lower bound is taken
    from the first and the upper from the second. A Jeffreys posterior here dipped to 91.5% coverage on runs of
    10 items (bench/calibration_coverage.py); this envelope does not."""
    n = confusion.n
    if not n or not judged:
        return Interval(None, None, "no labelled items" if not n else "no judged items", 0, 0)
    rng = random.Random(seed)
    beta = rng.betavariate
    tp_a, fn_b = confusion.tp + JEFFREYS, confusion.fn + JEFFREYS
    tn_a, fp_b = confusion.tn + JEFFREYS, confusion.fp + JEFFREYS
    failed = judged - passed
    lows: list[float] = []
    highs: list[float] = []
    undefined = 0
    for _ in range(draws):
        tpr, tnr = beta(tp_a, fn_b), beta(tn_a, fp_b)
        youden = tpr + tnr - 1
        if youden <= 1e-12:  # a judge at chance in this draw: the data say nothing of the rate
            undefined += 1
            value = rng.random()
            lows.append(value)
            highs.append(value)
            continue
        low_share = beta(passed, failed + 1) if passed else 0.0
        high_share = beta(passed + 1, failed) if failed else 1.0
        lows.append(min(1.0, max(0.0, (low_share + tnr - 1) / youden)))
        highs.append(min(1.0, max(0.0, (high_share + tnr - 1) / youden)))
    lows.sort()
    highs.sort()
    alpha = (1 - confidence) / 2
    return Interval(quantile(lows, alpha), quantile(highs, 1 - alpha), None, undefined, draws)


def paired_difference_interval(a: Sequence[bool], b: Sequence[bool], *, groups: Sequence[object] | None = None,
                               resamples: int = RESAMPLES, seed: int = SEED,
                               confidence: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap of mean(b) - mean(a) over paired items (each resample draws items, keeping both of an
    item's outcomes together): how much more often judge B agrees with the person than judge A.

    With `groups` (one key per item, its sample), a resample draws whole groups: the repeats and turns of one
    sample are not independent evidence (identical repeats would otherwise count as many items and narrow the
    interval), so the sample is the unit resampled."""
    if len(a) != len(b) or not a:
        raise ValueError("paired bootstrap needs two outcome lists of the same, non-zero length")
    diffs = [int(y) - int(x) for x, y in zip(a, b, strict=True)]
    rng = random.Random(seed)
    alpha = (1 - confidence) / 2
    if groups is None:
        n = len(a)
        means = sorted(math.fsum(rng.choices(diffs, k=n)) / n for _ in range(resamples))
        return quantile(means, alpha), quantile(means, 1 - alpha)
    if len(groups) != len(a):
        raise ValueError("one group per item")
    clusters: dict[object, list[int]] = {}
    for group, diff in zip(groups, diffs, strict=True):
        clusters.setdefault(group, []).append(diff)
    sums = [(sum(found), len(found)) for found in clusters.values()]
    k = len(sums)
    means = []
    for _ in range(resamples):
        drawn = rng.choices(sums, k=k)
        means.append(sum(total for total, _ in drawn) / sum(size for _, size in drawn))
    means.sort()
    return quantile(means, alpha), quantile(means, 1 - alpha)
