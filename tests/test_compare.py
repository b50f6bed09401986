"""Run comparison: the statistics against hand-computed cases, pairing, the regression verdict, the CLI-facing API."""

from __future__ import annotations

import math
import random
import statistics
from pathlib import Path

import pytest
from rich.console import Console

from evals_cli.compare import Comparison, compare_results, compare_runs, render_comparison
from evals_cli.errors import ConfigError
from evals_cli.models.results import SampleResult
from evals_cli.stats import binomial_two_sided, bootstrap_mean_ci, chi2_sf_1df, mcnemar, quantile
from tests.helpers import run_cli, write_suite
from tests.run_factory import make_result, make_summary, write_run
from tests.scripted_server import ScriptedServer, agent_script, call, text

# --- statistics ---------------------------------------------------------------------------------------------


def test_mcnemar_exact_hand_computed() -> None:
    # b=1, c=6: n=7, P(X<=1) = (1 + 7) / 128 = 0.0625, two-sided 0.125
    assert binomial_two_sided(1, 7) == 0.125
    assert mcnemar(1, 6) == ("exact", None, 0.125)
    assert mcnemar(6, 1).p_value == 0.125  # symmetric
    assert mcnemar(8, 0).p_value == 2 / 256
    assert mcnemar(3, 3).p_value == 1.0  # doubling past 1 is capped
    assert mcnemar(0, 0) == ("none", None, 1.0)


def test_exact_p_equals_the_brute_force_definition() -> None:
    """Two-sided exact p = P(outcomes at least as far from n/2 as the one observed), for every case we use it."""
    for n in range(1, 25):
        for k in range(n + 1):
            brute = sum(math.comb(n, j) for j in range(n + 1) if abs(j - n / 2) >= abs(k - n / 2)) / 2**n
            assert binomial_two_sided(k, n) == pytest.approx(min(1.0, brute), abs=1e-12), (k, n)


def test_mcnemar_chi_square_with_continuity_correction() -> None:
    # b=20, c=10: chi2 = (|20-10| - 1)^2 / 30 = 2.7; the 1-df table gives p = 0.1003 (2.706 is the 0.10 point)
    result = mcnemar(20, 10)
    assert result.method == "chi2" and result.statistic == pytest.approx(2.7)
    assert result.p_value == pytest.approx(0.10035, abs=5e-5)
    # b=30, c=10: chi2 = 19^2 / 40 = 9.025, p = 2 * (1 - Phi(3.0042)) = 0.00266
    assert mcnemar(30, 10).p_value == pytest.approx(0.002663, abs=5e-6)
    assert chi2_sf_1df(3.841459) == pytest.approx(0.05, abs=1e-6)


def test_exact_below_25_discordant_pairs_chi_square_from_25() -> None:
    assert mcnemar(6, 18).method == "exact"  # n = 24
    assert mcnemar(7, 18).method == "chi2"  # n = 25


def test_quantile_interpolates_like_numpy() -> None:
    values = [1.0, 2.0, 3.0, 4.0]
    assert quantile(values, 0.0) == 1.0 and quantile(values, 1.0) == 4.0
    assert quantile(values, 0.5) == 2.5
    assert quantile(values, 0.025) == pytest.approx(1.075)
    with pytest.raises(ValueError):
        quantile([], 0.5)


def test_bootstrap_is_deterministic_and_seeded() -> None:
    rng = random.Random(3)
    diffs = [rng.choice([-1.0, 0.0, 0.0, 1.0, 0.5]) for _ in range(40)]
    first = bootstrap_mean_ci(diffs, resamples=2000, seed=0)
    assert bootstrap_mean_ci(diffs, resamples=2000, seed=0) == first
    assert bootstrap_mean_ci(diffs, resamples=2000, seed=1) != first
    assert bootstrap_mean_ci([-0.25] * 12) == (-0.25, -0.25)


def test_bootstrap_ci_contains_the_true_difference_with_the_right_width() -> None:
    rng = random.Random(7)
    diffs = [rng.gauss(0.2, 0.5) for _ in range(300)]
    low, high = bootstrap_mean_ci(diffs)
    assert low < 0.2 < high
    assert low < statistics.fmean(diffs) < high
    normal_width = 2 * 1.96 * statistics.stdev(diffs) / math.sqrt(len(diffs))
    assert high - low == pytest.approx(normal_width, rel=0.1)  # the bootstrap agrees with the CLT here


