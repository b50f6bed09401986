"""The target contract and the registry of target kinds under its type.

Every target kind is one module of this package that defines its spec model and registers its class with it::

    @TARGETS.register("openai_chat", spec=OpenAIChatTarget)
    class OpenAIChat(Target): ...

and every class takes the same `(spec, ctx)`, so building one is a registry lookup (runner/target_factory.py). What
differs between kinds beyond running a sample (whether a model endpoint stands behind the agent, whether
building the target checks something `evals validate` should report) is a class attribute or class method
here, overridden by the kind that differs, so no code outside a target's module names a kind. The suite's
target union is built from the same registry (evals_cli/kinds.py, which evals_cli/suite/spec.py reads without
importing this module): adding a kind is its module and its test.

A kind implements one agent turn (`Agent.run_turn`) and what an episode asks of it (`start`, `stop_reason`, and
its tools' schemas in its wire format); the Episode the runner builds for every (sample, repeat) owns the rest
(targets/episode.py): the sample's world and the toolbox over it, the MCP servers, the user player and the
conversation around the turns (scripted, per-turn, a simulated user). A kind sees the toolbox only as a `Toolbox`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from evals_cli import kinds
from evals_cli.endpoints.clients import ModelClients
from evals_cli.endpoints.resolve import NO_KEY, Endpoint, resolve_agent
from evals_cli.models.sample import Sample
from evals_cli.models.target_specs import DEFAULT_MAX_STEPS, EndpointSpec
from evals_cli.models.tools import ToolSpec
from evals_cli.models.trajectory import Trajectory, Turn
from evals_cli.registry import Registry, missing_overrides, must_override

if TYPE_CHECKING:
    from evals_cli.computer.protocol import RunComputer
    from evals_cli.mcp.hub import McpHub
    from evals_cli.models.results import SampleResult
    from evals_cli.models.trajectory import StopReason, ToolCall


class Toolbox(Protocol):
    """The tools of one episode as an actor uses them: the tools offered, their schemas (OpenAI's function format)
    and a call answered and recorded (never raising on bad input from the model). `call` is awaited: a tool with
    logic runs in a worker thread and an MCP call on its server while the run's loop goes on, so one sample's
    slow tool never holds the others. The Episode builds it over the sample's own world (tools/mock.py
    `MockToolbox`) and reads the world back, so the kinds need neither the mocks nor the world, only this."""

    @property
    def tools(self) -> Mapping[str, ToolSpec]: ...

    def schemas(self) -> list[dict[str, Any]]: ...

    async def call(self, call_id: str, name: str, raw_arguments: str) -> ToolCall: ...


@runtime_checkable
class Agent(Protocol):
    """One agent turn, in the target's wire format (public: `evals_cli.Agent`). Every target kind that runs an
    agent implements it (openai_chat, openai_responses, python), and the drivers of a conversation (scripted
    turns, per-turn rows, a simulated user) call it once per user message: the conversation so far, in the
    kind's own message format, ends with that message; the agent answers it, calling the mocked tools through
    `toolbox` (its calls and answer recorded as steps of `turn`, its reply appended to `conversation`), and
    returns True when it answered, False when it hit `max_steps` first (the sample then stops, stop_reason
    max_steps). It raises on errors (the sample errors; never scored as a zero)."""

    async def run_turn(self, sample: Sample, turn_index: int, turn: Turn, conversation: list[dict[str, Any]],
                       toolbox: Toolbox, schemas: list[dict[str, Any]], max_steps: int) -> bool:
        """Answer the conversation's last user message; False when the step bound cut the turn off."""
        ...


class EpisodeState(list[dict[str, Any]]):
    """The conversation of a kind that keeps resources per episode (a process, a session id): `start` returns one
    instead of a plain list, every turn gets it back, the Episode sets `repeat`, `workspace` (the episode's
    folder, when it has one) and `sandbox` before the first turn and awaits `close` when the episode ends, however it ends
    (`failed`: an error or a cancellation, so nothing is waited for), before it reads the world back."""

    repeat: int = 0
    workspace: Path | None = None
    #: the episode's sandbox (evals_cli/sandbox: a `HostedSandbox`), None without one: a kind that starts a
    #: process starts it inside (`sandbox.wrap`)
    sandbox: Any = None

    async def close(self, trajectory: Trajectory, failed: bool) -> None:
        """Release the episode's resources and complete `trajectory` from them (default: nothing to do)."""
        return None


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
    pool: ModelClients | None = None
    system_prompt: str | None = None
    base_dir: Path = field(default_factory=Path.cwd)
    #: The run's MCP servers (evals_cli/mcp); None: the suite names none. Each (sample, repeat) gets its episode.
    mcp: McpHub | None = None
    #: Dual control: the simulated user's own tools (the suite's `user_tools`), over the episode's world.
    user_tools: Mapping[str, ToolSpec] = field(default_factory=dict)
    #: The run's computer (evals_cli/computer): each episode's computer tools and sandbox checks; None: unused.
    computer: RunComputer | None = None


@dataclass(frozen=True)
class NoModelEndpoint(Endpoint):
    """What a kind whose spec names no model (not an `EndpointSpec`) stands for where the runner expects an
    endpoint (messages, telemetry): its kind. No model is called, and no judge falls back to it."""

    def describe(self) -> str:
        return f"{self.model} agent (no model endpoint)"


