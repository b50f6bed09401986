"""Suite target spec -> Target, by kind, and the endpoint each kind answers for.

One place decides which class runs a `kind:`, so the runner and `evals validate` build targets the same way.
Importing this module registers every target kind in TARGET_KINDS (for `evals list targets`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evals_cli.endpoints.pool import ClientPool
from evals_cli.endpoints.resolve import NO_KEY, Endpoint, resolve_agent
from evals_cli.errors import ConfigError
from evals_cli.models.target_specs import PythonTarget
from evals_cli.targets.base import TARGET_KINDS, Target
from evals_cli.targets.openai_chat import OpenAIChat
from evals_cli.targets.openai_responses import OpenAIResponses
from evals_cli.targets.python_agent import PythonAgent


@dataclass(frozen=True)
class PythonAgentEndpoint(Endpoint):
    """What a python target stands for where the runner expects an endpoint (error messages, pricing lookups,
    telemetry): the agent function, named by its `callable`. The harness calls no model for it."""

    def describe(self) -> str:
        return f"python agent {self.model}"


def resolve_target_endpoint(target: Any, overrides: dict[str, Any] | None = None) -> Endpoint:
    """The agent endpoint of a target: resolved from the suite, the CLI and EVAL_AGENT_* for the model-driven
    kinds (a model is required); for a python target, which needs no model, a stand-in named after its
    callable (--model and --base-url do not apply to it)."""
    if isinstance(target, PythonTarget):
        return PythonAgentEndpoint(role="agent", base_url=None, api_key=NO_KEY, model=target.callable,
                                   timeout=target.sample_timeout or 120.0, max_retries=0)
    return resolve_agent(target, overrides)


def judge_fallback(target: Any, agent: Endpoint) -> Endpoint | None:
    """The endpoint model_judge graders fall back to when neither the grader, the suite's judge block nor
    EVAL_JUDGE_* name one: the agent's own for model-driven targets; none for a python agent, whose stand-in
    endpoint has no model to ask (the judge must then be configured, and the error says so)."""
    return None if isinstance(target, PythonTarget) else agent


def build_target(suite: Any, agent_endpoint: Endpoint, pool: ClientPool, system_prompt: str | None) -> Target:
    """The Target that runs `suite.target`. A python target loads its agent file here, so a missing file, an
    import error or a wrong signature is a ConfigError (exit 2) before any sample runs."""
    spec = suite.target
    kind = getattr(spec, "kind", None)
    if kind == "openai_chat":
        return OpenAIChat(spec, suite.tools, agent_endpoint, pool, system_prompt)
    if kind == "openai_responses":
        return OpenAIResponses(spec, suite.tools, agent_endpoint, pool, system_prompt)
    if kind == "python":
        return PythonAgent(spec, suite.tools, suite.base_dir, system_prompt)
    raise ConfigError(f"target.kind: {kind!r} has no agent to run here; the kinds that do: {', '.join(TARGET_KINDS)}")
