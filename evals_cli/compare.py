"""Compare two runs of one suite: did B get worse than A, by more than noise?

Samples are paired by (sample_id, repeat), so each sample is its own control: per-grader changes get a
paired bootstrap CI of the mean difference, and pass/fail flips get McNemar's test, which looks only at
samples that changed. `regression` is what `evals compare --fail-on-regression` exits on.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field
from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from evals_cli.errors import ConfigError
from evals_cli.exporters.common import case_name, fmt_score
from evals_cli.models.results import SampleResult
from evals_cli.output.files import read_results, read_summary
from evals_cli.output.manifest import read_matrix
from evals_cli.stats import bootstrap_mean_ci, mcnemar

Status = Literal["passed", "failed", "errored", "ungraded"]
Key = tuple[str, int]


class GraderDiff(BaseModel):
    """One grader in A and B. `delta` compares the run means; the CI is over samples scored in both runs."""

    grader: str
    n_a: int = Field(description="Samples this grader scored in A.")
    n_b: int
    mean_a: float | None
    mean_b: float | None
    delta: float | None = Field(description="mean_b - mean_a over each run's scored samples.")
    paired: int = Field(description="Samples scored by this grader in both runs.")
    paired_delta: float | None = Field(description="Mean of (B - A) over the paired samples.")
    ci_low: float | None
    ci_high: float | None
    verdict: Literal["worse", "better", "no significant change", "too few pairs"]


class SampleDiff(BaseModel):
    key: str
    sample_id: str
    repeat: int
    score_a: float | None = Field(description="Weighted score in A.")
    score_b: float | None
    delta: float | None
    status_a: Status
    status_b: Status


class McNemar(BaseModel):
    """Paired pass/fail over samples graded in both runs; p tests whether flips lean one way."""

    both_passed: int
    both_failed: int
    pass_to_fail: int
    fail_to_pass: int
    method: Literal["exact", "chi2", "none"]
    statistic: float | None
    p_value: float


class Comparison(BaseModel):
    run_a: str
    run_b: str
    suite: str | None
    alpha: float
    confidence: float
    resamples: int
    seed: int
    min_pairs: int
    paired_samples: int
    only_in_a: list[str]
    only_in_b: list[str]
    pass_rate_a: float | None
    pass_rate_b: float | None
    graders: list[GraderDiff]
    samples: list[SampleDiff]
    pass_to_fail: list[str]
    fail_to_pass: list[str]
    mcnemar: McNemar
    regression: bool
    improvement: bool
    regression_reasons: list[str] = Field(default_factory=list)
    improvement_reasons: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)


def _status(result: SampleResult) -> Status:
    if result.error is not None:
        return "errored"
    if result.passed is None:
        return "ungraded"
    return "passed" if result.passed else "failed"


def _index(results: Iterable[SampleResult], label: str, warnings: list[str]) -> dict[Key, SampleResult]:
    """Results by (sample_id, repeat). A folder reused by two runs holds duplicates: the later line wins."""
    out: dict[Key, SampleResult] = {}
    duplicates = 0
    for result in results:
        key = (result.sample_id, result.repeat)
        duplicates += key in out
        out[key] = result
    if duplicates:
        warnings.append(f"{label}: {duplicates} duplicate sample(s) (the results file was appended to by more "
                        f"than one run); the last of each was used")
    return out


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _pass_rate(results: Iterable[SampleResult]) -> float | None:
    decided = [r.passed for r in results if r.error is None and r.passed is not None]
    return sum(decided) / len(decided) if decided else None


def _grader_diff(name: str, a: dict[Key, SampleResult], b: dict[Key, SampleResult], *, resamples: int, seed: int,
                 confidence: float, min_pairs: int) -> GraderDiff:
    def scores(run: dict[Key, SampleResult]) -> dict[Key, float]:
        # an n/a grade's 1.0 is a convention, not a measurement: pairing it would dilute the difference
        return {k: r.grades[name].score for k, r in run.items()  # type: ignore[misc]
                if r.error is None and name in r.grades and r.grades[name].score is not None
                and r.grades[name].applicable}

    sa, sb = scores(a), scores(b)
    keys = [k for k in sa if k in sb]
    diffs = [sb[k] - sa[k] for k in keys]
    low = high = None
    verdict: Literal["worse", "better", "no significant change", "too few pairs"] = "too few pairs"
    if len(diffs) >= min_pairs:
        low, high = bootstrap_mean_ci(diffs, resamples=resamples, seed=seed, confidence=confidence)
        verdict = "worse" if high < 0 else ("better" if low > 0 else "no significant change")
    mean_a, mean_b = _mean(list(sa.values())), _mean(list(sb.values()))
    return GraderDiff(grader=name, n_a=len(sa), n_b=len(sb), mean_a=mean_a, mean_b=mean_b,
                      delta=None if mean_a is None or mean_b is None else mean_b - mean_a, paired=len(diffs),
                      paired_delta=_mean(diffs), ci_low=low, ci_high=high, verdict=verdict)


def compare_results(results_a: Iterable[SampleResult], results_b: Iterable[SampleResult], *, label_a: str = "A",
                    label_b: str = "B", suite: str | None = None, alpha: float = 0.05, confidence: float = 0.95,
                    resamples: int = 10_000, seed: int = 0, min_pairs: int = 5,
                    warnings: list[str] | None = None) -> Comparison:
    """The comparison of two sets of results already in memory (`compare_runs` reads them from run folders).

    `min_pairs`: a grader needs this many samples scored in both runs before its bootstrap CI is computed
    (a percentile bootstrap of one or two pairs gives a near-zero-width interval that would flag noise).
    """
    notes = list(warnings or [])
    a, b = _index(results_a, label_a, notes), _index(results_b, label_b, notes)
    paired = [k for k in a if k in b]
    if not paired:
        notes.append("no sample is in both runs: nothing to pair")
    graders = list(dict.fromkeys(name for run in (a, b) for r in run.values() for name in r.grades))
    grader_diffs = [_grader_diff(g, a, b, resamples=resamples, seed=seed, confidence=confidence, min_pairs=min_pairs)
                    for g in graders]
    samples = []
    counts = {("passed", "passed"): 0, ("failed", "failed"): 0, ("passed", "failed"): 0, ("failed", "passed"): 0}
    to_fail, to_pass = [], []
    for key in paired:
        ra, rb = a[key], b[key]
        sa, sb = _status(ra), _status(rb)
        name = case_name(ra)
        samples.append(SampleDiff(key=name, sample_id=ra.sample_id, repeat=ra.repeat, score_a=ra.score,
                                  score_b=rb.score, delta=None if ra.score is None or rb.score is None
                                  else rb.score - ra.score, status_a=sa, status_b=sb))
        if (sa, sb) in counts:
            counts[(sa, sb)] += 1
        if (sa, sb) == ("passed", "failed"):
            to_fail.append(name)
        elif (sa, sb) == ("failed", "passed"):
            to_pass.append(name)
    test = mcnemar(len(to_fail), len(to_pass))
    mc = McNemar(both_passed=counts[("passed", "passed")], both_failed=counts[("failed", "failed")],
                 pass_to_fail=len(to_fail), fail_to_pass=len(to_pass), method=test.method, statistic=test.statistic,
                 p_value=test.p_value)
    worse, better = _verdict(mc, grader_diffs, alpha, confidence)
    return Comparison(
        run_a=label_a, run_b=label_b, suite=suite, alpha=alpha, confidence=confidence, resamples=resamples, seed=seed,
        min_pairs=min_pairs, paired_samples=len(paired),
        only_in_a=[case_name(r) for k, r in a.items() if k not in b],
        only_in_b=[case_name(r) for k, r in b.items() if k not in a],
        pass_rate_a=_pass_rate(a.values()), pass_rate_b=_pass_rate(b.values()), graders=grader_diffs, samples=samples,
        pass_to_fail=to_fail, fail_to_pass=to_pass, mcnemar=mc, regression=bool(worse), improvement=bool(better),
        regression_reasons=worse, improvement_reasons=better, warnings=notes,
    )


def _verdict(mc: McNemar, graders: list[GraderDiff], alpha: float, confidence: float) -> tuple[list[str], list[str]]:
    """Reasons for a regression (significantly more pass→fail than fail→pass, or a grader whose whole CI is
    below 0) and, symmetrically, for an improvement."""
    worse: list[str] = []
    better: list[str] = []
    if mc.p_value < alpha and mc.pass_to_fail != mc.fail_to_pass:
        flips = (f"{mc.pass_to_fail} pass→fail vs {mc.fail_to_pass} fail→pass, "
                 f"McNemar p = {mc.p_value:.4g} < {alpha:g}")
        (worse if mc.pass_to_fail > mc.fail_to_pass else better).append(flips)
    for g in graders:
        if g.verdict in ("worse", "better"):
            side = "below" if g.verdict == "worse" else "above"
            reason = (f"{g.grader}: mean change {g.paired_delta:+.3f} over {g.paired} paired samples, "
                      f"{confidence:.0%} CI [{g.ci_low:+.3f}, {g.ci_high:+.3f}] {side} 0")
            (worse if g.verdict == "worse" else better).append(reason)
    return worse, better


def compare_runs(run_a: Path, run_b: Path, *, alpha: float = 0.05, confidence: float = 0.95, resamples: int = 10_000,
                 seed: int = 0, min_pairs: int = 5) -> Comparison:
    """Compare two run folders (or results.jsonl files). Runs of different suites are refused (ConfigError).
    Each model's folder of a run over several models is a run folder: compare two models with RUN/a RUN/b."""
    for path in (run_a, run_b):
        matrix = read_matrix(path)
        if matrix is not None:
            folders = [path / run.folder for run in matrix.models]
            raise ConfigError(f"{path}: a run over {len(folders)} models; compare two of its model folders (or one "
                              f"with another run's), e.g. evals compare {' '.join(map(str, folders[:2]))}")
    warnings: list[str] = []
    summary_a, summary_b = read_summary(run_a), read_summary(run_b)
    if summary_a and summary_b and summary_a.suite != summary_b.suite:
        raise ConfigError(f"{run_a} is a run of suite '{summary_a.suite}' and {run_b} of suite '{summary_b.suite}': "
                          f"only runs of the same suite can be compared")
    for path, summary in ((run_a, summary_a), (run_b, summary_b)):
        if summary is None:
            warnings.append(f"{path}: no summary.json (the run did not finish): cannot check it is the same suite")
    results_a = list(read_results(run_a, warnings))
    results_b = list(read_results(run_b, warnings))
    suite = (summary_a or summary_b).suite if (summary_a or summary_b) else None  # type: ignore[union-attr]
    return compare_results(results_a, results_b, label_a=str(run_a), label_b=str(run_b), suite=suite, alpha=alpha,
                           confidence=confidence, resamples=resamples, seed=seed, min_pairs=min_pairs, warnings=warnings)


