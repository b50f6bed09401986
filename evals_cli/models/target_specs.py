"""What `target:` can say in a suite: one spec model per target kind, and `TargetSpec`, the union of them that
`SuiteSpec.target` takes, chosen by `kind:` (openai_chat when it is missing).

The spec models live here, in the models layer, rather than in their targets' modules because the suite model
(models/specs.py) needs them and the models layer never imports targets (tests/test_layering.py). Each target
module registers its spec with its kind (`TARGETS.register("openai_chat", spec=OpenAIChatTarget)`), and
tests/test_target_registry.py checks that the registry and this union name the same kinds, so a kind cannot be
registered without being accepted by the suite, or accepted without anything to run it.

A leaf of the models layer (pydantic and models/base.py only): models/specs.py imports it, never the reverse.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import PurePath
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, field_validator, model_validator

from evals_cli.models.base import StrictModel


def kind_or(default: str) -> Callable[[Any], str]:
    """A discriminator reading `kind`, with a default for specs that omit it (openai_chat targets, and the
    weighted_average gates of earlier versions)."""

    def kind_of(value: Any) -> str:
        if isinstance(value, dict):
            kind = value.get("kind", default)
            return kind if isinstance(kind, str) else repr(kind)
        return getattr(value, "kind", default)

    return kind_of


class EndpointSpec(StrictModel):
    """Where an OpenAI-compatible model lives. Unset fields fall back to environment variables."""

    base_url: str | None = Field(default=None, description="API base URL, e.g. http://localhost:11434/v1.")
    api_key: str | None = Field(default=None, description="API key; prefer the environment variable.")
    model: str | None = Field(default=None, description="Model name sent with each request.")
    temperature: float | None = Field(default=None, ge=0, le=2, description="Sampling temperature.")
    max_tokens: int | None = Field(default=1024, ge=1, description="Completion token cap per call (default 1024, so "
                                      "a local model cannot ramble to its context's end; null sends none).")
    timeout: float = Field(default=120.0, gt=0, description="Per-request timeout in seconds.")
    max_retries: int = Field(default=2, ge=0, description="Retries on 429, 5xx, timeouts and dropped connections.")
    extra_body: dict[str, Any] = Field(default_factory=dict, description="Extra JSON fields sent with each request.")


class OpenAIChatTarget(EndpointSpec):
    """The agent loop over Chat Completions with mocked tools."""

    kind: Literal["openai_chat"] = "openai_chat"
    system_prompt: str | None = Field(default=None, description="System prompt text.")
    system_prompt_file: str | None = Field(default=None, description="System prompt file, relative to the suite.")
    max_steps: int = Field(default=20, ge=1, description="Model calls allowed per user turn before the loop stops.")
    sample_timeout: float | None = Field(
        default=None, gt=0, description="Seconds one sample may take in all (its model calls and retries)."
    )
    tool_choice: Literal["auto", "required", "none"] = Field(default="auto", description="Sent as tool_choice.")
    parallel_tool_calls: bool | None = Field(default=None, description="Sent as parallel_tool_calls when set.")

    @model_validator(mode="after")
    def _one_prompt(self) -> OpenAIChatTarget:
        if self.system_prompt is not None and self.system_prompt_file is not None:
            raise ValueError("give system_prompt or system_prompt_file, not both")
        return self


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


# A new target kind: its spec class above, one line here, and its module under evals_cli/targets/ registering
# both. recorded_sessions is not a target: such suites are another document kind (evals_cli/sessions/suite.py).
TargetSpec = Annotated[
    Annotated[OpenAIChatTarget, Tag("openai_chat")]
    | Annotated[OpenAIResponsesTarget, Tag("openai_responses")]
    | Annotated[PythonTarget, Tag("python")],
    Discriminator(kind_or("openai_chat")),
]
