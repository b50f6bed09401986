"""The parts of suite.yaml that are pure data, as strict pydantic models (unknown keys are errors): the judge
block, the gate kinds, prices, and the checks that span sections (`cross_check_raw`).

`SuiteSpec`, the whole document, is composed one layer up (evals_cli/suite/spec.py), because its grader and
target unions are built from the kinds that register themselves, and models never import graders or targets.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    Discriminator,
    Field,
    GetCoreSchemaHandler,
    Tag,
    TypeAdapter,
    field_validator,
    model_validator,
)

from evals_cli.custom_code import is_module_ref
from evals_cli.models.base import StrictModel
from evals_cli.models.target_specs import EndpointSpec, kind_or

Aggregation = Literal[
    "avg_score", "accuracy", "min", "max", "median", "p50", "p95", "p99", "pass_at_k", "pass_hat_k", "pass_rate"
]
Op = Literal["gt", "gte", "lt", "lte", "eq"]
LogicalOp = Literal["and", "or"]


class JudgeSpec(EndpointSpec):
    """Default endpoint and model for model_judge graders."""

    temperature: float | None = Field(default=0.0, ge=0, le=2, description="Judge sampling temperature.")

    takes_models: ClassVar[bool] = False  # a judge is one model: `models` here is refused, not ignored


SamplePass = Literal["weighted", "all"]
NotApplicable = Literal["exclude", "pass"]


class _SampleRule(StrictModel):
    """How one sample's verdict is reached, on every gate kind (read from the top-level gate only)."""

    sample_pass: SamplePass = Field(
        default="weighted",
        description="weighted: the gate's per-sample rule on the weighted score, and every required grader at or "
        "above its threshold; all: every grader at or above its threshold (as well as the weighted rule).")
    unknown_tools: Literal["fail", "allow"] = Field(
        default="fail",
        description="fail: a call to a tool the agent was never offered fails the sample; allow: only recorded.")
    not_applicable: NotApplicable = Field(
        default="exclude",
        description="exclude: a grade with nothing to check (n/a) is left out of every average, accuracy and "
        "percentile, and of the sample's weighted score (its weights renormalise over the graders that applied); "
        "pass: n/a counts as 1.0 everywhere (the first-principles harness's convention).")
    reducer: str | None = Field(
        default=None, json_schema_extra={"examples": ["mean", "median", "mode", "max", "at_least_2"]},
        description="With repeats > 1, how a sample's repeats become one sample before the gate (inspect_ai's "
        "epoch reducers): mean, median, mode or max of each grader's scores over the sample's graded repeats, "
        "the sample then judged once on those; at_least_N: the sample passes when at least N of its repeats "
        "passed. An errored repeat is never a zero. Default (unset): every repeat counts as a sample run of "
        "its own in the aggregates and pass_rate.")

    @field_validator("reducer")
    @classmethod
    def _known_reducer(cls, value: str | None) -> str | None:
        if value is not None and not is_reducer(value):
            raise ValueError(f"unknown reducer '{value}'; use mean, median, mode, max or at_least_N (N >= 1, e.g. "
                             "at_least_2: the sample passes when at least 2 of its repeats passed)")
        return value

    @model_validator(mode="after")
    def _reducer_has_scores(self) -> _SampleRule:
        """A custom reward scores each repeat with the suite's function, on that repeat's trajectory: there are no
        grader scores to reduce it from, and calling the function again on reduced grades would score a run that
        never happened."""
        if self.reducer is not None and _holds_custom(self):
            raise ValueError(f"reducer: '{self.reducer}' cannot reduce a custom reward gate (kind: custom, also "
                             "inside a logical gate): its reward is a function of one repeat's trajectory; leave "
                             "reducer out, or gate on pass_at_k / pass_hat_k")
        return self


def _holds_custom(gate: Any) -> bool:
    if isinstance(gate, CustomRewardGate):
        return True
    return isinstance(gate, LogicalGate) and any(_holds_custom(sub) for sub in gate.gates)


