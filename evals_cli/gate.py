"""Aggregation and the pass/fail decision. Grades with score None (errors) are left out, never counted as 0.

A sample's verdict is one rule (`Gate.judge_sample`): the gate's per-sample rule on the weighted score, and
every required grader (tools_avoided by default; every grader with `sample_pass: all`) at or above its own
`threshold`, and no call to a tool that was never offered. A grade missing (score None) for a grader the
verdict reads makes the sample incomplete (errored), never passed on the graders that remain, unless the
sample fails anyway (a required grader under its threshold, an unknown tool): then it is failed.

A grade with nothing to check (`applicable` False, n/a) is left out of every aggregate and of the sample's
weighted score, whose weights renormalise over the graders that applied; a gate with `not_applicable: pass` counts
it as 1.0 instead. A sample none of whose weighted graders applied has no weighted score: its required graders
decide it, and when none of them applied either it has no verdict (nothing was checked).

A gate is a tree: `weighted_average` and `simple` gates are leaves that compare one aggregated number with a
threshold, `logical` gates join sub-gates with and/or. Each kind is a node class registered in `GATES` with the
spec it reads (the specs live in models.specs); which graders a kind reads, and how it decides, is the node's
own business. `Gate` keeps the one-object API the runner, the summary and the exporters use (`passes`,
`score_sample`, `decide`, `weights`) whatever the kind.
"""

from __future__ import annotations

import contextvars
import math
import statistics
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from evals_cli import custom_code
from evals_cli.models.results import ErrorCategory, ErrorInfo, FailedBy, GateResult, Grade, GraderAggregate, Reliability
from evals_cli.models.sample import Sample
from evals_cli.models.specs import AnyGate, CustomRewardGate, LogicalGate, SimpleGate, WeightedAverageGate
from evals_cli.models.trajectory import Trajectory
from evals_cli.registry import Registry
from evals_cli.stats import ScoreDistribution
from evals_cli.thresholds import EPS, OPS, SYMBOLS, UNDECIDED

RUN_LEVEL = ("pass_at_k", "pass_hat_k")
SAMPLE_LEVEL = ("pass_rate",)  # the share of samples whose own verdict passed: a gate that fails when samples do
PERCENTILES = {"p50": 0.50, "p95": 0.95, "p99": 0.99}
NOTHING_TO_CHECK = "no sample had anything to check (every grade n/a)"


def threshold_key(op: str, value: float) -> str:
    """How a per-sample pass rule is named in `GraderAggregate.accuracy_at` (e.g. 'gte 1')."""
    return f"{op} {value:g}"


def effective_weights(gate: AnyGate, graders: Iterable[str]) -> dict[str, float]:
    """The graders a gate reads, with their weights, among those that actually run (see each kind's `weights_of`)."""
    return GATES[gate.kind].impl.weights_of(gate, list(graders))


def _runs(gate: AnyGate, active: list[str]) -> bool:
    """Whether any grader this gate names runs (a sub-gate on a skipped judge is dropped, as weights are)."""
    return GATES[gate.kind].impl.runs(gate, active)


def weighted(scores: dict[str, float | None], weights: dict[str, float]) -> float | None:
    """Weighted mean over the scores present; missing ones are dropped and the rest renormalised."""
    present = [(w, score) for g, w in weights.items() if (score := scores.get(g)) is not None]
    total = sum(w for w, _ in present)
    if total <= 0:
        return None
    return sum(w * score for w, score in present) / total


def counted(grade: Grade, na_pass: bool = False) -> float | None:
    """The score a weighted score or an aggregate reads from a grade: None for an error, and for n/a unless
    the gate counts n/a as a pass (its conventional 1.0 is not a result)."""
    if grade.applicable or na_pass:
        return grade.score
    return None


