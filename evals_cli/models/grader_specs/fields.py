"""Field types that several grader kinds' specs share: how a score is reported, and the expected-call shapes
(`ArgMatch`, `ExpectedCall`) that the tool_args spec, its argument matcher (graders/arg_match.py) and a
sample's `metadata.expected_calls` all read. Each kind's own spec lives with its implementation in
`evals_cli.graders.kinds`; what is here is pure data, so any of them can use it."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from evals_cli import regex_patterns
from evals_cli.models.base import StrictModel

ScoreMode = Literal["binary", "fraction"]
CallActor = Literal["agent", "user", "any"]
"""Whose tool calls a trajectory grader reads: the agent's (default), the simulated user's own (dual control), or
both in the order made."""
ACTOR_DESCRIPTION = ("Whose tool calls to check: agent (default), user (a simulated user's own tools, dual "
                     "control) or any (both, in the order made).")


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
                regex_patterns.compile(self.regex, regex_patterns.IGNORECASE if self.case_insensitive else 0)
            except regex_patterns.RegexError as exc:
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
