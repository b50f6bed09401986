"""The target kinds beyond openai_chat (the Responses API loop, the user's own Python agent) and the union of
every kind that `SuiteSpec.target` takes, chosen by `kind:` (openai_chat when it is missing).

Apart from specs.py so the kinds can grow without touching the suite model; specs.py keeps OpenAIChatTarget
and EndpointSpec, which these build on (so specs.py imports this union last, after defining them), and
recorded_sessions comes from its own leaf module.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Annotated, Literal

from pydantic import BaseModel, Discriminator, Field, Tag, field_validator, model_validator

from evals_cli.models.base import StrictModel
from evals_cli.models.specs import EndpointSpec, OpenAIChatTarget, kind_or
from evals_cli.sessions.spec import RecordedSessionsTarget


class _AgentPrompt(StrictModel):
    """What every target kind gives its agent besides the tools: a system prompt, and a bound on a sample."""

    system_prompt: str | None = Field(default=None, description="System prompt text.")
    system_prompt_file: str | None = Field(default=None, description="System prompt file, relative to the suite.")
    sample_timeout: float | None = Field(
        default=None, gt=0, description="Seconds one sample may take in all (its model calls and retries)."
    )

    @model_validator(mode="after")
    def _one_prompt(self) -> _AgentPrompt:
        if self.system_prompt is not None and self.system_prompt_file is not None:
            raise ValueError("give system_prompt or system_prompt_file, not both")
        return self


class OpenAIResponsesTarget(_AgentPrompt, EndpointSpec):
    """The agent loop over the Responses API (POST /v1/responses) with mocked tools: the system prompt goes in
    `instructions`, the conversation in `input` items, tool results back as function_call_output items."""

    kind: Literal["openai_responses"] = "openai_responses"
    max_tokens: int | None = Field(default=1024, ge=1, description="Output token cap per call, sent as "
                                   "max_output_tokens (default 1024; null sends none).")
    max_steps: int = Field(default=20, ge=1, description="Model calls allowed per user turn before the loop stops.")
    tool_choice: Literal["auto", "required", "none"] = Field(default="auto", description="Sent as tool_choice.")
    parallel_tool_calls: bool | None = Field(default=None, description="Sent as parallel_tool_calls when set.")
    strict_tools: bool | None = Field(
        default=None, description="Sent as each function tool's strict when set; left out otherwise, so the "
        "server's default applies (set false when strict schema checking rejects the mocked tools' schemas)."
    )
    store: bool | None = Field(
        default=None, description="Sent as store when set; OpenAI keeps responses unless it is false. The loop "
        "always sends the whole conversation, so nothing needs storing."
    )


class PythonTarget(_AgentPrompt):
    """Your own agent as a Python function `(sample, tools)`, async or sync, called once per sample with the
    mocked tools; it returns the final answer. The file runs as code: only the path the suite names is loaded."""

    kind: Literal["python"] = "python"
    callable: str = Field(
        description="path/to/agent.py:function, the path relative to the suite file. The function takes "
        "(sample, tools) and returns the final answer text (a list of texts, one per user message, for per-turn "
        "samples); a sync function runs in a thread of its own."
    )
    system_prompt: str | None = Field(default=None, description="Given to the agent as tools.system_prompt.")
    system_prompt_file: str | None = Field(
        default=None, description="File read into tools.system_prompt, relative to the suite."
    )
    sample_timeout: float | None = Field(default=None, gt=0, description="Seconds the agent may take per sample.")
    max_steps: int = Field(
        default=20, ge=1, description="Tool calls allowed per user turn (each call is one step); the call past it "
        "raises StepLimitReached in the agent and the sample stops with stop_reason max_steps."
    )

    @field_validator("callable")
    @classmethod
    def _file_and_function(cls, value: str) -> str:
        file_part, sep, function = value.rpartition(":")
        if not sep or not file_part or not function.isidentifier():
            raise ValueError(f"expected path/to/agent.py:function, got {value!r}")
        if PurePath(file_part).suffix != ".py":
            raise ValueError(f"expected a .py file before ':function', got {file_part!r}")
        return value


TargetSpec = Annotated[
    Annotated[OpenAIChatTarget, Tag("openai_chat")]
    | Annotated[OpenAIResponsesTarget, Tag("openai_responses")]
    | Annotated[PythonTarget, Tag("python")]
    | Annotated[RecordedSessionsTarget, Tag("recorded_sessions")],
    Discriminator(kind_or("openai_chat")),
]
AnyTarget = OpenAIChatTarget | OpenAIResponsesTarget | PythonTarget | RecordedSessionsTarget
TARGET_SPECS: dict[str, type[BaseModel]] = {"openai_chat": OpenAIChatTarget, "openai_responses": OpenAIResponsesTarget,
                                            "python": PythonTarget, "recorded_sessions": RecordedSessionsTarget}