def percentile(scores: list[float], q: float) -> float:
    """Linear interpolation between the closest ranks (numpy's default), so p50 is the median."""
    ordered = sorted(scores)
    position = (len(ordered) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def aggregate(scores: list[float] | ScoreDistribution, aggregation: str,
              passes: Callable[[float], bool]) -> float | None:
    """One number from a grader's sample scores (a list, or their counts); `passes` decides what counts for
    accuracy."""
    if not scores:
        return None
    if isinstance(scores, ScoreDistribution):
        return _aggregate_counts(scores, aggregation, passes)
    if aggregation == "avg_score":
        return sum(scores) / len(scores)
    if aggregation == "accuracy":
        return sum(1 for s in scores if passes(s)) / len(scores)
    if aggregation == "min":
        return min(scores)
    if aggregation == "max":
        return max(scores)
    if aggregation == "median":
        return statistics.median(scores)
    if aggregation in PERCENTILES:
        return percentile(scores, PERCENTILES[aggregation])
    raise ValueError(f"unknown aggregation {aggregation}")


def _aggregate_counts(scores: ScoreDistribution, aggregation: str, passes: Callable[[float], bool]) -> float:
    if aggregation == "avg_score":
        return scores.total / len(scores)
    if aggregation == "accuracy":
        return scores.share(passes)
    if aggregation == "min":
        return scores.min()
    if aggregation == "max":
        return scores.max()
    if aggregation == "median":
        return scores.quantile(0.5)
    if aggregation in PERCENTILES:
        return scores.quantile(PERCENTILES[aggregation])
    raise ValueError(f"unknown aggregation {aggregation}")


@dataclass(frozen=True)
class Verdict:
    """One (sub-)gate's decision: `text` reads as a clause of the gate message."""

    passed: bool | None
    metric: float | None
    text: str


def _and(values: list[bool | None]) -> bool | None:
    if any(v is False for v in values):
        return False
    return None if any(v is None for v in values) or not values else True


def _or(values: list[bool | None]) -> bool | None:
    if any(v is True for v in values):
        return True
    return None if any(v is None for v in values) or not values else False


GateT = TypeVar("GateT", WeightedAverageGate, SimpleGate, LogicalGate, CustomRewardGate)
LeafT = TypeVar("LeafT", WeightedAverageGate, SimpleGate)


class _Node(Generic[GateT]):
    """A gate of one kind over the active graders. The classmethods answer for a spec before any node is built
    (which graders it reads, whether any of them runs); `of` builds the node."""

    spec: GateT

    @classmethod
    def weights_of(cls, spec: GateT, active: list[str]) -> dict[str, float]:
        """The graders this gate reads, with their weights, among the `active` ones."""
        raise NotImplementedError

    @classmethod
    def runs(cls, spec: GateT, active: list[str]) -> bool:
        """Whether any grader this gate names is active."""
        raise NotImplementedError

    @classmethod
    def of(cls, spec: GateT, active: list[str], load_reward: RewardLoader | None = None) -> _Node[GateT]:
        """`load_reward`: how a custom reward's function is found (None: the node only decides runs)."""
        raise NotImplementedError

    def passes(self, score: float) -> bool:
        raise NotImplementedError

    def score_sample(self, grades: dict[str, Grade], na_pass: bool = False) -> tuple[float | None, bool | None]:
        """(score, passed); both None when nothing this gate weighs had anything to check. `na_pass`: the
        top-level gate's `not_applicable: pass` (n/a grades count as 1.0)."""
        raise NotImplementedError

    def decide(self, aggregates: dict[str, GraderAggregate], reliability: Reliability | None,
               counts: tuple[int, int] | None = None) -> Verdict:
        """`counts`: (samples passed, samples with a verdict), for `aggregation: pass_rate`."""
        raise NotImplementedError

    def thresholds(self) -> dict[str, set[tuple[str, float]]]:
        """Grader -> the per-sample pass rules this gate applies to it (for accuracy)."""
        raise NotImplementedError


GATES: Registry[type[_Node[Any]]] = Registry("gate")


class _Leaf(_Node[LeafT]):
    """A gate that compares one aggregated number with `value`: weighted_average and simple."""

    def __init__(self, spec: LeafT, weights: dict[str, float]) -> None:
        self.spec = spec
        self.weights = weights

    @classmethod
    def of(cls, spec: LeafT, active: list[str], load_reward: RewardLoader | None = None) -> _Leaf[LeafT]:
        return cls(spec, cls.weights_of(spec, active))

    def passes(self, score: float) -> bool:
        return OPS[self.spec.sample_op](score, self.spec.sample_value)

    def score_sample(self, grades: dict[str, Grade], na_pass: bool = False) -> tuple[float | None, bool | None]:
        score = weighted({g: counted(grade, na_pass) for g, grade in grades.items()}, self.weights)
        return score, (None if score is None else self.passes(score))

    def thresholds(self) -> dict[str, set[tuple[str, float]]]:
        return {g: {(self.spec.sample_op, self.spec.sample_value)} for g in self.weights}

    def _metric(self, grader: str, aggregates: dict[str, GraderAggregate]) -> float | None:
        agg = aggregates.get(grader)
        if agg is None:
            return None
        if self.spec.aggregation == "accuracy":
            key = threshold_key(self.spec.sample_op, self.spec.sample_value)
            return agg.accuracy_at.get(key, agg.accuracy)
        return getattr(agg, self.spec.aggregation, None)

    def decide(self, aggregates: dict[str, GraderAggregate], reliability: Reliability | None,
               counts: tuple[int, int] | None = None) -> Verdict:
        spec = self.spec
        if spec.aggregation in SAMPLE_LEVEL:
            passed, decided = counts or (0, 0)
            metric = passed / decided if decided else None
            what = f"sample pass rate ({passed} of {decided} samples passed)"
        elif spec.aggregation in RUN_LEVEL:
            # pass@k / pass^k are properties of whole samples over their repeats, not of single graders
            metric = getattr(reliability, spec.aggregation) if reliability else None
            what = (f"{spec.aggregation} (over {reliability.samples if reliability else 0} samples × "
                    f"{reliability.repeats if reliability else 1})")
        else:
            metric = weighted({g: self._metric(g, aggregates) for g in self.weights}, self.weights)
            what = self._what()
        if metric is None:
            checked = [a for g in self.weights if (a := aggregates.get(g)) is not None and a.count]
            why = (NOTHING_TO_CHECK
                   if spec.aggregation not in SAMPLE_LEVEL + RUN_LEVEL and checked else "no sample was graded")
            return Verdict(None, None, f"{what}: not evaluated, {why}")
        passed = OPS[spec.op](metric, spec.value)
        symbol = SYMBOLS[spec.op] if passed else "not " + SYMBOLS[spec.op]
        return Verdict(passed, metric, f"{what} = {metric:.3f} {symbol} {spec.value:g}")

    def _what(self) -> str:
        raise NotImplementedError


@GATES.register("weighted_average", spec=WeightedAverageGate)
class _WeightedAverage(_Leaf[WeightedAverageGate]):
    """The weighted mean of the graders' aggregates."""

    @classmethod
    def weights_of(cls, spec: WeightedAverageGate, active: list[str]) -> dict[str, float]:
        """Its weights (equal weights when none are given); none when none of the graders its weights name runs
        (a judge skipped by --no-judge: the gate then cannot decide, as a simple gate on a skipped judge cannot;
        falling back to equal weights would gate on graders the suite gave no weight)."""
        if spec.weights:
            weights = {g: w for g, w in spec.weights.items() if g in active}
            if weights and sum(weights.values()) > 0:
                return weights
            if any(w > 0 for w in spec.weights.values()):
                return {}
        return {g: 1.0 for g in active}

    @classmethod
    def runs(cls, spec: WeightedAverageGate, active: list[str]) -> bool:
        return not spec.weights or any(g in active and w > 0 for g, w in spec.weights.items())

    def _what(self) -> str:
        parts = ", ".join(f"{g}×{w:g}" for g, w in self.weights.items())
        return f"weighted {self.spec.aggregation} ({parts})"


@GATES.register("simple", spec=SimpleGate)
class _Simple(_Leaf[SimpleGate]):
    """One grader's aggregate."""

    @classmethod
    def weights_of(cls, spec: SimpleGate, active: list[str]) -> dict[str, float]:
        return {spec.metric_key: 1.0} if spec.metric_key in active else {}

    @classmethod
    def runs(cls, spec: SimpleGate, active: list[str]) -> bool:
        return spec.metric_key in active

    def _what(self) -> str:
        return f"{self.spec.metric_key} {self.spec.aggregation}"


@GATES.register("logical", spec=LogicalGate)
class _Logical(_Node[LogicalGate]):
    """Sub-gates joined by and/or, with three-valued logic: an undecided sub-gate decides nothing."""

    def __init__(self, spec: LogicalGate, children: list[_Node[Any]]) -> None:
        self.spec = spec
        self.children = children
        self.combine = _and if spec.operator == "and" else _or

    @classmethod
    def weights_of(cls, spec: LogicalGate, active: list[str]) -> dict[str, float]:
        """Every grader its running sub-gates read (the first weight seen wins)."""
        merged: dict[str, float] = {}
        for sub in spec.gates:
            if _runs(sub, active):
                for name, weight in effective_weights(sub, active).items():
                    merged.setdefault(name, weight)
        return merged

    @classmethod
    def runs(cls, spec: LogicalGate, active: list[str]) -> bool:
        return any(_runs(sub, active) for sub in spec.gates)

    @classmethod
    def of(cls, spec: LogicalGate, active: list[str], load_reward: RewardLoader | None = None) -> _Logical:
        return cls(spec, [_build(sub, active, load_reward) for sub in spec.gates if _runs(sub, active)])

    def passes(self, score: float) -> bool:
        """One threshold for callers that need one (per-turn pass counts): the first sub-gate's."""
        return self.children[0].passes(score) if self.children else OPS["gte"](score, 1.0)

    def score_sample(self, grades: dict[str, Grade], na_pass: bool = False) -> tuple[float | None, bool | None]:
        """The sample's score is the mean of its sub-gates' scores (for the table); `passed` is the logic over
        the sub-gates that had something to check (one whose graders were all n/a decides nothing)."""
        results = [child.score_sample(grades, na_pass) for child in self.children]
        scores = [s for s, _ in results if s is not None]
        return (sum(scores) / len(scores) if scores else None), self.combine([p for _, p in results if p is not None])

    def thresholds(self) -> dict[str, set[tuple[str, float]]]:
        merged: dict[str, set[tuple[str, float]]] = {}
        for child in self.children:
            for grader, rules in child.thresholds().items():
                merged.setdefault(grader, set()).update(rules)
        return merged

    def decide(self, aggregates: dict[str, GraderAggregate], reliability: Reliability | None,
               counts: tuple[int, int] | None = None) -> Verdict:
        verdicts = [child.decide(aggregates, reliability, counts) for child in self.children]
        passed = self.combine([v.passed for v in verdicts])
        decided = any(v.passed is not None for v in verdicts)
        share = sum(1 for v in verdicts if v.passed) / len(verdicts) if decided else None
        word = "all of" if self.spec.operator == "and" else "any of"
        return Verdict(passed, share, f"{word} ({'; '.join(v.text for v in verdicts)})")


class RewardError(Exception):
    """A custom reward could not score a sample: the sample has no verdict (an error), never a zero. `category`
    custom_code when the function exited, was interrupted or ran out of time (evals_cli/custom_code.py)."""

    def __init__(self, message: str, category: ErrorCategory = "grader") -> None:
        super().__init__(message)
        self.category = category


_REWARD_INPUT: contextvars.ContextVar[tuple[Trajectory | None, Sample | None]] = contextvars.ContextVar(
    "evals_reward_input", default=(None, None))
"""The trajectory and sample a custom reward may read besides the grades, set by Gate.judge_sample for its own
call: a context variable, since samples' verdicts are decided in threads of their own (Gate.ajudge_sample)."""

_REWARD_FAILED: contextvars.ContextVar[str | None] = contextvars.ContextVar("evals_reward_failed", default=None)
"""Why the custom reward has no score for this sample without calling it again (it ran out of time)."""


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


RewardLoader = Callable[[str], Callable[[RewardContext], Any]]
"""Finds a custom reward function by its reference ('path/to/file.py:function') and checks its signature
(ValueError saying what is wrong). Handed to the gate by whoever builds it and knows the suite's folder
(runner/prepare.py binds graders/functions.py `load_reward` to it): the gate decides, it loads no code."""


def reward_score(value: Any, ref: str) -> tuple[float, str]:
    """(score in [0, 1], rationale) from what a reward function returned; TypeError/ValueError otherwise (an
    error for that sample, never a zero)."""
    rationale = ""
    if isinstance(value, tuple) and len(value) == 2:
        value, rationale = value[0], str(value[1])
    elif isinstance(value, dict):
        if "score" not in value:
            raise TypeError(f"reward {ref} returned a dict without 'score'")
        rationale = str(value.get("rationale") or value.get("metadata") or "")
        value = value["score"]
    elif not isinstance(value, int | float) and hasattr(value, "score"):  # letta-evals' RewardOutput, or alike
        rationale = str(getattr(value, "rationale", None) or getattr(value, "metadata", None) or "")
        value = value.score
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"reward {ref} returned {type(value).__name__}; return a number in [0, 1] (or "
                        "(score, rationale), a dict with 'score', an object with .score)")
    score = float(value)
    if not 0.0 <= score <= 1.0:  # NaN fails this too
        raise ValueError(f"reward {ref} returned {score:g}, outside [0, 1]")
    return score, rationale