class Target:
    """Base of every target kind (public: `evals_cli.plugin.Target`)."""

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
        """The agent endpoint of this kind: for a spec that is an `EndpointSpec`, from the suite, the CLI
        (`overrides`) and EVAL_AGENT_* (a model is required); for any other spec a stand-in named after the kind,
        so a plug-in kind with no model needs neither a model setting nor an override of this method."""
        if isinstance(spec, EndpointSpec):
            return resolve_agent(spec, overrides)
        kind = str(getattr(spec, "kind", cls.__name__))
        return NoModelEndpoint(role="agent", base_url=None, api_key=NO_KEY, model=kind,
                               timeout=getattr(spec, "sample_timeout", None) or 120.0, max_retries=0)

    @classmethod
    def agent_is_model(cls, spec: Any) -> bool:
        """A model the harness calls stands behind this target: the kind says so (`calls_model`) and its spec
        names one (an `EndpointSpec`). Several models (`--model A --model B`) apply only then."""
        return cls.calls_model and isinstance(spec, EndpointSpec)

    @classmethod
    def judge_fallback(cls, agent: Endpoint) -> Endpoint | None:
        """The endpoint model_judge graders fall back to when neither the grader, the suite's judge block nor
        EVAL_JUDGE_* name one: the agent's own when it is a model."""
        return agent if cls.calls_model and not isinstance(agent, NoModelEndpoint) else None

    @property
    def max_steps(self) -> int:
        """The spec's step bound per user turn; the default for a spec that declares none (see `TargetBase`)."""
        bound = getattr(self.spec, "max_steps", None)
        return bound if isinstance(bound, int) and bound >= 1 else DEFAULT_MAX_STEPS

    #: A run of recorded data with no resume (recorded sessions): a reused `-o` folder is a new run of the same
    #: data, its earlier results dropped by `begin_run`, instead of refused; no run.json is written (nothing to
    #: resume) and its summary has no coverage (no plan), so its folder reads as such runs always read.
    replaces_results: ClassVar[bool] = False

    def begin_run(self, folder: Path) -> None:
        """A run starts writing into `folder`, before its first sample (default: nothing to do)."""

    def recorded_result(self, sample: Sample, result: SampleResult) -> None:
        """A kind replaying a recording gives the result the recording's own figures (input, cost, latency) once
        the run has filled it (default: nothing to add)."""

    #: The agent takes a whole scripted sample in one call (every user message at once) instead of one turn at a
    #: time: the episode hands it the toolbox over the world and lets `run_whole_sample` run it (the python kind).
    runs_whole_samples: ClassVar[bool] = False

    @must_override
    async def run(self, sample: Sample, trajectory: Trajectory | None = None, *,
                  repeat: int = 0) -> Trajectory:
        """One episode of this target outside a run (a test, a script), without a user player (a simulated-user
        sample needs an Episode built with the run's players, as the runner builds every one: targets/episode.py).
        Fills `trajectory` and returns it; SampleFailed on errors."""
        raise NotImplementedError  # every kind that runs inherits one from ToolLoopTarget or defines its own

    def schemas(self, sample: Sample, toolbox: Toolbox) -> list[dict[str, Any]]:
        """The schemas of the tools one episode offers, in this kind's wire format (default: OpenAI's function
        tools, as the toolbox gives them)."""
        return toolbox.schemas()

    @must_override
    def start(self, sample: Sample, trajectory: Trajectory) -> list[dict[str, Any]]:
        """The conversation to send before the first user turn, in this kind's format; fills
        `trajectory.prefilled`."""
        raise NotImplementedError

    @must_override
    async def run_turn(self, sample: Sample, turn_index: int, turn: Turn, conversation: list[dict[str, Any]],
                       toolbox: Toolbox, schemas: list[dict[str, Any]], max_steps: int) -> bool:
        """One agent turn (`Agent`); a kind that implements none runs its whole episode in `run`."""
        raise NotImplementedError

    @must_override
    def stop_reason(self, trajectory: Trajectory, toolbox: Toolbox) -> StopReason:
        """How an episode whose every turn was answered ended (completed, empty_answer, unparsed_tool_call)."""
        raise NotImplementedError

    @must_override
    async def run_whole_sample(self, sample: Sample, trajectory: Trajectory, toolbox: Toolbox,
                               schemas: list[dict[str, Any]]) -> Trajectory:
        """A scripted sample in one call, for a kind that `runs_whole_samples` (the episode records the world as
        the agent left it)."""
        raise NotImplementedError


def unimplemented(cls: type[Target]) -> list[str]:
    """What a target kind's class must implement for a sample to run and does not: one agent turn (`run_turn`,
    with `start` and `stop_reason`) or a whole episode (`run`); `run_whole_sample` when it `runs_whole_samples`.
    `evals validate` reports them, naming the kind (runner/target_factory.py)."""
    if missing_overrides(cls, ("run_turn",)):
        return ["run_turn (or run)"] if missing_overrides(cls, ("run",)) else []
    needed = ["start", "stop_reason", "tool_schemas", *(["run_whole_sample"] if cls.runs_whole_samples else [])]
    return missing_overrides(cls, needed)


TARGETS: Registry[type[Target]] = kinds.TARGETS

