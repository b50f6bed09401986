"""Suite target spec -> Target, by kind, through the TARGETS registry; and what each kind answers for before it
runs (its agent endpoint, the judge fallback, whether `evals validate` builds it).

One place decides which class runs a `kind:`, so the runner and `evals validate` build targets the same way.
Everything per kind is asked of the kind's class (targets/base.py), so nothing here names a kind.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evals_cli.endpoints.pool import ClientPool
from evals_cli.endpoints.resolve import Endpoint
from evals_cli.errors import ConfigError
from evals_cli.models.base import StrictModel
from evals_cli.registry import plugin_code
from evals_cli.targets.base import TARGETS, Target, TargetContext, unimplemented

if TYPE_CHECKING:
    from evals_cli.computer.protocol import RunComputer
    from evals_cli.mcp.hub import McpHub
    from evals_cli.suite.spec import SuiteSpec


def target_class(spec: StrictModel) -> type[Target] | None:
    """The class registered for the spec's `kind`; None for a kind no target runs (recorded_sessions)."""
    entry = TARGETS.get(getattr(spec, "kind", None) or "")
    return entry.impl if entry is not None else None


def resolve_target_endpoint(spec: StrictModel, overrides: dict[str, Any] | None = None) -> Endpoint:
    """The agent endpoint of a target: resolved from the suite, the CLI and EVAL_AGENT_* for the model-driven
    kinds (a model is required); whatever stands in for it for a kind with no model (see its class)."""
    return (target_class(spec) or Target).resolve_endpoint(spec, overrides)


def judge_fallback(spec: StrictModel, agent: Endpoint) -> Endpoint | None:
    """The endpoint model_judge graders fall back to when neither the grader, the suite's judge block nor
    EVAL_JUDGE_* name one: the agent's own when the agent is a model; none otherwise (the judge must then be
    configured, and the error says so)."""
    return (target_class(spec) or Target).judge_fallback(agent)


def build_target(suite: SuiteSpec, agent_endpoint: Endpoint, pool: ClientPool, system_prompt: str | None,
                 mcp: McpHub | None = None, computer: RunComputer | None = None) -> Target:
    """The Target that runs `suite.target`. Problems only building shows (a python target's missing agent
    file, import error or wrong signature) are ConfigErrors (exit 2) raised here, before any sample runs."""
    cls = target_class(suite.target)
    if cls is None:
        kind = getattr(suite.target, "kind", None)
        raise ConfigError(f"target.kind: {kind!r} has no agent to run here; the kinds that do: "
                          f"{', '.join(sorted(TARGETS.kinds()))}")
    entry = TARGETS.get(str(getattr(suite.target, "kind", "")))
    missing = unimplemented(cls)
    if missing and entry is not None:
        raise ConfigError(f"target.kind: {entry.named()} cannot run a sample: its class {cls.__name__} "
                          f"(module {entry.module}) does not implement {', '.join(missing)}; fix the kind"
                          + (f", or uninstall {entry.package}" if entry.package else ""))
    ctx = TargetContext(tools=suite.tools, user_tools=suite.user_tools,
                        endpoint=agent_endpoint, pool=pool, system_prompt=system_prompt,
                        base_dir=suite.base_dir, mcp=mcp, computer=computer)
    with plugin_code(entry, "being built", at="target.kind"):
        return cls(suite.target, ctx)


def validate_builds(spec: StrictModel) -> bool:
    """Whether `evals validate` builds this target: every kind that runs an agent is built (no model is called),
    so a kind that would fail at run time (a plug-in's constructor raising, a method it leaves unimplemented) is
    reported before any run."""
    return target_class(spec) is not None
