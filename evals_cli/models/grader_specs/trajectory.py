"""Specs of graders that read the tool calls of a trajectory."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evals_cli.models.grader_specs.base import GraderBase


class ToolOrderSpec(GraderBase):
    """The tools called, against the expected order."""

    kind: Literal["tool_order"] = "tool_order"
    expected: list[str] | None = Field(default=None, description="Expected tools; default the sample's expected_tool_order.")
    mode: Literal["subsequence"] = Field(default="subsequence", description="In order, extra calls allowed.")
    score: Literal["binary", "fraction"] = Field(
        default="binary", description="binary: 1 if all matched; fraction: matched prefix / expected."
    )


class ToolsAvoidedSpec(GraderBase):
    """No forbidden tool was called."""

    kind: Literal["tools_avoided"] = "tools_avoided"
    tools: list[str] = Field(default_factory=list, description="Forbidden tools (globs), added to the sample's.")
