"""Fold results into a run summary as they arrive (no need to keep every result in memory)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Literal

from evals_cli.errors import EXIT_GATE_FAILED, EXIT_INCOMPLETE, EXIT_INTERRUPTED, EXIT_PASSED
from evals_cli.gate.gate import Gate
from evals_cli.gate.reducers import Repeat, reduce_sample
from evals_cli.gate.scores import aggregate, counted, threshold_key
from evals_cli.models.results import (
    Grade,
    GraderAggregate,
    JudgeAgreement,
    ModelRun,
    Reduction,
    Reliability,
    RoleUse,
    RunSummary,
    SampleResult,
    Verdict,
)
from evals_cli.models.trajectory import Usage
from evals_cli.streaming_stats import AlphaSums, LatencyHistogram, ScoreCounts
from evals_cli.thresholds import OPS


class Accumulator:
    """Folds results into a summary as they arrive (no need to keep every result in memory)."""

    def __init__(self, gate: Gate, suite: str, grader_names: Iterable[str], repeats: int = 1,
                 pricing: dict[str, tuple[float, float]] | None = None, reduce: bool = True) -> None:
        """`reduce` False: fold results as they are, whatever the gate's reducer (the reduced samples' own fold)."""
        self.gate = gate
        self.suite = suite
        self.repeats = repeats
        self.pricing = pricing or {}
        self.cost = 0.0
        self.latencies = LatencyHistogram()
        # per sample: (passes, graded runs); only kept when samples repeat
        self.per_sample: dict[str, list[int]] = {}
        # gate.reducer: what each repeat gives the reduction, per sample in order of first result (the number of
        # repeats is known only at the end: `evals report` learns it from the results)
        self.repeat_log: dict[str, list[Repeat]] | None = {} if reduce and gate.reducer is not None else None
        self.scores: dict[str, ScoreCounts] = {g: ScoreCounts() for g in grader_names}  # the scores counted
        self.scored: dict[str, int] = {}  # per grader: samples it gave a score (n/a included)
        self.grade_errors: Counter[str] = Counter()
        self.not_applicable: Counter[str] = Counter()  # per grader: samples it had nothing to check on
        self.total = self.errored = self.passed = self.failed = self.unchecked = 0
        self.errors_by_category: Counter[str] = Counter()
        self.usage = Usage()
        self.judge_usage = Usage()
        self.user_usage = Usage()
        self.roles: dict[str, RoleUse] = {}  # per role (agent, judge, user): summed over the results
        self.grades_total = 0
        self.unreliable: Counter[str] = Counter()
        # judge panels: per grader, one {judge: score} unit per graded sample (for Krippendorff's alpha)
        self.panel_units: dict[str, AlphaSums] = {}

    def add(self, result: SampleResult) -> None:
        self.total += 1
        for summed, tokens in ((self.usage, result.usage), (self.judge_usage, result.judge_usage),
                               (self.user_usage, result.user_usage)):
            if tokens is not None and (tokens.prompt_tokens or tokens.completion_tokens):  # a zero adds nothing
                summed.add(tokens)
        for role, use in result.roles.items():
            self.roles.setdefault(role, RoleUse()).add(use)
        self.latencies.add(result.latency_s)
        if result.cost is not None:
            self.cost += result.cost
        bad_args = sum(1 for call in result.trajectory.tool_calls if call.arguments_error)
        if bad_args:
            self.errors_by_category["tool_args"] += bad_args
        if self.repeat_log is not None:
            self.repeat_log.setdefault(result.sample_id, []).append(Repeat.of(result))
        if self.repeats > 1:  # per sample: [passed runs, runs with a verdict, runs]
            counts = self.per_sample.setdefault(result.sample_id, [0, 0, 0])
            counts[2] += 1
            if result.passed is not None:
                counts[0] += int(result.passed)
                counts[1] += 1
        if result.error is not None:
            self.errored += 1
            self.errors_by_category[result.error.category] += 1
            # incomplete (a grade the verdict needs is missing): counted as errored, kept out of the averages,
            # but its missing grades still count as missing
            for name, grade in result.grades.items():
                if _left_ungraded(grade):
                    continue
                self.grades_total += 1
                if grade.score is None:
                    self.grade_errors[name] += 1
            return
        self._add_grades(result)
        if result.passed is True:
            self.passed += 1
        elif result.passed is False:
            self.failed += 1
        elif result.score_note is not None:  # graded, nothing it is judged on applied: no verdict
            self.unchecked += 1

    def _add_grades(self, result: SampleResult) -> None:
        """A finished sample's grades into each grader's counts and scores (n/a counted apart)."""
        for name, grade in result.grades.items():
            if _left_ungraded(grade):
                continue
            self.grades_total += 1
            if grade.metadata.get("unreliable"):
                self.unreliable[name] += 1
            for unit in grade.metadata.get("panel_units", []):
                self.panel_units.setdefault(name, AlphaSums()).add(unit)
            if grade.score is None:
                self.grade_errors[name] += 1
                self.errors_by_category["judge" if "judge" in grade.metadata else "grader"] += 1
                continue
            self.scored.setdefault(name, 0)
            self.scored[name] += 1
            if not grade.applicable:
                self.not_applicable[name] += 1
            score = counted(grade, self.gate.na_pass)  # n/a is not a 1.0 (unless the gate says it is)
            self.scores.setdefault(name, ScoreCounts())
            if score is not None:
                self.scores[name].append(score)

    def aggregates(self) -> dict[str, GraderAggregate]:
        passes = self.gate.passes
        default = self.gate.sample_rule
        rules = self.gate.pass_thresholds()  # a logical gate's sub-gates may each have their own rule
        out = {}
        for name, scores in self.scores.items():
            others = sorted(r for r in rules.get(name, ()) if r != default)
            count = self.scored.get(name, 0)
            out[name] = GraderAggregate(
                count=count, applicable=count - self.not_applicable[name], errors=self.grade_errors[name],
                avg_score=aggregate(scores, "avg_score", passes),
                accuracy=aggregate(scores, "accuracy", passes),
                min=aggregate(scores, "min", passes), max=aggregate(scores, "max", passes),
                median=aggregate(scores, "median", passes),
                p50=aggregate(scores, "p50", passes), p95=aggregate(scores, "p95", passes),
                p99=aggregate(scores, "p99", passes),
                accuracy_at={threshold_key(op, value): acc for op, value in others
                             if (acc := aggregate(scores, "accuracy", _passes(op, value))) is not None},
            )
        return out

    def reliability(self) -> Reliability | None:
        """pass@k (at least one of k passed) and pass^k (all k passed), averaged over samples."""
        if self.repeats <= 1:
            return None
        graded = [(p, n, runs) for p, n, runs in self.per_sample.values() if n > 0]
        if not graded:
            return Reliability(repeats=self.repeats, samples=0)
        # pass^k is "all k runs passed": a sample whose graded runs all passed but one of whose runs errored is
        # not known to pass^k, so it is left out of that share (it still counts for pass@k and the mean)
        decided = [(p, n) for p, n, runs in graded if p < n or n == runs]
        return Reliability(
            repeats=self.repeats, samples=len(graded),
            pass_at_k=sum(1 for p, _, _ in graded if p > 0) / len(graded),
            pass_hat_k=sum(1 for p, n in decided if p == n) / len(decided) if decided else None,
            mean_pass_rate=sum(p / n for p, n, _ in graded) / len(graded),
        )

    def reduction(self) -> Reduction | None:
        """gate.reducer over a run with repeats: each sample's repeats made one (gate/reducers.py), folded as a
        run of one repeat is, so its aggregates and counts are what the gate reads."""
        reducer = self.gate.reducer
        if reducer is None or self.repeat_log is None or self.repeats <= 1:
            return None
        fold = Accumulator(self.gate, self.suite, list(self.scores), reduce=False)
        per_sample = []
        for sample_id, repeats in self.repeat_log.items():
            record, result = reduce_sample(self.gate, reducer, sample_id, repeats)
            per_sample.append(record)
            fold.add(result)
        return Reduction(reducer=reducer.name, repeats=self.repeats, samples=fold.total, passed=fold.passed,
                         failed=fold.failed, errored=fold.errored, unchecked=fold.unchecked,
                         graders=fold.aggregates(), per_sample=per_sample)

    def judge_agreement(self) -> dict[str, JudgeAgreement]:
        out = {}
        for name in sorted(set(self.panel_units) | set(self.unreliable)):
            sums = self.panel_units.get(name, AlphaSums())
            out[name] = JudgeAgreement(judges=sorted(sums.judges), units=sums.units, alpha=sums.alpha(),
                                       unreliable=self.unreliable[name])
        return out

    @property
    def missing_grades(self) -> int:
        return sum(self.grade_errors.values())

    def summary(self) -> RunSummary:
        aggregates = self.aggregates()
        reliability = self.reliability()
        reduced = self.reduction()
        if reduced is not None:  # the gate reads the samples the reducer made, not the runs
            gate = self.gate.decide(reduced.graders, reliability, (reduced.passed, reduced.passed + reduced.failed),
                                    reduced=True)
        else:
            gate = self.gate.decide(aggregates, reliability, (self.passed, self.passed + self.failed))
        return RunSummary(
            suite=self.suite, total=self.total, graded=self.total - self.errored, errored=self.errored,
            passed=self.passed, failed=self.failed, unchecked=self.unchecked,
            errors_by_category=dict(self.errors_by_category),
            graders=aggregates, usage=self.usage,
            gate=gate, judge_usage=self.judge_usage, user_usage=self.user_usage, roles=self.roles,
            reliability=reliability, reduced=reduced,
            judge_agreement=self.judge_agreement(),
            grades_total=self.grades_total, grades_missing=self.missing_grades,
            cost=self.cost if self.pricing else None,
            latency_p50_s=self.latencies.quantile(0.5), latency_p95_s=self.latencies.quantile(0.95),
        )


def _passes(op: str, value: float) -> Callable[[float], bool]:
    """The per-sample rule `score <op> value`, bound now (a lambda in a loop would see the last rule)."""
    return lambda score: OPS[op](score, value)


GateMode = Literal["all", "any"]
"""How a run over several models is gated: all, every model must pass its gate; any, at least one."""


def combined_exit(codes: Sequence[int], mode: GateMode) -> int:
    """The exit code of a run over several models, from each model's: 130 when any model was interrupted; with
    `all`, 0 only when every model passed its gate, 3 when any model is incomplete (its endpoint failed, too many
    errors: nothing can say every model passed), else 1; with `any`, 0 when at least one model passed, else 3
    when any model is incomplete, else 1."""
    if any(code == EXIT_INTERRUPTED for code in codes):
        return EXIT_INTERRUPTED
    incomplete = any(code not in (EXIT_PASSED, EXIT_GATE_FAILED) for code in codes)
    if mode == "any" and any(code == EXIT_PASSED for code in codes):
        return EXIT_PASSED
    if mode == "all" and codes and all(code == EXIT_PASSED for code in codes):
        return EXIT_PASSED
    return EXIT_INCOMPLETE if incomplete else EXIT_GATE_FAILED


def combined_verdict(runs: Sequence[ModelRun], mode: GateMode) -> Verdict:
    """The matrix's gate line: how many models passed, and the rule applied."""
    passed = [r.model for r in runs if r.exit_code == EXIT_PASSED]
    unknown = [r.model for r in runs if r.exit_code not in (EXIT_PASSED, EXIT_GATE_FAILED)]
    code = combined_exit([r.exit_code if r.exit_code is not None else EXIT_INTERRUPTED for r in runs], mode)
    rule = "every model must pass its gate" if mode == "all" else "at least one model must pass its gate"
    counted = f"{len(passed)} of {len(runs)} models passed their gate ({rule})"
    if unknown:
        counted += f"; not evaluated: {', '.join(unknown)}"
    if code == EXIT_PASSED:
        return Verdict(passed=True, message=f"Gate PASSED: {counted}")
    if code == EXIT_GATE_FAILED:
        return Verdict(passed=False, message=f"Gate FAILED: {counted}")
    return Verdict(passed=None, message=f"Gate not evaluated: {counted}")


def _left_ungraded(grade: Grade) -> bool:
    """A grade not given on purpose (a conversation --on-divergence stop cut short has no whole-conversation
    verdict): neither a grader's nor a judge's error, so it is kept out of the missing-grade count that can abort
    the run (exit 3), and out of the grades counted."""
    return grade.score is None and grade.metadata.get("not_graded") == "diverged"