@GATES.register("custom", spec=CustomRewardGate)
class _CustomReward(_Node[CustomRewardGate]):
    """A reward function of all the sample's grades; the run passes on the share of samples whose reward passed.

    The function reads any grader, so every grader that runs is read: a missing grade makes the sample
    incomplete before the function is called (judge_sample), as for a weighted gate."""

    def __init__(self, spec: CustomRewardGate, active: list[str], fn: Callable[[RewardContext], Any] | None) -> None:
        self.spec = spec
        self.active = active
        self.fn = fn

    @classmethod
    def weights_of(cls, spec: CustomRewardGate, active: list[str]) -> dict[str, float]:
        return {g: 1.0 for g in active}

    @classmethod
    def runs(cls, spec: CustomRewardGate, active: list[str]) -> bool:
        return bool(active)

    @classmethod
    def of(cls, spec: CustomRewardGate, active: list[str], load_reward: RewardLoader | None = None) -> _CustomReward:
        fn = None
        if load_reward is not None:
            try:
                fn = load_reward(spec.function)
            except ValueError as exc:
                from evals_cli.errors import ConfigError

                raise ConfigError(f"gate (custom reward): {exc}") from None
        return cls(spec, active, fn)

    def passes(self, score: float) -> bool:
        return OPS[self.spec.sample_op](score, self.spec.sample_value)

    def score_sample(self, grades: dict[str, Grade], na_pass: bool = False) -> tuple[float | None, bool | None]:
        """The reward reads every grade as given (an n/a grade: `applicable` False, score 1.0)."""
        if self.fn is None:
            raise RewardError(f"custom reward {self.spec.function} was not loaded (no suite folder to find it in)")
        failed = _REWARD_FAILED.get()
        if failed is not None:
            raise RewardError(failed, "custom_code")
        trajectory, sample = _REWARD_INPUT.get()
        try:
            value = custom_code.run_guarded(self.fn, RewardContext(grades=dict(grades), trajectory=trajectory,
                                                                   sample=sample),
                                            where=f"custom reward {self.spec.function}")
            score, _ = reward_score(value, self.spec.function)
        except custom_code.CustomCodeError as exc:  # it exited or raised KeyboardInterrupt: this sample's error
            raise RewardError(str(exc), "custom_code") from None
        except Exception as exc:  # the user's code: an error for this sample, never a crash or a zero
            text = str(exc) if isinstance(exc, TypeError | ValueError) and str(exc).startswith("reward ") \
                else f"reward {self.spec.function} raised {type(exc).__name__}: {exc}"
            raise RewardError(text) from None
        return score, self.passes(score)

    def thresholds(self) -> dict[str, set[tuple[str, float]]]:
        return {}

    def decide(self, aggregates: dict[str, GraderAggregate], reliability: Reliability | None,
               counts: tuple[int, int] | None = None) -> Verdict:
        passed, decided = counts or (0, 0)
        what = (f"share of samples whose reward ({self.spec.function}) is {SYMBOLS[self.spec.sample_op]} "
                f"{self.spec.sample_value:g} ({passed} of {decided})")
        if not decided:
            return Verdict(None, None, f"{what}: not evaluated, no sample was graded")
        metric = passed / decided
        ok = OPS[self.spec.op](metric, self.spec.value)
        symbol = SYMBOLS[self.spec.op] if ok else "not " + SYMBOLS[self.spec.op]
        return Verdict(ok, metric, f"{what} = {metric:.3f} {symbol} {self.spec.value:g}")


