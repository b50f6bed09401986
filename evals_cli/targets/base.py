"""The target contract and its registry.

Every target kind is one module of this package that defines its spec model and registers its class with it::

    @TARGETS.register("openai_chat", spec=OpenAIChatTarget)
    class OpenAIChat(Target): ...

and every class takes the same `(spec, ctx)`, so building one is a registry lookup (targets/factory.py). What
differs between kinds beyond running a sample (whether a model endpoint stands behind the agent, whether
building the target checks something `evals validate` should report) is a class attribute or class method
here, overridden by the kind that differs, so no code outside a target's module names a kind. The suite's
target union is built from this registry (evals_cli/suite/spec.py): adding a kind is its module and its test.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from evals_cli.endpoints.pool import ClientPool
from evals_cli.endpoints.resolve import Endpoint, resolve_agent
from evals_cli.models.sample import Sample
from evals_cli.models.tools import ToolSpec
from evals_cli.models.trajectory import Trajectory
from evals_cli.registry import Registry

if TYPE_CHECKING:
    from evals_cli.mcp.hub import McpHub
    from evals_cli.simulation.player import UserPlayer, UserPlayerFactory
    from evals_cli.tools.mock import EpisodeServers


SAMPLE_REPEAT: ContextVar[int] = ContextVar("SAMPLE_REPEAT", default=0)
"""Which repeat of its sample the runner is running (set per sample, in the worker's context): a simulated user
is built per (sample, repeat) without every target kind's `run` having to take the repeat."""


class SampleFailed(Exception):
    """A sample could not run to the end; the partial trajectory is kept for the results line."""

    def __init__(self, cause: BaseException, trajectory: Trajectory) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.trajectory = trajectory


@dataclass(frozen=True)
class TargetContext:
    """What a run hands every target besides its spec, in one bundle so that all kinds share one constructor:
    a kind that needs something new adds a field here instead of a parameter to every target and caller.
    Kinds take what they use; `endpoint` and `pool` are None where no model is called (tests, a python agent)."""

    tools: Mapping[str, ToolSpec] = field(default_factory=dict)
    endpoint: Endpoint | None = None
    pool: ClientPool | None = None
    system_prompt: str | None = None
    base_dir: Path = field(default_factory=Path.cwd)
    #: Builds the user player of one (sample, repeat) for rows with a `user:` block (the simulated user, or a
    #: replaying one with --replay-user); None: the run has no simulated samples.
    user_player: UserPlayerFactory | None = None
    #: The run's MCP servers (evals_cli/mcp); None: the suite names none. Each (sample, repeat) gets its episode.
    mcp: McpHub | None = None

    def episode_servers(self, sample: Sample, repeat: int | None = None) -> EpisodeServers | None:
        """The MCP servers' side of one (sample, repeat), for its toolbox (None without servers)."""
        if self.mcp is None:
            return None
        return self.mcp.episode(str(sample.id), SAMPLE_REPEAT.get() if repeat is None else repeat)


class Target:
    """Base of every target kind."""

    #: The agent is a model the harness calls through the target's endpoint, so model_judge graders may fall back
    #: to that endpoint; a kind whose agent is not a model sets False (the judge must then be configured).
    calls_model: ClassVar[bool] = True
    #: Building the target checks what the suite alone cannot show (a python agent imports its file), so
    #: `evals validate` builds it to report those problems before any run.
    checked_by_building: ClassVar[bool] = False

    def __init__(self, spec: Any, ctx: TargetContext) -> None:
        self.spec = spec
        self.ctx = ctx
        self.tools = ctx.tools
        self.system_prompt = ctx.system_prompt

    @classmethod
    def resolve_endpoint(cls, spec: Any, overrides: dict[str, Any] | None = None) -> Endpoint:
        """The agent endpoint of this kind: from the suite, the CLI (`overrides`) and EVAL_AGENT_*; a model is
        required."""
        return resolve_agent(spec, overrides)

    @classmethod
    def judge_fallback(cls, agent: Endpoint) -> Endpoint | None:
        """The endpoint model_judge graders fall back to when neither the grader, the suite's judge block nor
        EVAL_JUDGE_* name one: the agent's own when it is a model."""
        return agent if cls.calls_model else None

    async def run(self, sample: Sample, trajectory: Trajectory | None = None, *,
                  repeat: int | None = None) -> Trajectory:
        """Fill `trajectory` (the runner passes one in, so a sample cut short by its timeout keeps what it
        did) and return it; raise SampleFailed on errors. `repeat` tells a simulated user which conversation
        this is (each repeat is an independent one); None: the runner's SAMPLE_REPEAT. A kind may leave the
        keyword out: the runner never passes it."""
        raise NotImplementedError

    def user_player(self, sample: Sample, repeat: int | None = None) -> UserPlayer | None:
        """The player of a simulated-user sample (None for an ordinary one)."""
        if sample.user is None:
            return None
        if self.ctx.user_player is None:
            raise ValueError(f"sample {sample.id} has a user: block, but the run has no user simulator")
        return self.ctx.user_player(sample, SAMPLE_REPEAT.get() if repeat is None else repeat)


TARGETS: Registry[type[Target]] = Registry("target", "evals_cli.targets")