def _delta(value: float | None) -> Text:
    if value is None:
        return Text("—")
    style = "green" if value > 1e-9 else ("red" if value < -1e-9 else "")
    return Text(f"{value:+.3f}", style=style)


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def _graders_table(c: Comparison) -> Table:
    table = Table(box=box.SIMPLE, title="graders (B − A)", title_justify="left")
    for col in ("grader", "A", "B", "Δ", "paired", f"{c.confidence:.0%} CI of paired Δ", ""):
        table.add_column(col, justify="left" if col in ("grader", "") else "right")
    styles = {"worse": "bold red", "better": "bold green", "no significant change": "", "too few pairs": "dim"}
    for g in c.graders:
        ci = "—" if g.ci_low is None else f"[{g.ci_low:+.3f}, {g.ci_high:+.3f}]"
        table.add_row(g.grader, fmt_score(g.mean_a), fmt_score(g.mean_b), _delta(g.delta), str(g.paired), ci,
                      Text(g.verdict, style=styles[g.verdict]))
    return table


def _samples_table(c: Comparison, limit: int = 15) -> Table | None:
    flipped = set(c.pass_to_fail) | set(c.fail_to_pass)
    changed = [s for s in c.samples if s.key in flipped or s.status_a != s.status_b
               or (s.delta is not None and abs(s.delta) > 1e-9)]
    if not changed:
        return None
    changed.sort(key=lambda s: (s.key not in flipped, -(abs(s.delta) if s.delta is not None else 2.0)))
    table = Table(box=box.SIMPLE, title="changed samples", title_justify="left")
    for col in ("sample", "score A", "score B", "Δ", "A", "B"):
        table.add_column(col, justify="right" if col.startswith(("score", "Δ")) else "left")
    marks = {"passed": ("✓", "green"), "failed": ("✗", "red"), "errored": ("error", "yellow"), "ungraded": ("?", "yellow")}
    for s in changed[:limit]:
        table.add_row(s.key, fmt_score(s.score_a), fmt_score(s.score_b), _delta(s.delta),
                      Text(marks[s.status_a][0], style=marks[s.status_a][1]),
                      Text(marks[s.status_b][0], style=marks[s.status_b][1]))
    if len(changed) > limit:
        table.caption = f"... {len(changed) - limit} more changed samples (--json for all)"
    return table


