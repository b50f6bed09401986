"""Decide which URL, key and model a role (agent or judge) talks to."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from evals_cli.errors import ConfigError

NO_KEY = "sk-no-key-set"  # local servers ignore the key; the SDK insists on one


@dataclass(frozen=True)
class Endpoint:
    """A resolved endpoint. `api_key` is never printed: see `describe`."""

    role: str
    base_url: str | None
    api_key: str
    model: str
    timeout: float = 120.0
    max_retries: int = 2

    def describe(self) -> str:
        """How messages name this endpoint: its URL with any credentials in it masked (messages reach CI logs)."""
        from evals_cli.endpoints.secrets import mask_url

        return f"{self.role} endpoint {mask_url(self.base_url or 'https://api.openai.com/v1')} (model {self.model})"

    def secrets(self) -> list[str]:
        """What must never be printed: the key (unless the placeholder) and any credential in the URL."""
        from evals_cli.endpoints.secrets import endpoint_secrets

        return endpoint_secrets(None if self.api_key == NO_KEY else self.api_key, self.base_url)


def _pick(*values: Any) -> Any:
    for value in values:
        if value not in (None, ""):
            return value
    return None


def resolve_agent(spec: Any, overrides: dict[str, Any] | None = None) -> Endpoint:
    """CLI override, else the suite's target, else EVAL_AGENT_* (else OPENAI_API_KEY for the key)."""
    o = overrides or {}
    model = _pick(o.get("model"), spec.model, os.environ.get("EVAL_AGENT_MODEL"))
    if model is None:
        raise ConfigError("target: no model set; give target.model in the suite, --model, or EVAL_AGENT_MODEL")
    return Endpoint(
        role="agent",
        base_url=_pick(o.get("base_url"), spec.base_url, os.environ.get("EVAL_AGENT_BASE_URL")),
        api_key=_pick(o.get("api_key"), spec.api_key, os.environ.get("EVAL_AGENT_API_KEY"),
                      os.environ.get("OPENAI_API_KEY")) or NO_KEY,
        model=model,
        timeout=spec.timeout,
        max_retries=spec.max_retries,
    )


def resolve_judge(grader_spec: Any, judge_spec: Any, agent: Endpoint | None) -> Endpoint:
    """Grader spec, else the suite's judge block, else EVAL_JUDGE_*, else the agent's endpoint."""
    j = judge_spec
    model = _pick(grader_spec.model, j and j.model, os.environ.get("EVAL_JUDGE_MODEL"), agent and agent.model)
    if model is None:
        raise ConfigError("judge: no model set; give judge.model in the suite or EVAL_JUDGE_MODEL")
    return Endpoint(
        role="judge",
        base_url=_pick(grader_spec.base_url, j and j.base_url, os.environ.get("EVAL_JUDGE_BASE_URL"),
                       agent and agent.base_url),
        api_key=_pick(grader_spec.api_key, j and j.api_key, os.environ.get("EVAL_JUDGE_API_KEY"),
                      agent and agent.api_key) or NO_KEY,
        model=model,
        timeout=j.timeout if j else (agent.timeout if agent else 120.0),
        max_retries=j.max_retries if j else (agent.max_retries if agent else 2),
    )
