"""The judge-calibration statistics against reference implementations: scikit-learn for the confusion counts, tpr,
tnr and Cohen's kappa; numpy's Beta draws of the same posterior for the corrected pass rate's interval, and scipy's
bootstrap for the paired interval of the difference in agreement. The runtime computes them in plain
Python; these libraries are test-only oracles (the dev extra), imported in the tests that use them so that collecting
the suite does not pay for them."""

from __future__ import annotations

import random
import warnings

import pytest

from evals_cli.calibration.calibrate import measure
from evals_cli.calibration.stats import (
    Confusion,
    corrected_interval,
    paired_difference_interval,
    rogan_gladen,
)


def labelled(seed: int, n: int, tpr: float, tnr: float, base: float = 0.5) -> list[tuple[bool, bool]]:
    """(judge passed, person passed) pairs from a judge of the given rates."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        human = rng.random() < base
        judge = rng.random() < (tpr if human else 1 - tnr)
        pairs.append((judge, human))
    return pairs


@pytest.mark.parametrize("seed,n,tpr,tnr", [(1, 60, 0.9, 0.7), (2, 25, 0.6, 0.95), (3, 200, 0.5, 0.5),
                                            (4, 11, 1.0, 0.0), (5, 80, 0.3, 0.9)])
def test_counts_rates_and_kappa_match_sklearn(seed: int, n: int, tpr: float, tnr: float) -> None:
    import numpy as np
    from sklearn.metrics import cohen_kappa_score, confusion_matrix, recall_score

    pairs = labelled(seed, n, tpr, tnr)
    judge = [int(j) for j, _ in pairs]
    human = [int(h) for _, h in pairs]
    c = Confusion.of(pairs)
    tn, fp, fn, tp = confusion_matrix(human, judge, labels=[0, 1]).ravel()
    assert (c.tp, c.fp, c.fn, c.tn) == (tp, fp, fn, tn)
    if c.positives:
        assert c.tpr == pytest.approx(recall_score(human, judge, pos_label=1))
    if c.negatives:
        assert c.tnr == pytest.approx(recall_score(human, judge, pos_label=0))
    expected = cohen_kappa_score(human, judge)
    if np.isnan(expected):
        assert c.kappa is None
    else:
        assert c.kappa == pytest.approx(expected)


def test_kappa_undefined_when_both_gave_one_verdict_to_everything() -> None:
    import numpy as np
    from sklearn.metrics import cohen_kappa_score

    c = Confusion.of([(True, True)] * 5)
    assert c.kappa is None and c.tnr is None and c.tpr == 1.0
    with warnings.catch_warnings():  # the oracle agrees: undefined (nan), not a number we may print
        warnings.simplefilter("ignore")
        assert np.isnan(cohen_kappa_score([1] * 5, [1] * 5))


def test_rogan_gladen_corrects_clips_and_refuses_chance() -> None:
    # a lenient judge (tnr 0.6) passing 70% of items: the true rate is lower
    assert rogan_gladen(0.7, 0.9, 0.6) == pytest.approx((0.7 + 0.6 - 1) / (0.9 + 0.6 - 1))
    assert rogan_gladen(0.7, 0.9, 0.6) == pytest.approx(0.6)
    assert rogan_gladen(0.1, 0.9, 0.6) == 0.0  # below the judge's false-pass floor: clipped, never negative
    assert rogan_gladen(0.99, 0.8, 0.95) == 1.0
    assert rogan_gladen(0.5, 0.5, 0.5) is None  # tpr + tnr = 1: no better than chance
    assert rogan_gladen(0.5, 0.3, 0.4) is None


def _numpy_posterior(c: Confusion, passed: int, judged: int, draws: int = 200_000) -> tuple[float, float]:
    """The interval of the same model drawn by numpy: Jeffreys Beta posteriors for tpr and tnr, the run's pass
    share from Beta(x, n-x+1) for the lower bound and Beta(x+1, n-x) for the upper (scipy's Clopper-Pearson bounds
    are their quantiles), each draw corrected and clipped, a chance draw uniform on [0, 1]."""
    import numpy as np
    from scipy import stats as scipy_stats

    rng = np.random.default_rng(3)
    tpr = rng.beta(c.tp + 0.5, c.fn + 0.5, draws)
    tnr = rng.beta(c.tn + 0.5, c.fp + 0.5, draws)
    failed = judged - passed
    low_q = rng.beta(passed, failed + 1, draws) if passed else np.zeros(draws)
    high_q = rng.beta(passed + 1, failed, draws) if failed else np.ones(draws)
    exact = scipy_stats.binomtest(passed, judged).proportion_ci(0.95, method="exact")
    assert np.quantile(low_q, 0.025) == pytest.approx(exact.low, abs=0.01)  # the oracle of the oracle
    assert np.quantile(high_q, 0.975) == pytest.approx(exact.high, abs=0.01)
    youden = tpr + tnr - 1
    ok = youden > 1e-12
    uniform = rng.uniform(0, 1, draws)

    def corrected(q: np.ndarray) -> np.ndarray:
        return np.where(ok, np.clip((q + tnr - 1) / np.where(ok, youden, 1), 0, 1), uniform)

    return float(np.quantile(corrected(low_q), 0.025)), float(np.quantile(corrected(high_q), 0.975))


@pytest.mark.parametrize("passed,judged", [(230, 400), (10, 10), (0, 25)])
def test_corrected_interval_matches_numpy_draws_of_the_same_posterior(passed: int, judged: int) -> None:
    c = Confusion.of(labelled(7, 120, 0.85, 0.75))
    ours = corrected_interval(c, passed, judged)
    low, high = _numpy_posterior(c, passed, judged)
    assert ours.low == pytest.approx(low, abs=0.02)
    assert ours.high == pytest.approx(high, abs=0.02)
    assert corrected_interval(c, passed, judged) == ours  # seeded: the same files, the same interval


def test_corrected_interval_of_a_bulk_run_holds_the_point_estimate() -> None:
    c = Confusion.of(labelled(7, 120, 0.85, 0.75))
    found = corrected_interval(c, 230, 400)
    point = rogan_gladen(230 / 400, c.tpr or 0, c.tnr or 0)
    assert point is not None and found.low is not None and found.high is not None
    assert found.low < point < found.high


def test_a_unanimous_run_keeps_its_doubt() -> None:
    """The issue's case: 10 of 10 passed, calibrated on 40 labels (tpr 0.95, tnr 0.80). The bootstrap printed
    [1.00, 1.00]; one fail in five slips through this judge, so ten passes leave real room below 1."""
    pairs = [(True, True)] * 19 + [(False, True)] + [(False, False)] * 16 + [(True, False)] * 4
    c = measure(pairs, 10, 10)
    assert c.ci is not None and c.ci[1] == 1.0 and c.ci[0] < 0.85
    failed_all = measure(pairs, 0, 10)
    assert failed_all.ci is not None and failed_all.ci[0] == 0.0 and failed_all.ci[1] > 0.03


def test_a_judge_near_chance_gives_a_wide_interval_not_a_narrow_one() -> None:
    c = Confusion(tp=2, fp=1, fn=1, tn=1)  # five labels: many draws put the judge at or below chance
    found = corrected_interval(c, 10, 20)
    assert found.low is not None and found.high is not None and found.high - found.low > 0.8
    assert found.undefined > 0


def test_a_clipped_correction_is_flagged_with_its_raw_value() -> None:
    pairs = [(True, True)] * 19 + [(False, True)] + [(False, False)] * 16 + [(True, False)] * 4
    high = measure(pairs, 10, 10)  # raw (1 + 0.8 - 1) / 0.75 = 1.067
    assert high.clipped and high.corrected_pass_rate == 1.0
    assert high.raw_corrected_pass_rate == pytest.approx(0.8 / 0.75)
    assert any("does not fit this run" in w for w in high.warnings)
    low = measure(pairs, 1, 10)  # raw (0.1 + 0.8 - 1) / 0.75 < 0
    assert low.clipped and low.corrected_pass_rate == 0.0 and (low.raw_corrected_pass_rate or 0) < 0
    inside = measure(pairs, 5, 10)
    assert not inside.clipped and inside.raw_corrected_pass_rate == inside.corrected_pass_rate
    assert not any("does not fit" in w for w in inside.warnings)


def test_paired_difference_interval_matches_scipy() -> None:
    import numpy as np
    from scipy import stats as scipy_stats

    rng = random.Random(11)
    a = [rng.random() < 0.7 for _ in range(150)]
    b = [rng.random() < 0.82 for _ in range(150)]
    ours = paired_difference_interval(a, b, resamples=4000)
    ref = scipy_stats.bootstrap((np.array(a, dtype=float), np.array(b, dtype=float)),
                                lambda x, y, axis=-1: y.mean(axis=axis) - x.mean(axis=axis), paired=True,
                                vectorized=True, n_resamples=20000, method="percentile",
                                random_state=np.random.default_rng(5))
    assert ours[0] == pytest.approx(ref.confidence_interval.low, abs=0.015)
    assert ours[1] == pytest.approx(ref.confidence_interval.high, abs=0.015)


def test_measure_refuses_chance_and_warns_on_few_labels() -> None:
    chance = measure([(True, True), (False, True), (True, False), (False, False)], 5, 10)
    assert chance.tpr == 0.5 and chance.tnr == 0.5 and chance.corrected_pass_rate is None and chance.ci is None
    assert chance.refused is not None and "the judge is no better than chance" in chance.refused
    assert any("2 items labelled pass and 2 labelled fail" in w for w in chance.warnings)

    one_class = measure([(True, True), (False, True)], 3, 4)
    assert one_class.tnr is None and one_class.corrected_pass_rate is None
    assert one_class.refused is not None and "no item is labelled fail" in one_class.refused


def test_measure_with_enough_labels_gives_rate_and_interval_without_warnings() -> None:
    pairs = [(True, True)] * 36 + [(False, True)] * 4 + [(True, False)] * 6 + [(False, False)] * 24
    c = measure(pairs, 300, 500)
    assert (c.n, c.tp, c.fn, c.fp, c.tn) == (70, 36, 4, 6, 24)
    assert c.tpr == pytest.approx(0.9) and c.tnr == pytest.approx(0.8)
    assert c.corrected_pass_rate == pytest.approx((0.6 + 0.8 - 1) / (0.9 + 0.8 - 1))
    assert c.ci is not None and c.ci[0] < c.corrected_pass_rate < c.ci[1]
    assert c.warnings == [] and c.refused is None


def test_a_pass_mark_must_be_finite() -> None:
    """A NaN mark in a hostile run.json read every item as a fail (found in review)."""
    from pydantic import ValidationError

    from evals_cli.models.calibration import JudgeRecord

    with pytest.raises(ValidationError):
        JudgeRecord(mark=float("nan"))


def test_the_paired_interval_resamples_samples_not_their_repeats() -> None:
    """Five samples judged four times each with the same outcome: twenty items, but five pieces of evidence. Drawn
    as twenty independent items the interval was about half as wide as the evidence allows."""
    per_sample = [(False, True), (True, True), (False, True), (True, True), (True, False)]
    a = [x for x, _ in per_sample for _ in range(4)]
    b = [y for _, y in per_sample for _ in range(4)]
    groups = [i for i in range(5) for _ in range(4)]
    by_item = paired_difference_interval(a, b)
    by_sample = paired_difference_interval(a, b, groups=groups)
    assert by_sample[1] - by_sample[0] > 1.6 * (by_item[1] - by_item[0])
    once = paired_difference_interval([x for x, _ in per_sample], [y for _, y in per_sample], resamples=4000)
    assert by_sample == pytest.approx(once, abs=0.05)  # the same as the five samples once each
