"""The parts of `target:` specs that several target kinds share, as pure data: `EndpointSpec` (where an
OpenAI-compatible model lives; the suite's judge block uses it too), `AgentPrompt` (a system prompt and a bound
on a sample), `TargetBase` (the defaults every target kind's spec starts from: what a plug-in's spec
subclasses) and `kind_or`, the discriminator that reads `kind:` with a default (openai_chat for targets,
weighted_average for gates).

Each target kind's own spec lives in its module under `evals_cli.targets`, next to its implementation, and
registers with it (`@TARGETS.register("openai_chat", spec=OpenAIChatTarget)`); the suite's target union is built
from that registry one layer up (evals_cli/suite/spec.py), so nothing here lists the kinds and models never
import targets. A leaf of the models layer (pydantic and models/base.py only).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from pydantic import Field, field_validator, model_validator

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


class ModelEndpoint(StrictModel):
    """One entry of `target.models` with an endpoint of its own, so one run compares a local model with a hosted
    one, or the models of two local servers, without a proxy in front of them. Unset fields are the target's."""

    model: str = Field(description="Model name sent with each request (and the name of its subfolder).")
    base_url: str | None = Field(default=None, description="This model's API base URL (else the target's).")
    api_key: str | None = Field(default=None, description="This model's API key (else the target's, or "
                                "EVAL_AGENT_API_KEY); prefer ${VAR}.")


class EndpointSpec(StrictModel):
    """Where an OpenAI-compatible model lives. Unset fields fall back to environment variables."""

    base_url: str | None = Field(default=None, description="API base URL, e.g. http://localhost:11434/v1.")
    api_key: str | None = Field(default=None, description="API key; prefer the environment variable.")
    model: str | None = Field(default=None, description="Model name sent with each request.")
    models: list[str | ModelEndpoint] | None = Field(
        default=None, description="Several models: the whole suite runs once per model, side by side, each into its "
        "own subfolder of the run folder (instead of model; --model on the command line replaces the list). An "
        "entry is a name, or {model, base_url, api_key} for a model on an endpoint of its own.")
    temperature: float | None = Field(default=None, ge=0, le=2, description="Sampling temperature.")
    max_tokens: int | None = Field(default=1024, ge=1, description="Completion token cap per call (default 1024, so "
                                      "a local model cannot ramble to its context's end; null sends none).")
    timeout: float = Field(default=120.0, gt=0, description="Per-request timeout in seconds.")
    max_retries: int = Field(default=2, ge=0, description="Retries on 429, 5xx, timeouts and dropped connections.")
    extra_body: dict[str, Any] = Field(default_factory=dict, description="Extra JSON fields sent with each request.")

    takes_models: ClassVar[bool] = True
    """False where one endpoint is one model (the judge block): `models` there is refused, not ignored."""

    @field_validator("models")
    @classmethod
    def _model_names(cls, models: list[str | ModelEndpoint] | None) -> list[str | ModelEndpoint] | None:
        if models is None:
            return None
        if not models:
            raise ValueError("an empty list; give at least one model name, or drop models and give model")
        names = [m if isinstance(m, str) else m.model for m in models]
        blank = [i for i, name in enumerate(names) if not name.strip()]
        if blank:
            raise ValueError(f"entry {blank[0]} is an empty model name")
        seen: set[str] = set()
        twice = [name for name in names if name in seen or seen.add(name)]  # type: ignore[func-returns-value]
        if twice:
            raise ValueError(f"{twice[0]!r} is listed twice; each model runs once (use repeats: to run it again)")
        return models

    def model_names(self) -> list[str] | None:
        """The names of `models`, in order (None without a list)."""
        return [m if isinstance(m, str) else m.model for m in self.models] if self.models is not None else None

    def model_endpoint(self, name: str) -> ModelEndpoint | None:
        """The `{model, base_url, api_key}` entry of `models` named `name`, when it is one."""
        return next((m for m in self.models or [] if isinstance(m, ModelEndpoint) and m.model == name), None)

    @model_validator(mode="after")
    def _model_or_models(self) -> EndpointSpec:
        if self.models is None:
            return self
        if not self.takes_models:
            raise ValueError("models: this endpoint is one model; give model (several models are for the target)")
        if self.model is not None:
            raise ValueError("give model (one) or models (several), not both")
        return self


