"""The seam between the conversation loop and whoever plays the user.

The loop (evals_cli/simulation/loop.py, run by every simulated-user Episode: evals_cli/targets/episode.py) asks a
`UserPlayer` for the next user message, giving it a `ConversationView`: the sample, its (merged) `user:` block and
the conversation so far. The player answers with a `UserMove`: a message to send, or the end of the conversation.
The simulated player (simulation/simulator.py) sends the row's scripted opening first and then asks the simulator
model; a replaying player (`--replay-user`) wraps one and answers from an earlier run while the conversation stays
on its path.

A run builds one player per (sample, repeat) through a `UserPlayerFactory`, which the runner hands to each
Episode with its repeat: a repeat is an independent conversation with a player of its own.

Who plays is a user-player kind (`user_simulator: {player: KIND}`, default `simulated`): a registered function
that builds the run's factory from the run's `SimulatorSettings` (the simulator's endpoint, client pool, spec and
template; the endpoint is None for a kind other than `simulated` when none resolves). A plug-in adds one with
`@USER_PLAYERS.register("acme_user")`, so a custom user simulator needs no edit to evals-cli.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from evals_cli.errors import ToolServerFailed
from evals_cli.models.sample import Sample
from evals_cli.models.simulated_user import UserSpec
from evals_cli.models.trajectory import EndReason, Step, ToolCall, Turn, Usage, UserSource
from evals_cli.registry import Registry
from evals_cli.simulation.user_actions import Action


class UserSimulatorError(Exception):
    """The user could not be played: the simulator's endpoint failed, it broke character twice, or it ended the
    conversation before its first message (simulation/loop.py). The sample errors with category `user_simulator`
    (an error, never a zero). `fatal`: no later sample can succeed either (the simulator is unreachable, or
    refuses the key)."""

    def __init__(self, message: str, fatal: bool = False, fatal_after_success: bool = True) -> None:
        super().__init__(message)
        self.message = message
        self.fatal = fatal
        self.fatal_after_success = fatal_after_success  # False: fatal only until some sample has succeeded
        # what the simulator cost before it failed (tokens, seconds, calls): an errored sample still spent it, and
        # the results, the per-role figures and the spend cap count it
        self.spent: UserMove | None = None


class UserTools(Protocol):
    """The user's own tools over the episode's world (dual control: the Episode's toolbox for actor `user`)."""

    def schemas(self) -> list[dict[str, Any]]: ...

    async def call(self, call_id: str, name: str, raw_arguments: str) -> ToolCall: ...


@dataclass(frozen=True)
class ConversationView:
    """What a player may look at: the sample, its `user:` block (suite defaults merged in) and the conversation
    so far (`prefilled` chat messages, then every turn: the user message and the agent's steps)."""

    sample: Sample
    user: UserSpec
    prefilled: Sequence[dict[str, Any]]
    turns: Sequence[Turn]
    repeat: int = 0
    #: dual control: the tools the user may act with (None: a user who only talks)
    tools: UserTools | None = None

    @property
    def turn_index(self) -> int:
        """The 0-based index of the user turn being asked for."""
        return len(self.turns)

    @property
    def last_reply(self) -> str:
        """The agent's last text reply ("" before the first turn)."""
        return self.turns[-1].answer if self.turns else ""


@dataclass
class UserMove:
    """A player's answer: `text` to send as the next user message; with `done`, the conversation ends after it
    (`text` then holds the user's last words, sent and answered first, or None when there are none; `end_reason`
    says why it ended: user_done unless a replaying player marks the sample `diverged`). `usage`, `latency_s` and
    `calls` are the simulator's cost of this move (zero for scripted and replayed moves). `steps`: the tool calls
    the user made on its own tools before this message (dual control), already run over the episode's world."""

    text: str | None
    done: bool = False
    source: UserSource = "simulated"
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    calls: int = 0
    end_reason: EndReason | None = None
    diverged_at: int | None = None
    steps: list[Step] = field(default_factory=list)


@runtime_checkable
class UserPlayer(Protocol):
    """Plays the user of one conversation (one sample, one repeat): the next user message (public:
    `evals_cli.UserPlayer`). The simulated user, the replaying one and a plug-in's (`USER_PLAYERS`) all are."""

    async def next_message(self, view: ConversationView) -> UserMove:
        """The next user message, or the end of the conversation; raise UserSimulatorError when the user
        cannot be played."""
        ...


UserPlayerFactory = Callable[[Sample, int], UserPlayer]
"""Builds the player of one (sample, repeat); the sample's `user:` block already has the suite's defaults."""


PlayerKind = Callable[[Any], UserPlayerFactory]
"""A user-player kind: builds the run's UserPlayerFactory from its SimulatorSettings (simulation/simulator.py)."""

USER_PLAYERS: Registry[PlayerKind] = Registry("user player", "evals_cli.simulation.simulator")
"""Every user-player kind; `simulated` (a model plays the user) registers in simulation/simulator.py."""

DEFAULT_PLAYER = "simulated"


async def run_actions(tools: UserTools, actions: Sequence[Action], content: str | None, turn_index: int,
                      steps: list[Step]) -> Step:
    """Run one reply's calls on the user's tools (in order: they act on one world), as a step appended to `steps`
    first (a failed call's step is kept: what ran before it changed the world); a tool that raises (a tool with
    logic that crashed, an MCP server of `user_mcp_servers` that crashed or hung) is the user's tool failing:
    UserSimulatorError naming it, never the agent's error."""
    step = Step(actor="user", content=content or None, started=time.time())
    steps.append(step)
    began = time.perf_counter()
    for number, action in enumerate(actions, 1):
        call_id = action.id or f"user_{turn_index + 1}_{number}"
        try:
            step.tool_calls.append(await tools.call(call_id, action.name, action.arguments))
        except Exception as exc:  # the user's MCP server crashed or hung (ToolServerFailed): the run stops, as
            # for the agent's servers (no later call to it can be trusted), but it is the user's error
            raise UserSimulatorError(f"the user's tool {action.name} failed at user turn {turn_index + 1}: "
                                     f"{type(exc).__name__}: {exc}", fatal=isinstance(exc, ToolServerFailed)) from exc
    step.latency_s = time.perf_counter() - began
    return step