def is_reducer(value: str) -> bool:
    """mean, median, mode, max, or at_least_N with N >= 1."""
    n = value.removeprefix("at_least_")
    return value in REDUCERS or (n != value and n.isdigit() and n.isascii() and int(n) >= 1 and n[0] != "0")


REDUCERS = ("mean", "median", "mode", "max")


class _Thresholds(_SampleRule):
    """The run-level comparison and the per-sample pass rule every scoring gate kind shares."""

    op: Op = Field(default="gte", description="Comparison of the aggregated metric with value.")
    value: float = Field(default=0.7, description="Threshold for the aggregated metric.")
    pass_op: Op | None = Field(default=None, description="Per-sample pass comparison (and accuracy); default op.")
    pass_value: float | None = Field(default=None, description="Per-sample pass threshold (and accuracy); default value.")

    @property
    def sample_op(self) -> Op:
        return self.pass_op or self.op

    @property
    def sample_value(self) -> float:
        return self.value if self.pass_value is None else self.pass_value


class WeightedAverageGate(_Thresholds):
    """The weighted mean, over graders, of each grader's aggregated score, compared with value."""

    kind: Literal["weighted_average"] = "weighted_average"
    weights: dict[str, float] | None = Field(
        default=None, description="Grader name -> weight; default every grader weighs 1."
    )
    aggregation: Aggregation = Field(default="avg_score", description="How each grader's sample scores are aggregated.")

    @field_validator("weights")
    @classmethod
    def _positive(cls, weights: dict[str, float] | None) -> dict[str, float] | None:
        if weights is not None:
            bad = [k for k, w in weights.items() if w < 0]
            if bad:
                raise ValueError(f"weights must be >= 0 (negative: {', '.join(bad)})")
            if weights and sum(weights.values()) == 0:
                raise ValueError("weights add up to 0")
        return weights


class SimpleGate(_Thresholds):
    """One grader's aggregated score compared with value; a sample passes on that grader's score alone."""

    kind: Literal["simple"] = "simple"
    metric_key: str = Field(description="The grader whose scores are aggregated.")
    aggregation: Aggregation = Field(default="avg_score", description="How the grader's sample scores are aggregated.")


class CustomRewardGate(_Thresholds):
    """A Python function of a sample's grades gives its reward (letta-evals' custom reward composer); a
    sample passes when its reward meets the per-sample rule (pass_op/pass_value, default op/value), and the run
    when the share of samples that passed meets op/value. A function that raises or returns no number in
    [0, 1] leaves that sample without a verdict (an error), never a zero."""

    kind: Literal["custom"] = "custom"
    function: str = Field(description="'path/to/file.py:function' relative to the suite: (ctx) -> a number in "
                          "[0, 1], where ctx.grades maps each grader to its grade (.score, .rationale).")
    aggregation: Literal["pass_rate"] = Field(
        default="pass_rate", description="pass_rate: the share of samples whose reward passed (the only one: "
        "rewards are per sample, not per grader).")

    @field_validator("function")
    @classmethod
    def _file_and_name(cls, value: str) -> str:
        file_part, sep, name = value.rpartition(":")
        if (not sep or not file_part.endswith(".py") or not name.isidentifier()) and not is_module_ref(value):
            raise ValueError(f"'{value}' is not 'path/to/file.py:function' (a .py file relative to the suite, and "
                             "the function's name) nor 'package.module:function' (an installed module)")
        return value


class LogicalGate(_SampleRule):
    """Several gates joined by and/or; a sample passes when its sub-gates' sample verdicts do."""

    kind: Literal["logical"] = "logical"
    operator: LogicalOp = Field(description="and: every sub-gate must pass; or: at least one.")
    gates: list[GateField] = Field(min_length=1, description="The sub-gates: simple, weighted_average, logical or "
                                   "custom.")

    @property
    def sample_op(self) -> Op:
        """The first sub-gate's per-sample comparison, for callers that need one per-sample rule."""
        return self.gates[0].sample_op

    @property
    def sample_value(self) -> float:
        """The first sub-gate's per-sample threshold, for callers that need one per-sample rule."""
        return self.gates[0].sample_value


