"""One dataset row, as every later stage sees it."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from evals_cli.models.base import StrictModel
from evals_cli.models.tools import NO_RESULT, ToolSpec, tool_name_problem


class Message(StrictModel):
    """A pre-filled chat message (mid-conversation samples)."""

    role: Literal["system", "user", "assistant", "tool"] = Field(
        description="system, user, assistant or tool (the roles every OpenAI-compatible endpoint accepts).")
    content: str | None = Field(default=None, description="Message text.")
    tool_calls: list[dict[str, Any]] | None = Field(default=None, description="Assistant tool calls, OpenAI shape.")
    tool_call_id: str | None = Field(default=None, description="For role tool: the call it answers.")
    name: str | None = Field(default=None, description="Optional author name.")


class Sample(StrictModel):
    """One evaluation case. `input`/`ground_truth` lists of equal length switch on per-turn grading."""

    id: str | None = Field(default=None, description="Stable sample id; defaults to 'line-N'.")
    input: str | list[str] | None = Field(
        default=None, description="The user message, or a list of user messages sent in turn."
    )
    ground_truth: str | list[str] | None = Field(
        default=None,
        description="Expected answer. A list the same length as a list input means per-turn grading; "
        "otherwise a list holds acceptable alternatives.",
    )
    messages: list[Message] | None = Field(
        default=None, description="A pre-filled conversation the agent continues (mid-conversation case)."
    )
    expected_tool_order: list[str] | None = Field(default=None, description="Tools expected, in order.")
    forbidden_tools: list[str] | None = Field(default=None, description="Tools the agent must not call.")
    tools: dict[str, ToolSpec] | None = Field(
        default=None, description="Per-sample mocked tools: replace or add to the suite's tools by name."
    )
    tags: list[str] = Field(default_factory=list, description="Free labels, used by sample_tags filtering.")
    rubric_vars: dict[str, Any] = Field(default_factory=dict, description="Extra variables for judge rubrics.")
    agent_args: dict[str, Any] | None = Field(
        default=None,
        description="letta-evals' per-sample agent creation arguments: accepted and carried, so letta datasets "
        "load as they are; an OpenAI-compatible target has no agent to create and does not read them.",
    )
    rubric: str | None = Field(
        default=None, description="This sample's own judge rubric: inline text, builtin:NAME, or a file "
        "relative to the suite (ends in .j2, .jinja, .txt or .md)."
    )
    max_steps: int | None = Field(default=None, ge=1, description="Override of the target's loop bound.")
    category: str | None = Field(default=None, description="Free category label.")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Anything else; carried into results.")

    @field_validator("tools")
    @classmethod
    def _tools_answer(cls, tools: dict[str, ToolSpec] | None) -> dict[str, ToolSpec] | None:
        """A row's tool replaces the suite's of that name whole, so it must say what it answers itself."""
        for name in tools or {}:
            problem = tool_name_problem(name)
            if problem is not None:
                raise ValueError(problem)
        silent = [name for name, spec in (tools or {}).items() if not spec.has_result()]
        if silent:
            raise ValueError(f"tool {', '.join(repr(n) for n in silent)} {NO_RESULT}")
        return tools

    @model_validator(mode="after")
    def _check_shape(self) -> Sample:
        if self.input is None and not self.messages:
            raise ValueError("a sample needs 'input' (or pre-filled 'messages' ending with a user message)")
        if self.input is None and self.messages and self.messages[-1].role != "user":
            raise ValueError("without 'input', the pre-filled 'messages' must end with a user message")
        if isinstance(self.input, list):
            if not self.input:
                raise ValueError("'input' is an empty list")
            if isinstance(self.ground_truth, list) and len(self.ground_truth) != len(self.input):
                raise ValueError(
                    f"per-turn sample: 'input' has {len(self.input)} messages but 'ground_truth' has "
                    f"{len(self.ground_truth)}; give one ground truth per user message, or a single string "
                    "to grade only the final answer"
                )
        return self

    @property
    def user_turns(self) -> list[str]:
        """The user messages to send, in order (empty when the pre-filled messages end with the user)."""
        if self.input is None:
            return []
        return [self.input] if isinstance(self.input, str) else list(self.input)

    @property
    def per_turn(self) -> bool:
        """True when every user turn has its own ground truth."""
        return (
            isinstance(self.input, list)
            and isinstance(self.ground_truth, list)
            and len(self.input) == len(self.ground_truth)
        )

    def ground_truth_for(self, turn: int | None) -> str | list[str] | None:
        """The ground truth to grade a turn (or, with None, the whole sample) against."""
        if turn is not None and self.per_turn:
            assert isinstance(self.ground_truth, list)
            return self.ground_truth[turn]
        if self.per_turn:
            assert isinstance(self.ground_truth, list)
            return self.ground_truth[-1]
        return self.ground_truth

    def input_text(self) -> str:
        """The user side as one string, for tables and rubrics."""
        if self.input is None:
            last = self.messages[-1] if self.messages else None
            return (last.content or "") if last else ""
        return self.input if isinstance(self.input, str) else "\n".join(self.input)