# --- pairing and verdicts --------------------------------------------------------------------------------------


def run(spec: dict[str, tuple[float, bool]], grader: str = "g", repeat: int = 0) -> list[SampleResult]:
    """Results from {sample_id: (score, passed)}."""
    return [make_result(sid, {grader: score}, passed=passed, repeat=repeat) for sid, (score, passed) in spec.items()]


def test_flips_and_mcnemar_b1_c6_is_not_a_regression() -> None:
    ids = [f"s{i}" for i in range(10)]
    a = run({i: (1.0, True) if n < 4 else (0.0, False) for n, i in enumerate(ids)})
    # s0 goes pass->fail, s4..s9 go fail->pass, s1..s3 stay passed
    b = run({i: (0.0, False) if n == 0 else (1.0, True) for n, i in enumerate(ids)})
    c = compare_results(a, b)
    assert c.pass_to_fail == ["s0"] and c.fail_to_pass == ["s4", "s5", "s6", "s7", "s8", "s9"]
    assert (c.mcnemar.pass_to_fail, c.mcnemar.fail_to_pass, c.mcnemar.both_passed, c.mcnemar.both_failed) == (1, 6, 3, 0)
    assert c.mcnemar.method == "exact" and c.mcnemar.p_value == 0.125
    assert not c.regression
    assert c.pass_rate_a == 0.4 and c.pass_rate_b == 0.9
    [g] = c.graders
    assert (g.mean_a, g.mean_b, g.delta, g.paired, g.paired_delta) == (0.4, 0.9, 0.5, 10, 0.5)


def test_significant_pass_to_fail_is_a_regression() -> None:
    ids = [f"s{i}" for i in range(8)]
    a = run({i: (1.0, True) for i in ids})
    b = run({i: (0.0, False) for i in ids})
    c = compare_results(a, b, min_pairs=1000)  # graders left out: the verdict rests on McNemar alone
    assert c.mcnemar.p_value == 2 / 256 and c.regression and not c.improvement
    assert [g.verdict for g in c.graders] == ["too few pairs"]
    assert len(c.regression_reasons) == 1 and "8 pass→fail vs 0 fail→pass" in c.regression_reasons[0]
    reverse = compare_results(b, a, min_pairs=1000)
    assert reverse.improvement and not reverse.regression


def test_a_grader_whose_ci_is_below_zero_is_a_regression_without_any_flip() -> None:
    ids = [f"s{i}" for i in range(20)]
    a = run({i: (0.9, True) for i in ids}, grader="judge")
    b = run({i: (0.8 if n % 2 else 0.75, True) for n, i in enumerate(ids)}, grader="judge")
    c = compare_results(a, b)
    assert c.mcnemar.method == "none" and not c.pass_to_fail
    [g] = c.graders
    assert g.verdict == "worse" and g.paired_delta == pytest.approx(-0.125)
    assert g.ci_low is not None and g.ci_high is not None and -0.15 < g.ci_low < -0.125 < g.ci_high < -0.1
    assert c.regression and c.regression_reasons[0].startswith("judge: mean change -0.125")


def test_noise_is_not_a_regression() -> None:
    ids = [f"s{i}" for i in range(30)]
    a = run({i: (0.5, True) for i in ids})
    b = run({i: (0.6 if n % 2 else 0.4, True) for n, i in enumerate(ids)})
    c = compare_results(a, b)
    [g] = c.graders
    assert g.ci_low is not None and g.ci_high is not None and g.ci_low < 0 < g.ci_high
    assert g.verdict == "no significant change" and not c.regression and not c.improvement


def test_pairs_by_sample_and_repeat_and_lists_the_unpaired() -> None:
    a = [*run({"s1": (1.0, True), "s2": (1.0, True)}), *run({"s1": (1.0, True)}, repeat=1)]
    b = [*run({"s1": (1.0, True), "s3": (0.0, False)}), *run({"s1": (0.0, False)}, repeat=1)]
    c = compare_results(a, b)
    assert c.paired_samples == 2 and c.only_in_a == ["s2"] and c.only_in_b == ["s3"]
    assert c.pass_to_fail == ["s1#1"]
    assert [(s.key, s.score_a, s.score_b, s.delta) for s in c.samples] == [("s1", 1.0, 1.0, 0.0),
                                                                          ("s1#1", 1.0, 0.0, -1.0)]


