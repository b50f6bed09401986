"""Specs of graders that read the tool calls of a trajectory (and, for grounding, the answer against them).

Every grader here is deterministic: no model is called, so they run under `--no-judge` and in CI for free.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from evals_cli import safe_regex
from evals_cli.models.base import StrictModel
from evals_cli.models.grader_specs.base import GraderBase

ScoreMode = Literal["binary", "fraction"]
ToolOrderMode = Literal["strict", "subsequence", "unordered", "subset", "superset"]
StopCheck = Literal["premature_stop", "no_stop", "max_steps"]
ViolationKind = Literal[
    "unauthorized_tool", "malformed_arguments", "hallucinated_parameter", "missing_required", "type_mismatch",
    "invalid_value",
]
STOP_CHECKS: tuple[StopCheck, ...] = ("premature_stop", "no_stop", "max_steps")


class ToolOrderSpec(GraderBase):
    """The tools called, against the expected ones (tool-name globs, fnmatch, case-sensitive).

    Calls made in one model step (parallel calls) form an unordered group in `strict` and `subsequence` modes.
    """

    kind: Literal["tool_order"] = "tool_order"
    expected: list[str] | None = Field(default=None, description="Expected tools; default the sample's expected_tool_order.")
    mode: ToolOrderMode = Field(
        default="subsequence",
        description="strict: exactly this sequence; subsequence: in this order, extra calls allowed; "
        "unordered: the same multiset, any order; subset: every expected call appears; "
        "superset: no call outside the expected tools.",
    )
    score: ScoreMode = Field(
        default="binary",
        description="binary: 1 or 0. fraction: subsequence in-order prefix matched/expected; "
        "strict LCS/max(expected, calls); unordered matched/max(expected, calls); subset matched/expected; "
        "superset calls inside/calls.",
    )


class ToolsAvoidedSpec(GraderBase):
    """No forbidden tool was called."""

    kind: Literal["tools_avoided"] = "tools_avoided"
    required_by_default: ClassVar[bool] = True  # forbidden means forbidden: a call fails the sample
    # and whatever the gate's pass value (even 0 for a report-only gate), a forbidden call's 0 is under it
    threshold_by_default: ClassVar[float | None] = 1.0
    tools: list[str] = Field(default_factory=list, description="Forbidden tools (globs), added to the sample's.")


_COMPARISONS = ("exact", "regex", "contains", "one_of")


class ArgMatch(StrictModel):
    """How one argument is compared. A comparison (exact, regex, contains, one_of, ignore) plus modifiers
    (tolerance, subset, case_insensitive). Without a comparison, the expected value from `args` is compared
    exactly; without one either, the argument only has to be present."""

    exact: Any = Field(default=None, description="Expected value (JSON equality; true is not 1).")
    ignore: bool | None = Field(default=None, description="Any value, or none at all.")
    regex: str | None = Field(default=None, description="re.search on the value (as text); anchor with ^ and $.")
    contains: Any = Field(default=None, description="Substring of a string value, or an element of a list value.")
    one_of: list[Any] | None = Field(default=None, description="Equal to one of these values.")
    tolerance: float | None = Field(default=None, ge=0, description="Numbers may differ by up to this much.")
    subset: bool | None = Field(default=None, description="The expected object/list need only be contained in the value.")
    case_insensitive: bool | None = Field(default=None, description="Strings compare ignoring case (casefold).")

    @model_validator(mode="after")
    def _one_comparison(self) -> ArgMatch:
        given = self._comparisons()
        if len(given) > 1:
            raise ValueError(f"give one comparison per argument (got {', '.join(given)})")
        if self.regex is not None:
            try:  # the engine and the size check the grader runs with (safe_regex), so validate agrees with run
                safe_regex.compile(self.regex, safe_regex.IGNORECASE if self.case_insensitive else 0)
            except safe_regex.RegexError as exc:
                raise ValueError(f"regex {self.regex!r} is not valid: {exc}") from None
        return self

    def _comparisons(self) -> list[str]:
        given = ["exact"] if "exact" in self.model_fields_set else []  # `exact: null` expects null
        given += [n for n in _COMPARISONS[1:] if getattr(self, n) is not None]
        return given + (["ignore"] if self.ignore else [])

    @property
    def comparison(self) -> str | None:
        """The comparison this matcher sets itself, if any."""
        given = self._comparisons()
        return given[0] if given else None


class ExpectedCall(StrictModel):
    """One call the agent should make, matched against any one call of the trajectory."""

    tool: str = Field(description="Tool name (glob allowed).")
    args: dict[str, Any] = Field(default_factory=dict, description="Expected argument values (compared exactly "
                                                                    "unless `match` or the tool's defaults say otherwise).")
    match: dict[str, ArgMatch] = Field(default_factory=dict, description="Per-argument matchers for this call.")


class ToolArgsSpec(GraderBase):
    """Expected calls with their arguments; score = expected calls matched / expected calls."""

    kind: Literal["tool_args"] = "tool_args"
    calls: list[ExpectedCall] | None = Field(
        default=None, description="Expected calls; default the sample's metadata.expected_calls (same shape)."
    )
    defaults: dict[str, dict[str, ArgMatch]] = Field(
        default_factory=dict,
        description="Tool name (glob) -> argument -> matcher, applied to every expected call of that tool; "
        "a call's own `match` overrides it.",
    )
    allow_extra_args: bool = Field(default=True, description="Arguments the expectation does not name are allowed.")
    score: ScoreMode = Field(default="fraction", description="fraction: matched/expected; binary: all or nothing.")


class NoLoopsSpec(GraderBase):
    """No identical call (same tool, same canonical arguments) repeated too often, and no A-B-A-B cycles."""

    kind: Literal["no_loops"] = "no_loops"
    max_repeats: int = Field(default=2, ge=1, description="Times one identical call may be made in total.")
    max_consecutive: int = Field(default=1, ge=1, description="Times one identical call may be made in a row.")
    min_cycle_repeats: int = Field(default=2, ge=2, description="Repetitions in a row that make a block a cycle.")
    max_cycle_length: int = Field(default=3, ge=0, description="Longest block checked for cycles; below 2 turns cycles off.")
    ignore: list[str] = Field(default_factory=list, description="Tools (globs) never counted, e.g. polling tools.")


class StopBehaviorSpec(GraderBase):
    """Did the agent stop at the right time? One score per check in metadata.checks."""

    kind: Literal["stop_behavior"] = "stop_behavior"
    checks: list[StopCheck] = Field(default_factory=lambda: list(STOP_CHECKS), min_length=1,
                                    description="premature_stop, no_stop, max_steps.")
    required_tools: list[str] | None = Field(
        default=None, description="Required tools (globs); default expected_tool_order. Also accepted as "
        "`required: [..]` (a list), as before `required: true|false` became every grader's option.")
    mutating: list[str] = Field(default_factory=list, description="Tools (globs) that must never run after the "
                                                                  "required calls are complete.")
    max_extra_calls: int = Field(default=0, ge=0, description="Tool calls allowed after the required calls are complete.")
    combine: Literal["min", "mean"] = Field(default="min", description="How the checks' scores make the grade.")

    @model_validator(mode="before")
    @classmethod
    def _required_list(cls, data: Any) -> Any:
        """`required: [globs]` (a list) keeps its old meaning, the required tools; a bool is the gate option."""
        if isinstance(data, dict) and isinstance(data.get("required"), list):
            data = dict(data)
            if "required_tools" in data:
                raise ValueError("give required_tools, not both required: [..] and required_tools")
            data["required_tools"] = data.pop("required")
        return data

    @field_validator("checks")
    @classmethod
    def _unique(cls, checks: list[StopCheck]) -> list[StopCheck]:
        return list(dict.fromkeys(checks))


class ToolSchemaSpec(GraderBase):
    """Every call against the tools the agent was offered; score = 1 - violating calls / calls."""

    kind: Literal["tool_schema"] = "tool_schema"
    ignore: list[ViolationKind] = Field(default_factory=list, description="Violation kinds not counted.")
    score: ScoreMode = Field(default="fraction", description="fraction: 1 - violating/calls; binary: 0 on any.")


class GroundingSpec(GraderBase):
    """Values that must come from tool results appear in the answer; listed misreadings do not."""

    kind: Literal["grounding"] = "grounding"
    must_cite: list[str] = Field(default_factory=list, description="Values the answer must contain; the sample's "
                                                                   "metadata.must_cite are added.")
    must_not_say: list[str] = Field(default_factory=list, description="Misreadings the answer must not contain; the "
                                                                      "sample's metadata.must_not_say are added.")
    case_sensitive: bool = Field(default=False, description="Compare case-sensitively (default: ignore case).")
    whole_word: bool = Field(default=True, description="A value must not be glued to letters or digits ('5432' is "
                                                       "not in '15432').")
    require_source: bool = Field(default=True, description="A cited value must also appear in a tool result.")
    score: ScoreMode = Field(default="binary", description="binary: all or nothing; fraction: items right / items.")