DEFAULT_SAMPLE_TIMEOUT = 600.0
"""Seconds one sample may take when the suite sets no `sample_timeout`: a sample is never unbounded by default (a
tool that blocks forever would hold the run). `sample_timeout: 0` (or null, or `--sample-timeout 0`) turns it off."""
SAMPLE_TIMEOUT_HELP = (f"Seconds one sample may take in all (its model and tool calls, retries included; default "
                       f"{DEFAULT_SAMPLE_TIMEOUT:g}); 0 or null: no limit.")


def sample_limit(value: float | None) -> float | None:
    """The bound a target's `sample_timeout` sets: None for no limit (0 or null)."""
    return value if value else None


DEFAULT_MAX_STEPS = 20


DRIVEN_LOOP_ONLY = {
    name: (f"{name} applies only to the agent loops evals-cli drives (openai_chat and openai_responses targets); "
           "this kind's agent runs its own loop, whose model calls the harness neither makes nor can stop (bound it "
           "with max_steps and sample_timeout)") for name in ("max_tokens_per_sample", "max_messages")}
"""The sample limits a kind that does not drive its agent's loop refuses (command, http, python agents), with why."""


class SampleLimits(StrictModel):
    """A sample's token and message limits, for the kinds whose agent loop the harness drives (inspect_ai's
    token_limit and message_limit; targets/limits.py counts them). Hitting one stops the sample, stop reason
    `token_limit` or `message_limit`, graded as cut off; a row may set its own."""

    max_tokens_per_sample: int | None = Field(
        default=None, ge=1, description="Tokens (prompt plus completion, as each model call reports them) the agent "
        "may use over the whole sample, all turns; checked after each model call, so the call that crosses it "
        "counts whole; no further call is made and its tool calls are not run (stop reason token_limit). "
        "Default: no limit.")
    max_messages: int | None = Field(
        default=None, ge=1, description="Messages the conversation may hold over the whole sample (system, user, "
        "assistant and tool messages, pre-filled ones included); no model call is made once it holds this many "
        "(stop reason message_limit). Default: no limit.")


class TargetBase(StrictModel):
    """The base of a target kind's spec (public: `evals_cli.plugin.TargetBase`): every kind's spec has `kind`
    (its own `Literal`), a step bound and a time bound with defaults, so a plug-in's spec that names neither still
    runs every sample. A spec that is not an `EndpointSpec` calls no model: its kind needs no endpoint (see
    `Target.resolve_endpoint`)."""

    max_steps: int = Field(default=DEFAULT_MAX_STEPS, ge=1, description="Steps (model calls, or tool calls for "
                           "an agent the harness does not drive) allowed per user turn before the turn stops.")
    sample_timeout: float | None = Field(default=DEFAULT_SAMPLE_TIMEOUT, ge=0, description=SAMPLE_TIMEOUT_HELP)


class AgentPrompt(StrictModel):
    """What every target kind gives its agent besides the tools: a system prompt, and a bound on a sample."""

    system_prompt: str | None = Field(default=None, description="System prompt text.")
    system_prompt_file: str | None = Field(default=None, description="System prompt file, relative to the suite.")
    sample_timeout: float | None = Field(default=DEFAULT_SAMPLE_TIMEOUT, ge=0, description=SAMPLE_TIMEOUT_HELP)

    @model_validator(mode="after")
    def _one_prompt(self) -> AgentPrompt:
        if self.system_prompt is not None and self.system_prompt_file is not None:
            raise ValueError("give system_prompt or system_prompt_file, not both")
        return self
