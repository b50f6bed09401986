"""The gate's one object: it settles per-turn grades and decides each sample and the run. Grades with score None
(errors) are left out, never counted as 0.

A sample's verdict is one rule (`Gate.judge_sample`): the gate's per-sample rule on the weighted score, and
every required grader (tools_avoided by default; every grader with `sample_pass: all`) at or above its own
`threshold`, and no call to a tool that was never offered. A grade missing (score None) for a grader the
verdict reads makes the sample incomplete (errored), never passed on the graders that remain, unless the
sample fails anyway (a required grader under its threshold, an unknown tool): then it is failed.

A grade with nothing to check (`applicable` False, n/a) is left out of every aggregate and of the sample's
weighted score, whose weights renormalise over the graders that applied; a gate with `not_applicable: pass` counts
it as 1.0 instead. A sample none of whose weighted graders applied has no weighted score: its required graders
decide it, and when none of them applied either it has no verdict (nothing was checked).

A gate is a tree of kinds (kinds.py); the run's verdict is run_rule.py's. `Gate` keeps the one-object API the
runner, the summary and the exporters use (`settle`, `passes`, `score_sample`, `decide`, `weights`) whatever the kind.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from evals_cli import custom_code
from evals_cli.gate.kinds import (
    _REWARD_FAILED,
    _REWARD_INPUT,
    RewardError,
    _build,
    _CustomReward,
    _Leaf,
    _Logical,
    _reward_nodes,
    effective_weights,
)
from evals_cli.gate.reducers import Reducer
from evals_cli.gate.run_rule import run_verdict
from evals_cli.gate.turns import settle_replies, settle_turns
from evals_cli.models.results import ErrorInfo, FailedBy, GateResult, Grade, GraderAggregate, Reliability, TurnScores
from evals_cli.models.sample import Sample
from evals_cli.models.specs import AnyGate
from evals_cli.models.trajectory import Trajectory
from evals_cli.thresholds import EPS, SYMBOLS


@dataclass(frozen=True)
class RewardContext:
    """What a custom reward function sees for one sample (letta-evals' `ctx`): every grader's grade by name
    (`.score`, `.rationale`), the scores alone, the graded submissions, the sample and the trajectory (None when
    the caller has none)."""

    grades: Mapping[str, Grade]
    trajectory: Trajectory | None = None
    sample: Sample | None = None

    @property
    def scores(self) -> dict[str, float | None]:
        return {name: grade.score for name, grade in self.grades.items()}

    @property
    def submissions(self) -> dict[str, str]:
        return {name: grade.submission or "" for name, grade in self.grades.items()}


RewardLoader = Callable[[str], Callable[[RewardContext], Any]]  # kinds.py's, typed with what it is called with
"""Finds a custom reward function by its reference ('path/to/file.py:function') and checks its signature
(ValueError saying what is wrong). Handed to the gate by whoever builds it and knows the suite's folder
(runner/prepare.py binds graders/functions.py `load_reward` to it): the gate decides, it loads no code."""


@dataclass(frozen=True)
class SampleVerdict:
    """One sample's verdict: its weighted score, whether it passed, why it failed, or why it has no verdict.

    `incomplete` is set when a grade the verdict reads is missing: the sample is then errored (score and
    passed None), because passing it on the graders that remain could turn a failure into a pass.
    """

    score: float | None
    passed: bool | None
    failed_by: list[FailedBy] = field(default_factory=list)
    incomplete: ErrorInfo | None = None
    note: str | None = None  # why a graded sample has no weighted score (SampleResult.score_note)


def _specs_of(graders: Iterable[str] | Mapping[str, Any]) -> dict[str, Any]:
    """Grader specs from a {name: Grader or spec} mapping (what the runner holds); none from bare names."""
    if not isinstance(graders, Mapping):
        return {}
    specs = {name: getattr(value, "spec", value) for name, value in graders.items()}
    return {name: spec for name, spec in specs.items() if hasattr(spec, "threshold")}



class Gate:
    """Decides per sample and over the run, for every gate kind.

    `graders` are the names of the graders that run, or a {name: Grader or spec} mapping; only with specs
    does the gate know each grader's `threshold` and `required` (without them every grader takes the gate's
    per-sample pass value and only the weighted rule decides, as for `evals report` on saved results).
    """

    def __init__(self, spec: AnyGate, graders: Iterable[str] | Mapping[str, Any],
                 specs: Mapping[str, Any] | None = None, load_reward: RewardLoader | None = None,
                 turn_pass: float | None = None) -> None:
        """`load_reward`: loads and checks a custom reward function from the suite's folder (ConfigError when it
        is missing or has the wrong signature); without it a custom gate decides runs but scores no sample
        (merging shards, reports). `turn_pass`: a letta-evals suite counts a turn of a per-turn sample as passed
        at this score (1.0) whatever its grader's threshold, as letta-evals reports `turns_passed` (the sample's
        verdict is not affected)."""
        self.spec = spec
        active = list(graders)
        self.specs: dict[str, Any] = dict(specs) if specs is not None else _specs_of(graders)
        self.weights = effective_weights(spec, active)
        self.root = _build(spec, active, load_reward)
        self.rewards = _reward_nodes(self.root)
        self.active = active
        self.sample_pass: str = getattr(spec, "sample_pass", "weighted")
        self.unknown_tools: str = getattr(spec, "unknown_tools", "fail")
        self.not_applicable: str = getattr(spec, "not_applicable", "exclude")
        self.turn_pass = turn_pass
        reducer = getattr(spec, "reducer", None)
        self.reducer = Reducer.parse(reducer) if reducer else None  # gate/reducers.py; read with repeats > 1

    @property
    def na_pass(self) -> bool:
        """`not_applicable: pass`: n/a grades count as 1.0 in every aggregate and weighted score."""
        return self.not_applicable == "pass"

    # --- per grader -----------------------------------------------------------------------------------

    @property
    def default_threshold(self) -> float:
        """A grader's pass mark when it sets none: the gate's per-sample pass value (1.0 if there is none)."""
        rule = self.sample_rule
        return 1.0 if rule is None else rule[1]

    def threshold(self, grader: str) -> float:
        """The grader's own pass mark (`threshold`), else its kind's (tools_avoided: 1), else the gate's per-sample
        pass value."""
        spec = self.specs.get(grader)
        if spec is not None and getattr(spec, "scope", None) == "reply":  # its score: the share of replies passed
            return float(spec.share_needed)
        own = getattr(spec, "threshold", None)
        if own is None:
            own = getattr(spec, "threshold_by_default", None)
        return self.default_threshold if own is None else own

    def grader_passes(self, grader: str, score: float) -> bool:
        """Whether a score reaches the grader's threshold (also what counts a turn as passed)."""
        return score >= self.threshold(grader) - EPS

    def required(self, grader: str) -> bool:
        """Whether the grader alone can fail a sample: `required` (tools_avoided by default), or sample_pass all."""
        if self.sample_pass == "all":
            return True
        spec = self.specs.get(grader)
        return bool(getattr(spec, "is_required", False))

    def reads(self, grader: str) -> bool:
        """Whether the sample's verdict reads this grader (weight > 0, or required): its grade must be there."""
        return self.weights.get(grader, 0) > 0 or self.required(grader)

    # --- grades settled: per-turn and per-reply grades counted by the gate's pass marks ----------------------

    def settle(self, grades: Mapping[str, Grade | TurnScores]) -> dict[str, Grade]:
        """Every grader's finished grade: per-turn grades counted by the grader's threshold (letta-evals: 1.0) and
        the gate's not_applicable, per-reply grades by the grader's threshold (else the per-sample pass value)."""
        return {name: self._settled(name, grade) for name, grade in grades.items()}

    def _settled(self, name: str, grade: Grade | TurnScores) -> Grade:
        if isinstance(grade, Grade):
            return grade
        if grade.scope == "reply":
            return settle_replies(grade, self.passes)
        turn_pass = self.turn_pass
        if turn_pass is not None:
            return settle_turns(grade, lambda s: s >= turn_pass - EPS, self.na_pass)
        return settle_turns(grade, lambda s: self.grader_passes(name, s), self.na_pass)

    def judge_sample(self, grades: dict[str, Grade], trajectory: Trajectory | None = None,
                     sample: Sample | None = None) -> SampleVerdict:
        """The one rule that decides a sample (see the module docstring); `trajectory` and `sample` are what a
        custom reward may read besides the grades."""
        failed_by = self._under_threshold(grades)
        unknown = self._unknown_tool(trajectory)
        missing = [name for name, grade in grades.items() if grade.score is None and self.reads(name)]
        if missing:
            return self._missing(grades, missing, failed_by + unknown, trajectory)
        token = _REWARD_INPUT.set(lambda g: RewardContext(grades=g, trajectory=trajectory, sample=sample))
        try:
            score, passed = self.root.score_sample(grades, self.na_pass)
        except RewardError as exc:
            if failed_by or unknown:  # failed whatever the reward would say
                return SampleVerdict(None, False, failed_by + unknown)
            return SampleVerdict(None, None, incomplete=ErrorInfo(category=exc.category, message=f"incomplete: {exc}"))
        finally:
            _REWARD_INPUT.reset(token)
        note = None
        if score is None and any(name in grades for name in self.weights):
            note, passed = self._nothing_weighed(grades, passed, bool(failed_by or unknown))
        if passed is False:
            failed_by.append(self._rule_failed(score))
        failed_by += unknown
        if failed_by:
            passed = False
        return SampleVerdict(score, passed, failed_by, note=note)

    def _under_threshold(self, grades: dict[str, Grade]) -> list[FailedBy]:
        """The required graders (or every grader, with sample_pass: all) whose grade is under its threshold."""
        failed_by: list[FailedBy] = []
        for name, grade in grades.items():
            if grade.score is None or not self.required(name) or self.grader_passes(name, grade.score):
                continue
            own = bool(getattr(self.specs.get(name), "is_required", False))
            mark = self.threshold(name)
            failed_by.append(FailedBy(
                rule="required" if own else "threshold", grader=name, score=grade.score, threshold=mark,
                reason=f"{name} {grade.score:.2f} < {mark:g} ({'required' if own else 'sample_pass: all'})"))
        return failed_by

    def _missing(self, grades: dict[str, Grade], missing: list[str], failed_by: list[FailedBy],
                 trajectory: Trajectory | None) -> SampleVerdict:
        """A grade the verdict reads is missing: failed when it fails anyway, else incomplete (never passed)."""
        if failed_by:
            # failed whatever the missing grade would say (a forbidden call, a tool never offered): counted
            # as failed, never hidden as incomplete, where it would leave pass_rate's count (and the
            # averages) and could turn the run's verdict into a pass; no weighted score without that grade
            return SampleVerdict(None, False, failed_by)
        if trajectory is not None and trajectory.end_reason == "diverged":  # one reason, not one per grader
            return SampleVerdict(None, None, incomplete=ErrorInfo(category="diverged", message=(
                f"incomplete: the conversation left the recorded user's path at turn {len(trajectory.turns)} "
                "and was stopped there (--on-divergence stop): no whole-conversation verdict")))
        judge = any(getattr(self.specs.get(n), "kind", None) == "model_judge" or "judge" in grades[n].metadata
                    for n in missing)
        reasons = "; ".join(f"{n}: {grades[n].error or grades[n].rationale or 'no score'}" for n in missing)
        custom = any(grades[n].metadata.get("custom_code") for n in missing)  # see graders/grading.py _safe
        # a grader that says why it could not grade (sandbox_check: the sandbox failed) names the category
        own = next((c for n in missing if isinstance(c := grades[n].metadata.get("error_category"), str)), None)
        return SampleVerdict(None, None, incomplete=ErrorInfo(
            category=own or ("custom_code" if custom else "judge" if judge else "grader"),
            message=f"incomplete: no grade from {', '.join(missing)}, which the verdict needs ({reasons})"))

    def _rule_failed(self, score: float | None) -> FailedBy:
        """Why the gate's per-sample rule failed the sample, in the words of its kind."""
        if isinstance(self.root, _CustomReward):
            spec = self.root.spec
            return FailedBy(rule="weighted", score=score, threshold=spec.sample_value,
                            reason=f"reward {score:.2f} not {SYMBOLS[spec.sample_op]} "
                                   f"{spec.sample_value:g} ({spec.function})")
        if isinstance(self.root, _Logical):  # its sub-gates' own per-sample rules, joined by and/or
            return FailedBy(rule="weighted", score=score,
                            reason=f"the gate's per-sample rule ({self.root.spec.operator} of its sub-gates) was not met")
        rule = self.sample_rule
        what = "" if rule is None or score is None else f" {score:.2f} not {SYMBOLS[rule[0]]} {rule[1]:g}"
        return FailedBy(rule="weighted", score=score, threshold=rule[1] if rule else None,
                        reason=f"weighted score{what}")

    def _nothing_weighed(self, grades: dict[str, Grade], passed: bool | None, failed: bool) -> tuple[str, bool | None]:
        """A sample none of whose weighted graders had anything to check: (why it has no weighted score, its
        verdict). Its required graders decide it (one under its threshold has already failed it); when none of
        them applied either, nothing was checked and it has no verdict, never a pass."""
        skipped = ", ".join(n for n in self.weights if n in grades)
        note = f"no weighted score: nothing to check for {skipped} (n/a)"
        if passed is not None or failed:
            return note, passed
        checked = [n for n, g in grades.items()
                   if self.required(n) and g.score is not None and (g.applicable or self.na_pass)]
        if checked:
            return note + f"; decided by its required grader(s) {', '.join(checked)}", True
        return note + ", nor for any required grader: nothing was checked, no verdict", None

    async def ajudge_sample(self, grades: dict[str, Grade], trajectory: Trajectory | None = None,
                            sample: Sample | None = None) -> SampleVerdict:
        """judge_sample for a run. With a custom reward, the verdict is decided under the custom-code guard: in a
        thread of its own, off the event loop, so that a reward that hangs leaves SIGINT and SIGTERM working and
        errors the sample (custom_code) when the sample's sample_timeout runs out, instead of holding the run."""
        if not self.rewards:
            return self.judge_sample(grades, trajectory, sample)
        names = ", ".join(node.spec.function for node in self.rewards)
        try:
            verdict: SampleVerdict = await custom_code.call(self.judge_sample, grades, trajectory, sample,
                                                            where=f"custom reward {names}")
        except custom_code.CustomCodeError as exc:  # out of time: decided again, with the reward as failed
            token = _REWARD_FAILED.set(str(exc))  # (a required grader under its threshold still fails the sample)
            try:
                return self.judge_sample(grades, trajectory, sample)
            finally:
                _REWARD_FAILED.reset(token)
        return verdict

    def _unknown_tool(self, trajectory: Trajectory | None) -> list[FailedBy]:
        """The failure a call to a tool never offered earns (none with `unknown_tools: allow`)."""
        if trajectory is None or self.unknown_tools != "fail":
            return []
        unknown = list(dict.fromkeys(c.name for c in trajectory.tool_calls if c.unknown_tool))
        if not unknown:
            return []
        return [FailedBy(rule="unknown_tool", reason=f"called tool(s) never offered: {', '.join(unknown)}")]

    def passes(self, score: float) -> bool:
        """The per-sample pass rule (of the first sub-gate, for a logical gate)."""
        return self.root.passes(score)

    @property
    def sample_rule(self) -> tuple[str, float] | None:
        """(op, value) of the rule `passes` applies; None when a logical gate has no sub-gate left."""
        node = self.root
        while isinstance(node, _Logical):
            if not node.children:
                return None
            node = node.children[0]
        assert isinstance(node, _Leaf | _CustomReward)
        return node.spec.sample_op, node.spec.sample_value

    def score_sample(self, grades: dict[str, Grade]) -> tuple[float | None, bool | None]:
        """The sample's gate score and whether it passed (None when nothing it reads was graded, or a grade it
        needs is missing); `judge_sample` says why."""
        verdict = self.judge_sample(grades)
        return verdict.score, verdict.passed

    def pass_thresholds(self) -> dict[str, set[tuple[str, float]]]:
        """Grader -> the per-sample pass rules the gate applies to it; the summary computes accuracy under each."""
        return self.root.thresholds()

    def decide(self, aggregates: dict[str, GraderAggregate], reliability: Reliability | None = None,
               counts: tuple[int, int] | None = None, reduced: bool = False) -> GateResult:
        """The run's verdict (run_rule.py); `counts` (samples passed, samples with a verdict) feed
        `aggregation: pass_rate`. `reduced`: the aggregates and counts are of samples made one by the reducer
        (output/summary.py), which the message says."""
        verdict = self.root.decide(aggregates, reliability, counts)
        subgates = len(self.root.children) if isinstance(self.root, _Logical) else 0
        per_sample = None
        if reduced and self.reducer is not None and reliability is not None:
            per_sample = self.reducer.describe(reliability.repeats)
        return run_verdict(self.spec, verdict, self.weights, self.not_applicable, subgates, reliability, counts,
                           per_sample)
