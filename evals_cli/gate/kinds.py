"""The gate kinds: each a node class registered in `GATES` with the spec it reads (the specs live in
models.specs). `weighted_average` and `simple` gates are leaves that compare one aggregated number with a
threshold, `logical` gates join sub-gates with and/or, `custom` calls the suite's reward function on a sample's
grades. Which graders a kind reads, how it scores a sample and how it decides a run is the node's own business;
`Gate` (gate.py) is the one object the runner, the summary and the exporters use whatever the kind."""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from evals_cli import custom_code
from evals_cli.gate.run_rule import NOTHING_TO_CHECK, Verdict
from evals_cli.gate.scores import (
    RUN_LEVEL,
    SAMPLE_LEVEL,
    counted,
    threshold_key,
    weighted,
)
from evals_cli.models.results import ErrorCategory, Grade, GraderAggregate, Reliability
from evals_cli.models.specs import AnyGate, CustomRewardGate, LogicalGate, SimpleGate, WeightedAverageGate
from evals_cli.registry import Registry
from evals_cli.thresholds import OPS, SYMBOLS


def effective_weights(gate: AnyGate, graders: list[str]) -> dict[str, float]:
    """The graders a gate reads, with their weights, among those that actually run (see each kind's `weights_of`)."""
    return GATES[gate.kind].impl.weights_of(gate, list(graders))


def _runs(gate: AnyGate, active: list[str]) -> bool:
    """Whether any grader this gate names runs (a sub-gate on a skipped judge is dropped, as weights are)."""
    return GATES[gate.kind].impl.runs(gate, active)


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
    custom_code when the function exited, was interrupted or ran out of time (evals_cli/custom_code/)."""

    def __init__(self, message: str, category: ErrorCategory = "grader") -> None:
        super().__init__(message)
        self.category = category


_REWARD_INPUT: contextvars.ContextVar[Callable[[dict[str, Grade]], object] | None] = contextvars.ContextVar(
    "evals_reward_input", default=None)
"""What a custom reward is called with (a `RewardContext` of the grades, the trajectory and the sample), built by
Gate.judge_sample for its own call: a context variable, since samples' verdicts are decided in threads of their
own (Gate.ajudge_sample), and a builder, so the kinds never need the sample's model."""

RewardLoader = Callable[[str], Callable[[Any], Any]]
"""Finds a custom reward function by its reference ('path/to/file.py:function') and checks its signature
(ValueError saying what is wrong). Handed to the gate by whoever builds it and knows the suite's folder
(runner/prepare.py binds graders/functions.py `load_reward` to it): the gate decides, it loads no code."""

_REWARD_FAILED: contextvars.ContextVar[str | None] = contextvars.ContextVar("evals_reward_failed", default=None)
"""Why the custom reward has no score for this sample without calling it again (it ran out of time)."""


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

    def __init__(self, spec: CustomRewardGate, active: list[str], fn: Callable[[Any], Any] | None) -> None:
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
        build = _REWARD_INPUT.get()
        if build is None:
            raise RewardError(f"custom reward {self.spec.function} was called outside Gate.judge_sample")
        try:
            value = custom_code.run_guarded(self.fn, build(dict(grades)), where=f"custom reward {self.spec.function}")
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