GateField = Annotated[
    Annotated[WeightedAverageGate, Tag("weighted_average")]
    | Annotated[SimpleGate, Tag("simple")]
    | Annotated[LogicalGate, Tag("logical")]
    | Annotated[CustomRewardGate, Tag("custom")],
    Discriminator(kind_or("weighted_average")),
]
LogicalGate.model_rebuild()
AnyGate = WeightedAverageGate | SimpleGate | LogicalGate | CustomRewardGate
GATE_KINDS: dict[str, type[StrictModel]] = {"weighted_average": WeightedAverageGate, "simple": SimpleGate,
                                            "logical": LogicalGate, "custom": CustomRewardGate}
_GATE_ADAPTER: TypeAdapter[AnyGate] = TypeAdapter(GateField)


class _GateSpecType(type):
    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, tuple(GATE_KINDS.values()))


class GateSpec(metaclass=_GateSpecType):
    """The pass/fail decision: one of GATE_KINDS, chosen by `kind` (default weighted_average).

    A callable stand-in for the union, so callers written before gate kinds existed keep working:
    `GateSpec(weights=...)` and `GateSpec.model_validate(data)` build the right kind, and
    `isinstance(x, GateSpec)` holds for every kind.
    """

    def __new__(cls, **data: Any) -> AnyGate:  # type: ignore[misc]
        return _GATE_ADAPTER.validate_python(data)

    @classmethod
    def model_validate(cls, data: Any) -> AnyGate:
        return _GATE_ADAPTER.validate_python(data)

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> Any:
        return handler.generate_schema(GateField)


class Price(StrictModel):
    """Price per million tokens."""

    input: float = Field(ge=0, description="Per million prompt tokens.")
    output: float = Field(ge=0, description="Per million completion tokens.")


def cross_check_raw(data: dict[str, Any]) -> list[tuple[tuple[str, ...], str]]:
    """Checks that span sections, run on the raw YAML too so they show even when other fields are invalid:
    every grader a gate names (weights, metric_key, in nested gates too) must exist."""
    gate, graders = data.get("gate"), data.get("graders")
    if not isinstance(gate, dict) or not isinstance(graders, dict):
        return []
    return _check_gate_names(gate, ("gate",), [str(g) for g in graders])


def _check_gate_names(gate: dict[str, Any], path: tuple[Any, ...], graders: list[str]) -> list[tuple[Any, str]]:
    problems: list[tuple[Any, str]] = []
    weights, key, subs = gate.get("weights"), gate.get("metric_key"), gate.get("gates")
    if isinstance(weights, dict):
        unknown = [g for g in weights if g not in graders]
        if unknown:
            hints = ", ".join(_named(u, graders) for u in unknown)
            problems.append(((*path, "weights"), f"names unknown grader(s) {hints}; graders are: {', '.join(graders)}"))
    if isinstance(key, str) and key not in graders:
        problems.append(((*path, "metric_key"), f"names unknown grader {_named(key, graders)}; "
                                                f"graders are: {', '.join(graders)}"))
    if isinstance(subs, list):
        for i, sub in enumerate(subs):
            if isinstance(sub, dict):
                problems.extend(_check_gate_names(sub, (*path, "gates", i), graders))
                for key, default in (("sample_pass", "weighted"), ("unknown_tools", "fail"),
                                     ("not_applicable", "exclude"), ("reducer", None)):
                    if sub.get(key, default) != default:
                        problems.append(((*path, "gates", i, key), f"{key} is read from the top-level gate only; "
                                                                   "set it there"))
    return problems


def _named(name: Any, graders: list[str]) -> str:
    import difflib

    match = difflib.get_close_matches(str(name), graders, n=1)
    return f"'{name}' (did you mean '{match[0]}'?)" if match else f"'{name}'"
