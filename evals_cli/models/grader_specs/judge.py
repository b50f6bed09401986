"""Spec of the LLM judge grader."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from evals_cli.models.grader_specs.base import GraderBase


class ModelJudgeSpec(GraderBase):
    """An LLM grades the submission with a Jinja2 rubric."""

    kind: Literal["model_judge"] = "model_judge"
    rubric: str | None = Field(default=None, description="Rubric file (Jinja2), relative to the suite.")
    prompt: str | None = Field(default=None, description="Inline rubric text (Jinja2), instead of a file.")
    scale: Literal["1-10", "0-1"] = Field(
        default="1-10", description="Score scale asked of the judge; normalised to [0, 1]."
    )
    base_url: str | None = Field(default=None, description="Judge endpoint; default the suite's judge block.")
    api_key: str | None = Field(default=None, description="Judge key; default the suite's judge block.")
    model: str | None = Field(default=None, description="Judge model; default the suite's judge block.")
    temperature: float | None = Field(default=None, ge=0, le=2, description="Default 0.")
    max_tokens: int | None = Field(default=None, ge=1, description="Judge completion cap.")

    @model_validator(mode="after")
    def _one_rubric(self) -> ModelJudgeSpec:
        if (self.rubric is None) == (self.prompt is None):
            raise ValueError("give exactly one of 'rubric' (a file) or 'prompt' (inline text)")
        return self
