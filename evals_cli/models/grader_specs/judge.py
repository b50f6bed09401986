"""The labelled choices of a judge's scale (`Choice`): read by the model_judge spec (graders/kinds/model_judge.py),
by the runtime `graders.scales.Scale` and by the sessions' judge metrics, so it is pure data shared by all three."""

from __future__ import annotations

from pydantic import Field

from evals_cli.models.base import StrictModel


class Choice(StrictModel):
    """One labelled answer of a choice scale, and the score it stands for."""

    label: str = Field(min_length=1, description="What the judge answers, e.g. 'correct'.")
    score: float = Field(ge=0, le=1, description="The score in [0, 1] this label means.")
    description: str | None = Field(default=None, description="When to pick it (shown to the judge).")
