"""Options every grader spec has."""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from evals_cli.models.base import StrictModel


class GraderBase(StrictModel):
    """Options every grader has."""

    description: str | None = Field(default=None, description="Shown in `evals list` and reports.")
    extractor: str = Field(default="last_assistant", description="What part of the trajectory is graded.")
    extractor_config: dict[str, Any] = Field(default_factory=dict, description="Options for the extractor.")

    @model_validator(mode="after")
    def _check_extractor(self) -> GraderBase:
        from evals_cli.graders.extractors import check_extractor

        check_extractor(self.extractor, self.extractor_config)
        return self
