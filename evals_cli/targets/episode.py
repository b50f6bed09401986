"""One Episode per (sample, repeat): the sample's own world and toolbox, and the driver that decides who speaks
next, around a target that implements one agent turn (`evals_cli.Agent`).

The runner builds one for every (sample, repeat) it runs, handing it the repeat and the run's user-player factory
itself: no context variable carries the repeat, and no player is patched into a target or its context. The
drivers are the same for every target kind, so a new kind implements the turn in its wire format (`start`,
`run_turn`) and nothing of the conversation:

- **scripted turns**: the row's user messages (one, or several for a per-turn row), each answered by a turn;
- **a simulated user**: a `UserPlayer` gives the next message until it ends the conversation
  (simulation/loop.py counts the turns, the time and the simulator's cost);
- a kind that implements no turn but `run` (the whole episode, as every kind did before) is run by it;
- a kind whose agent takes the whole scripted sample in one call (`runs_whole_samples`: the python kind, whose
  function gets every user message at once and moves on with `tools.next_turn()`) gets the world and the
  toolbox from here and runs it itself; its simulated-user conversations are driven turn by turn like any.

The world is created here (a new toolbox per episode, over the sample's tools and environment, so a repeat never
sees another's changes; the episode's MCP servers, with its workspace, are attached to it here, so no kind deals
with them; the kind only gives the tools' schemas in its wire format, `Target.schemas`), and what the agent left
it as is recorded however the episode ends.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evals_cli.models.sample import Sample
from evals_cli.models.trajectory import Trajectory, Turn
from evals_cli.simulation.loop import AgentFailed, converse
from evals_cli.targets.base import SampleFailed, Target
from evals_cli.tools.mock import MockToolbox, merge_tools

if TYPE_CHECKING:
    from evals_cli.simulation.player import UserPlayer, UserPlayerFactory
    from evals_cli.tools.mock import EpisodeServers


@dataclass
class Episode:
    """One (sample, repeat) of a run: `run` fills `trajectory` (the runner passes its own in, so a sample cut short
    by its timeout keeps what it did) and returns it; SampleFailed when the sample could not run to the end."""

    target: Target
    sample: Sample
    repeat: int = 0
    players: UserPlayerFactory | None = None
    trajectory: Trajectory = field(default_factory=Trajectory)

    def player(self) -> UserPlayer | None:
        """The user of a simulated-user sample (a row with a `user:` block), one per (sample, repeat)."""
        if self.sample.user is None:
            return None
        if self.players is None:
            raise ValueError(f"sample {self.sample.id} has a user: block, but the run has no user simulator")
        return self.players(self.sample, self.repeat)

    def servers(self) -> EpisodeServers | None:
        """The MCP servers' side of this (sample, repeat), for its toolbox (None: the suite names no servers)."""
        hub = self.target.ctx.mcp
        return hub.episode(str(self.sample.id), self.repeat) if hub is not None else None

    async def run(self) -> Trajectory:
        target, sample, trajectory = self.target, self.sample, self.trajectory
        if type(target).run_turn is Target.run_turn:  # a kind that runs its whole episode (its own `run`, as
            return await target.run(sample, trajectory)  # every kind did before episodes)
        toolbox = MockToolbox(merge_tools(target.tools, sample.tools), sample.environment)  # this episode's world
        schemas = target.schemas(sample, toolbox)
        servers = self.servers()
        if servers is not None:  # the MCP servers of this (sample, repeat): live tools, and its workspace
            toolbox.attach(servers)
        player = self.player()
        if player is None and target.runs_whole_samples:
            try:
                return await target.run_whole_sample(sample, trajectory, toolbox, schemas)
            finally:  # also failed or cancelled (sample_timeout): the world as the agent left it
                trajectory.state_changes = toolbox.state_changes()
        if target.calls_model:  # the row's own model, asked instead of the run's (results say so)
            trajectory.agent_model = sample.agent_model
        conversation = target.start(sample, trajectory)
        max_steps = sample.max_steps or target.max_steps
        try:
            answered = await self._drive(player, conversation, toolbox, schemas, max_steps)
        except Exception as exc:
            trajectory.stop_reason = "error"
            raise SampleFailed(exc.cause if isinstance(exc, AgentFailed) else exc, trajectory) from exc
        finally:  # also cut off, failed or cancelled (sample_timeout): the world as the agent left it
            trajectory.state_changes = toolbox.state_changes()
        trajectory.stop_reason = target.stop_reason(trajectory, toolbox) if answered else "max_steps"
        return trajectory

    async def _drive(self, player: UserPlayer | None, conversation: list[dict[str, Any]], toolbox: MockToolbox,
                     schemas: list[dict[str, Any]], max_steps: int) -> bool:
        """Who speaks next: the player, or the row's scripted user messages; False when a turn hit max_steps."""
        target, sample, trajectory = self.target, self.sample, self.trajectory

        async def agent_turn(turn_index: int, turn: Turn) -> bool:
            if turn.user is not None:
                conversation.append({"role": "user", "content": turn.user})
            return await target.run_turn(sample, turn_index, turn, conversation, toolbox, schemas, max_steps)

        if player is not None:  # a simulated user: the same turn code, one user message at a time
            return await converse(sample, trajectory, player, agent_turn, self.repeat)
        for turn_index, user in enumerate(list(sample.user_turns) or [None]):
            turn = Turn(user=user)
            trajectory.turns.append(turn)
            if not await agent_turn(turn_index, turn):
                return False
        return True
