"""Specs of graders that compare the extracted text with the ground truth."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evals_cli.models.grader_specs.base import GraderBase


class ToolGraderSpec(GraderBase):
    """A deterministic function of the extracted submission and the ground truth."""

    kind: Literal["tool"] = "tool"
    function: str = Field(
        description="contains, exact_match, regex_match, or a custom grader 'path/to/file.py:func'."
    )
    case_sensitive: bool | None = Field(
        default=None,
        description="Default: contains and regex_match ignore case, exact_match does not.",
    )
