"""Options every grader spec has."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field, field_validator, model_validator

from evals_cli.models.base import StrictModel
from evals_cli.models.grader_specs.extractors import check_extractor


class GraderBase(StrictModel):
    """Options every grader has."""

    description: str | None = Field(default=None, description="Shown in `evals list` and reports.")
    extractor: str = Field(default="last_assistant", description="What part of the trajectory is graded: a "
                           "built-in extractor, or 'path/to/file.py:func' (a custom one, (trajectory, config) -> "
                           "str).")
    extractor_config: dict[str, Any] = Field(default_factory=dict, description="Options for the extractor.")
    threshold: float | None = Field(
        default=None, ge=0, le=1,
        description="This grader's pass mark (score >= threshold); default the gate's per-sample pass value "
        "(tools_avoided: 1, whatever the gate says). "
        "Decides `required` graders, `sample_pass: all`, and which turns of a per-turn sample passed.")
    required: bool | None = Field(
        default=None,
        description="A sample fails when this grader is under its threshold, whatever its weighted score "
        "(default: true for tools_avoided, false for the others).")

    if TYPE_CHECKING:
        # every kind's spec declares `kind: Literal["<kind>"]`; the base is no kind, so it has no such field at
        # run time, but code reading a suite's graders (typed as this base) may rely on one being there
        kind: str

    required_by_default: ClassVar[bool] = False
    # the kind's own pass mark when the suite sets none (None: the gate's per-sample pass value)
    threshold_by_default: ClassVar[float | None] = None

    @field_validator("threshold")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("threshold must be a finite number")
        return value

    @property
    def is_required(self) -> bool:
        """`required` as set, else this kind's default (forbidden tools are forbidden: tools_avoided)."""
        return self.required_by_default if self.required is None else self.required

    @model_validator(mode="after")
    def _check_extractor(self) -> GraderBase:
        check_extractor(self.extractor, self.extractor_config)
        return self
