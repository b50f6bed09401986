"""Spec of the LLM judge grader, with the labelled choices of its scale (`Choice`, which the runtime
`graders.scales.Scale` reads)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from evals_cli.models.base import StrictModel
from evals_cli.models.grader_specs.base import GraderBase


class Choice(StrictModel):
    """One labelled answer of a choice scale, and the score it stands for."""

    label: str = Field(min_length=1, description="What the judge answers, e.g. 'correct'.")
    score: float = Field(ge=0, le=1, description="The score in [0, 1] this label means.")
    description: str | None = Field(default=None, description="When to pick it (shown to the judge).")


class PanelJudge(StrictModel):
    """One judge of a panel; unset fields fall back like a single judge's."""

    model: str = Field(description="Judge model.")
    base_url: str | None = Field(default=None, description="Its endpoint (default: the judge endpoint).")
    api_key: str | None = Field(default=None, description="Its key (default: the judge key).")


class ModelJudgeSpec(GraderBase):
    """An LLM grades the submission with a rubric (Jinja2, or letta-style {input}/{submission} placeholders)."""

    kind: Literal["model_judge"] = "model_judge"
    rubric: str | None = Field(
        default=None, description="Rubric file relative to the suite, or builtin:NAME (task_completion, "
        "misread_tool_result, needless_work)."
    )
    prompt: str | None = Field(default=None, description="Inline rubric text, instead of a file.")
    rubric_dirs: list[str] = Field(
        default_factory=list, description="Folders (relative to the suite) a dataset row's `rubric` file may also "
        "come from; by default only files inside the suite's own folder are read.")
    scale: Literal["1-10", "0-1", "pass-fail"] | list[Choice] = Field(
        default="1-10", description="1-10 (score/10), 0-1, pass-fail, or labelled choices with scores."
    )
    samples: int = Field(default=1, ge=1, le=20, description="Ask each judge this many times (use temperature > 0).")
    panel: list[PanelJudge] | None = Field(default=None, min_length=2, description="Several judges asked alike.")
    combine: Literal["mean", "median", "majority"] = Field(default="mean", description="How verdicts become one score.")
    max_spread: float | None = Field(
        default=None, ge=0, le=1, description="Flag the grade unreliable when its verdicts differ by more than this."
    )
    base_url: str | None = Field(default=None, description="Judge endpoint; default the suite's judge block.")
    api_key: str | None = Field(default=None, description="Judge key; default the suite's judge block.")
    model: str | None = Field(default=None, description="Judge model; default the suite's judge block.")
    temperature: float | None = Field(default=None, ge=0, le=2, description="Default 0.")
    max_tokens: int | None = Field(default=1024, ge=1, description="Judge completion cap (default 1024: room for "
                                      "the reason before the score; null sends none).")

    @model_validator(mode="after")
    def _one_rubric(self) -> ModelJudgeSpec:
        if (self.rubric is None) == (self.prompt is None):
            raise ValueError("give exactly one of 'rubric' (a file or builtin:NAME) or 'prompt' (inline text)")
        if isinstance(self.scale, list) and len(self.scale) < 2:
            raise ValueError("a choice scale needs at least two labelled choices")
        return self
