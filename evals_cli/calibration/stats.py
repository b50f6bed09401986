"""The statistics of a judge measured against a person's labels, in plain `math` and `random`: the runtime must not
need numpy or scipy for a handful of counts (the tests check every figure against scipy and scikit-learn).

"pass" is the positive class: the person's label is the truth, the judge's verdict the test.

- tpr (sensitivity) and tnr (specificity) from the confusion counts; Cohen's kappa for agreement beyond chance.
- The Rogan-Gladen estimator corrects an observed pass rate p for a judge of known tpr and tnr:
  (p + tnr - 1) / (tpr + tnr - 1), clipped to [0, 1]. When tpr + tnr <= 1 the judge is no better than chance and
  there is nothing to correct with: refused, never a number.
- Its 95% interval by a percentile bootstrap over both sources of doubt at once: the labelled items (which set
  tpr and tnr) and the run's judged items (which set p), each resampled with replacement. Seeded and bounded, so
  the same files always give the same interval in the same time.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from evals_cli.stats import quantile

RESAMPLES = 2000
SEED = 0
CHANCE = "the judge is no better than chance"
# share of bootstrap resamples allowed to be undefined (a class missing, or a judge at chance in that resample)
# before the interval is withheld: more than the 2.5% each tail holds would decide where the bound falls
MAX_UNDEFINED = 0.025


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


def rogan_gladen(observed: float, tpr: float, tnr: float) -> float | None:
    """The corrected pass rate, clipped to [0, 1]; None when tpr + tnr <= 1 (no better than chance)."""
    youden = tpr + tnr - 1
    if youden <= 1e-12:
        return None
    return min(1.0, max(0.0, (observed + tnr - 1) / youden))


@dataclass(frozen=True)
class Interval:
    """A bootstrap interval, or why there is none (`low`/`high` None with `why`)."""

    low: float | None
    high: float | None
    why: str | None = None
    undefined: int = 0  # resamples in which the correction was undefined
    resamples: int = 0


def corrected_interval(confusion: Confusion, passed: int, judged: int, *, resamples: int = RESAMPLES,
                       seed: int = SEED, confidence: float = 0.95) -> Interval:
    """Percentile bootstrap of the corrected pass rate: each resample draws the labelled items (as their four
    confusion cells) and the run's judged items (as passed or not) with replacement, from `random.Random(seed)`.

    A resample where a class is missing or the judge is at chance has no correction; when more than
    MAX_UNDEFINED of them do, the interval is withheld (dropping them would narrow it where it is least sure)."""
    n = confusion.n
    if not n or not judged:
        return Interval(None, None, "no labelled items" if not n else "no judged items", 0, 0)
    rng = random.Random(seed)
    cells = (confusion.tp, confusion.fp, confusion.fn, confusion.tn)
    cum = [sum(cells[: i + 1]) for i in range(4)]
    p = passed / judged
    values: list[float] = []
    undefined = 0
    for _ in range(resamples):
        counts = [0, 0, 0, 0]
        for cell in rng.choices(range(4), cum_weights=cum, k=n):
            counts[cell] += 1
        tp, fp, fn, tn = counts
        observed = _binomial(rng, judged, p) / judged
        if tp + fn == 0 or tn + fp == 0:
            undefined += 1
            continue
        value = rogan_gladen(observed, tp / (tp + fn), tn / (tn + fp))
        if value is None:
            undefined += 1
            continue
        values.append(value)
    if undefined > MAX_UNDEFINED * resamples:
        return Interval(None, None, f"in {undefined} of {resamples} bootstrap resamples the labels had no item of a "
                                    "class or the judge was no better than chance: label more items", undefined,
                        resamples)
    values.sort()
    alpha = (1 - confidence) / 2
    return Interval(quantile(values, alpha), quantile(values, 1 - alpha), None, undefined, resamples)


def _binomial(rng: random.Random, n: int, p: float) -> int:
    """Successes in n draws with replacement from items of which a share p passed: what resampling the run's judged
    items with replacement gives for their pass count."""
    if p <= 0.0 or p >= 1.0:
        return 0 if p <= 0.0 else n
    draw = rng.random
    return sum(1 for _ in range(n) if draw() < p)


def paired_difference_interval(a: Sequence[bool], b: Sequence[bool], *, resamples: int = RESAMPLES,
                               seed: int = SEED, confidence: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap of mean(b) - mean(a) over paired items (each resample draws items, keeping both of an
    item's outcomes together): how much more often judge B agrees with the person than judge A."""
    if len(a) != len(b) or not a:
        raise ValueError("paired bootstrap needs two outcome lists of the same, non-zero length")
    n = len(a)
    diffs = [int(y) - int(x) for x, y in zip(a, b, strict=True)]
    rng = random.Random(seed)
    means = sorted(math.fsum(rng.choices(diffs, k=n)) / n for _ in range(resamples))
    alpha = (1 - confidence) / 2
    return quantile(means, alpha), quantile(means, 1 - alpha)