def test_errored_samples_are_not_flips() -> None:
    a = run({"s1": (1.0, True), "s2": (1.0, True)})
    b = [make_result("s1", {}, error=("timeout", "slow")), *run({"s2": (1.0, True)})]
    c = compare_results(a, b)
    assert c.pass_to_fail == [] and c.mcnemar.both_passed == 1
    s1 = next(s for s in c.samples if s.key == "s1")
    assert (s1.status_a, s1.status_b, s1.score_b, s1.delta) == ("passed", "errored", None, None)
    [g] = c.graders
    assert (g.n_a, g.n_b, g.paired) == (2, 1, 1)


def test_duplicates_in_a_reused_folder_are_reported() -> None:
    a = [*run({"s1": (0.0, False)}), *run({"s1": (1.0, True)})]
    c = compare_results(a, run({"s1": (1.0, True)}))
    assert c.paired_samples == 1 and c.samples[0].score_a == 1.0
    assert any("duplicate" in w for w in c.warnings)


# --- run folders, JSON and rendering ---------------------------------------------------------------------------


def test_compare_runs_refuses_different_suites(tmp_path: Path) -> None:
    results = run({"s1": (1.0, True)})
    a = write_run(tmp_path / "a", results, make_summary(results, suite="alpha"))
    b = write_run(tmp_path / "b", results, make_summary(results, suite="beta"))
    with pytest.raises(ConfigError) as err:
        compare_runs(a, b)
    assert "'alpha'" in str(err.value) and "'beta'" in str(err.value)


def test_compare_runs_reads_folders_and_is_reproducible(tmp_path: Path) -> None:
    ids = [f"s{i}" for i in range(12)]
    rng = random.Random(5)
    ra = run({i: (rng.random(), True) for i in ids})
    rb = run({i: (rng.random(), n % 3 != 0) for n, i in enumerate(ids)})
    a = write_run(tmp_path / "a", ra, make_summary(ra))
    b = write_run(tmp_path / "b", rb, None)
    first = compare_runs(a, b)
    assert first.model_dump_json() == compare_runs(a, b).model_dump_json()
    assert first.suite == "unit-suite" and any("no summary.json" in w for w in first.warnings)
    assert Comparison.model_validate_json(first.model_dump_json()) == first
    assert first.pass_to_fail == ["s0", "s3", "s6", "s9"]


def test_render_comparison_shows_graders_flips_and_verdict() -> None:
    ids = [f"s{i}" for i in range(8)]
    c = compare_results(run({i: (1.0, True) for i in ids}), run({i: (0.0, False) for i in ids}),
                        label_a="runs/old", label_b="runs/new", suite="demo")
    console = Console(record=True, width=160, color_system=None)
    console.print(render_comparison(c))
    out = console.export_text()
    assert "demo: A = runs/old   B = runs/new" in out
    assert "graders (B − A)" in out and "-1.000" in out and "[-1.000, -1.000]" in out
    assert "8 pass→fail, 0 fail→pass" in out and "McNemar p = 0.007812 (exact binomial)" in out
    assert "changed samples" in out and "s7" in out
    assert "REGRESSION:" in out


def test_compare_two_real_cli_runs(server: ScriptedServer, tmp_path: Path) -> None:
    rows = [{"id": f"host{i}", "input": f"db host? case {i}", "ground_truth": "localhost",
             "expected_tool_order": ["read_file"]} for i in range(8)]
    graders = {"answer": {"kind": "tool", "function": "contains"}, "order": {"kind": "tool_order"}}
    suite = write_suite(tmp_path, rows, base_url=server.url, graders=graders)
    server.script = agent_script({"host": [call("read_file", {"path": ".env"}), text("It is localhost.")]})
    assert run_cli("run", str(suite), "-o", str(tmp_path / "good")).returncode == 0
    server.script = agent_script({"host": [text("It is db.internal.")]})
    assert run_cli("run", str(suite), "-o", str(tmp_path / "bad")).returncode == 1
    c = compare_runs(tmp_path / "good", tmp_path / "bad")
    assert c.suite == "test-suite" and c.paired_samples == 8
    assert sorted(c.pass_to_fail) == [f"host{i}" for i in range(8)]
    assert c.mcnemar.p_value == 2 / 256 and c.regression
    assert {g.grader: g.verdict for g in c.graders} == {"answer": "worse", "order": "worse"}
    same = compare_runs(tmp_path / "good", tmp_path / "good")
    assert not same.regression and not same.improvement and same.pass_to_fail == []
