"""Options every grader spec has."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, ClassVar, Literal

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
        "(default: true for tools_avoided and for graders with scope: reply, false for the others).")
    scope: Literal["conversation", "reply"] = Field(
        default="conversation",
        description="conversation: grade the whole trajectory (per user turn on per-turn samples). reply: grade "
        "each agent reply (each turn of a multi-turn, scripted or simulated conversation) on its own; `threshold` "
        "is then each reply's pass mark, the grade's score is the share of replies that passed, and the grade "
        "passes when that share reaches `min_share`.")
    min_share: float | None = Field(
        default=None, ge=0, le=1,
        description="With scope: reply, the share of the agent's replies that must pass (default 1: every reply); "
        "this grader's pass mark.")

    if TYPE_CHECKING:
        # every kind's spec declares `kind: Literal["<kind>"]`; the base is no kind, so it has no such field at
        # run time, but code reading a suite's graders (typed as this base) may rely on one being there
        kind: str

    required_by_default: ClassVar[bool] = False
    # the kind's own pass mark when the suite sets none (None: the gate's per-sample pass value)
    threshold_by_default: ClassVar[float | None] = None

    @field_validator("threshold", "min_share")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value

    @property
    def is_required(self) -> bool:
        """`required` as set, else this kind's default (forbidden tools are forbidden: tools_avoided). A grader
        with scope: reply is required by default: `min_share: 1` says every reply must pass, and a sample whose
        replies fall short fails whatever its weighted score (set required: false to let it only weigh in)."""
        if self.required is not None:
            return self.required
        return self.required_by_default or self.scope == "reply"

    @property
    def share_needed(self) -> float:
        """scope: reply: the share of replies that must pass (`min_share`, default 1)."""
        return 1.0 if self.min_share is None else self.min_share

    @model_validator(mode="after")
    def _check_extractor(self) -> GraderBase:
        check_extractor(self.extractor, self.extractor_config)
        if self.min_share is not None and self.scope != "reply":
            raise ValueError("min_share is the share of agent replies that must pass: it needs scope: reply")
        return self