def render_comparison(c: Comparison) -> RenderableType:
    """The comparison as Rich tables and a one-line verdict, for the terminal."""
    head = Text()
    head.append(f"{c.suite or 'runs'}: ", style="bold")
    head.append(f"A = {c.run_a}   B = {c.run_b}\n")
    head.append(f"{c.paired_samples} paired samples")
    if c.only_in_a or c.only_in_b:
        head.append(f" ({len(c.only_in_a)} only in A, {len(c.only_in_b)} only in B)")
    parts: list[RenderableType] = [head, _graders_table(c)]
    mc = c.mcnemar
    flips = Text(f"pass rate {_pct(c.pass_rate_a)} → {_pct(c.pass_rate_b)}; {mc.pass_to_fail} pass→fail, "
                 f"{mc.fail_to_pass} fail→pass")
    if mc.method != "none":
        how = "exact binomial" if mc.method == "exact" else f"chi-square {mc.statistic:.3f}, continuity-corrected"
        flips.append(f"; McNemar p = {mc.p_value:.4g} ({how})")
    parts.append(flips)
    table = _samples_table(c)
    if table is not None:
        parts.append(table)
    for warning in c.warnings:
        parts.append(Text(f"warning: {warning}", style="yellow"))
    for label, reasons, style in (("REGRESSION", c.regression_reasons, "bold red"),
                                  ("IMPROVEMENT", c.improvement_reasons, "bold green")):
        if reasons:
            parts.append(Text(f"{label}:\n" + "\n".join(f"  - {reason}" for reason in reasons), style=style))
    if not c.regression and not c.improvement:
        parts.append(Text(f"No significant change (alpha {c.alpha:g}, {c.confidence:.0%} CIs)", style="bold"))
    return Group(*parts)