def _build(spec: AnyGate, active: list[str], load_reward: RewardLoader | None = None) -> _Node[Any]:
    return GATES[spec.kind].impl.of(spec, active, load_reward)


def _reward_nodes(node: _Node[Any]) -> list[_CustomReward]:
    if isinstance(node, _CustomReward):
        return [node]
    if isinstance(node, _Logical):
        return [found for child in node.children for found in _reward_nodes(child)]
    return []


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
                 specs: Mapping[str, Any] | None = None, load_reward: RewardLoader | None = None) -> None:
        """`load_reward`: loads and checks a custom reward function from the suite's folder (ConfigError when it
        is missing or has the wrong signature); without it a custom gate decides runs but scores no sample
        (merging shards, reports)."""
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

    def judge_sample(self, grades: dict[str, Grade], trajectory: Trajectory | None = None,
                     sample: Sample | None = None) -> SampleVerdict:
        """The one rule that decides a sample (see the module docstring); `trajectory` and `sample` are what a
        custom reward may read besides the grades."""
        failed_by: list[FailedBy] = []
        for name, grade in grades.items():
            if grade.score is None or not self.required(name) or self.grader_passes(name, grade.score):
                continue
            own = bool(getattr(self.specs.get(name), "is_required", False))
            mark = self.threshold(name)
            failed_by.append(FailedBy(
                rule="required" if own else "threshold", grader=name, score=grade.score, threshold=mark,
                reason=f"{name} {grade.score:.2f} < {mark:g} ({'required' if own else 'sample_pass: all'})"))
        unknown = self._unknown_tool(trajectory)
        missing = [name for name, grade in grades.items() if grade.score is None and self.reads(name)]
        if missing:
            if failed_by or unknown:
                # failed whatever the missing grade would say (a forbidden call, a tool never offered): counted
                # as failed, never hidden as incomplete, where it would leave pass_rate's count (and the
                # averages) and could turn the run's verdict into a pass; no weighted score without that grade
                return SampleVerdict(None, False, failed_by + unknown)
            if trajectory is not None and trajectory.end_reason == "diverged":  # one reason, not one per grader
                return SampleVerdict(None, None, incomplete=ErrorInfo(category="diverged", message=(
                    f"incomplete: the conversation left the recorded user's path at turn {len(trajectory.turns)} "
                    "and was stopped there (--on-divergence stop): no whole-conversation verdict")))
            judge = any(getattr(self.specs.get(n), "kind", None) == "model_judge" or "judge" in grades[n].metadata
                        for n in missing)
            reasons = "; ".join(f"{n}: {grades[n].error or grades[n].rationale or 'no score'}" for n in missing)
            custom = any(grades[n].metadata.get("custom_code") for n in missing)  # see graders/grading.py _safe
            return SampleVerdict(None, None, incomplete=ErrorInfo(
                category="custom_code" if custom else "judge" if judge else "grader",
                message=f"incomplete: no grade from {', '.join(missing)}, which the verdict needs ({reasons})"))
        token = _REWARD_INPUT.set((trajectory, sample))
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
            if isinstance(self.root, _CustomReward):
                spec = self.root.spec
                failed_by.append(FailedBy(rule="weighted", score=score, threshold=spec.sample_value,
                                          reason=f"reward {score:.2f} not {SYMBOLS[spec.sample_op]} "
                                                 f"{spec.sample_value:g} ({spec.function})"))
            elif isinstance(self.root, _Logical):  # its sub-gates' own per-sample rules, joined by and/or
                failed_by.append(FailedBy(rule="weighted", score=score,
                                          reason=f"the gate's per-sample rule ({self.root.spec.operator} of its "
                                                 "sub-gates) was not met"))
            else:
                rule = self.sample_rule
                what = "" if rule is None or score is None else f" {score:.2f} not {SYMBOLS[rule[0]]} {rule[1]:g}"
                failed_by.append(FailedBy(rule="weighted", score=score, threshold=rule[1] if rule else None,
                                          reason=f"weighted score{what}"))
        failed_by += unknown
        if failed_by:
            passed = False
        return SampleVerdict(score, passed, failed_by, note=note)

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
               counts: tuple[int, int] | None = None) -> GateResult:
        """The run's verdict; the message says in words what was compared with what. `counts` (samples passed,
        samples with a verdict) feed `aggregation: pass_rate`."""
        spec = self.spec
        verdict = self.root.decide(aggregates, reliability, counts)
        op: str
        if isinstance(spec, LogicalGate):
            # metric: the share of sub-gates that passed; `and` needs all of them, `or` one
            count = len(self.root.children) if isinstance(self.root, _Logical) else 0
            op, aggregation = spec.operator, "logical"
            value = 1.0 if spec.operator == "and" or count == 0 else 1 / count
        else:
            op, value, aggregation = spec.op, spec.value, spec.aggregation
        warning = None
        if verdict.passed is None:
            message = UNDECIDED + self._why_undecided(verdict)
        elif verdict.passed:
            warning = _few_passed(counts, "sample runs" if reliability is not None and reliability.repeats > 1
                                  else "samples")
            message = f"Gate PASSED{f' (but {warning})' if warning else ''}: {verdict.text}"
        else:
            message = f"Gate FAILED: {verdict.text}"
        return GateResult(passed=verdict.passed, metric=verdict.metric if verdict.passed is not None else None,
                          op=op, value=value, aggregation=aggregation, weights=self.weights, message=message,
                          not_applicable=self.not_applicable, warning=warning)

    def _why_undecided(self, verdict: Verdict) -> str:
        spec = self.spec
        if isinstance(spec, SimpleGate) and not self.weights:
            return f"grader '{spec.metric_key}' did not run"
        if isinstance(self.root, _Logical) and not self.root.children:
            return "none of the graders it names ran"
        if isinstance(spec, WeightedAverageGate) and spec.weights and not self.weights:
            return f"none of the graders its weights name ran ({', '.join(spec.weights)})"
        if NOTHING_TO_CHECK in verdict.text:  # graded, but n/a throughout: not the same as nothing graded
            return verdict.text
        return "no sample was graded" if verdict.metric is None else verdict.text



def _few_passed(counts: tuple[int, int] | None, unit: str = "samples") -> str | None:
    """'only 0 of 1 samples passed' when a gate passes while fewer than half the samples with a verdict did:
    a gate on averages can pass a run most of whose samples failed, and the verdict line must not hide it."""
    if counts is None:
        return None
    passed, decided = counts
    if decided and 2 * passed < decided:
        return f"only {passed} of {decided} {unit} passed"
    return None
