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

The Episode owns the sample's world: it builds it before anything acts (the declared files and records, then the
environment's `setup`, then the episode's MCP servers started in its workspace), records what that changed as the
starting state (`Trajectory.setup_changes`, actor `setup`), and hands each actor a toolbox over the same world
(`toolbox(actor)`: the agent's; a user who acts, dual control, gets one over the suite's `user_tools`, with the
tools of its `user_mcp_servers`, which run in this episode's MCP session, in the same workspace). However
the episode ends, what the actors changed from the starting state is recorded (`Trajectory.state_changes`, each
change with the actor who made it last): a repeat never sees another's changes, no kind
deals with the world or the servers, and the kind only gives the tools' schemas in its wire format
(`Target.schemas`).
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evals_cli.environment.world import World
from evals_cli.mcp import workspace
from evals_cli.models.environment import Actor
from evals_cli.models.sample import Sample
from evals_cli.models.target_specs import DRIVEN_LOOP_ONLY
from evals_cli.models.tools import ToolSpec
from evals_cli.models.trajectory import Trajectory, Turn
from evals_cli.simulation.loop import AgentFailed, converse
from evals_cli.targets.base import EpisodeState, SampleFailed, Target
from evals_cli.targets.limits import SAMPLE_BUDGET, SampleBudget
from evals_cli.tools.mock import MockToolbox, merge_tools, needs_world
from evals_cli.tools.setup import run_setup_commands, run_setup_function

if TYPE_CHECKING:
    from evals_cli.computer.protocol import EpisodeComputer
    from evals_cli.mcp.hub import McpSession
    from evals_cli.sandbox.base import HostedSandbox
    from evals_cli.sandbox.factory import SandboxFactory
    from evals_cli.simulation.player import UserPlayer, UserPlayerFactory


@dataclass
class Episode:
    """One (sample, repeat) of a run: `run` fills `trajectory` (the runner passes its own in, so a sample cut short
    by its timeout keeps what it did) and returns it; SampleFailed when the sample could not run to the end (its
    setup failed included)."""

    target: Target
    sample: Sample
    repeat: int = 0
    players: UserPlayerFactory | None = None
    trajectory: Trajectory = field(default_factory=Trajectory)
    #: the run's maker of sandboxes (None: no run hands one in, as outside a run: no sandbox)
    sandboxes: SandboxFactory | None = None
    #: this episode's machine (None: kind none): made first, its /workspace the world's files, alive until `close`
    #: (after grading); the toolbox holds it as `MockToolbox.sandbox`, a kind's episode state as `.sandbox`
    sandbox: HostedSandbox | None = field(default=None, init=False)
    #: the world every actor acts on (None: the sample has none), and the starting state it was built to
    world: World | None = field(default=None, init=False)
    start: World | None = field(default=None, init=False)
    #: the MCP servers' side of this (sample, repeat) (None: the suite names no servers)
    servers: McpSession | None = field(default=None, init=False)
    #: dual control: who last changed each file or record (None: only the agent acts)
    ledger: dict[str, Actor] | None = field(default=None, init=False)
    #: the computer tools' and sandbox checks' side of this episode (None: the suite uses neither)
    computer: EpisodeComputer | None = field(default=None, init=False)

    def player(self) -> UserPlayer | None:
        """The user of a simulated-user sample (a row with a `user:` block), one per (sample, repeat)."""
        if self.sample.user is None:
            return None
        if self.players is None:
            raise ValueError(f"sample {self.sample.id} has a user: block, but the run has no user simulator")
        return self.players(self.sample, self.repeat)

    @functools.cached_property
    def tools(self) -> dict[str, ToolSpec]:
        """The tools of this sample: the suite's (with the servers'), a row's own on top (merged once)."""
        return merge_tools(self.target.tools, self.sample.tools, self.sample.inject)

    @functools.cached_property
    def user_tools(self) -> dict[str, ToolSpec]:
        """The simulated user's own tools (dual control): the suite's `user_tools`, for a row with a `user:`."""
        own = getattr(self.target.ctx, "user_tools", None) or {}
        return dict(own) if self.sample.user is not None else {}

    def toolbox(self, actor: Actor = "agent") -> MockToolbox:
        """A toolbox over this episode's world for one actor (built after `build`): the agent's tools, or the
        user's own. With a user who acts, both share one ledger of who changed what."""
        tools = self.user_tools if actor == "user" else self.tools
        return MockToolbox(tools, self.world, servers=self.servers, actor=actor, ledger=self.ledger,
                           sandbox=self.sandbox, computer=self.computer if actor == "agent" else None)

    async def build(self) -> None:
        """The sample's world before anything acts: declared, changed by the setup function, put into the
        workspace, changed by the setup commands, then the servers started in it; what all that changed is the
        starting state (actor `setup`), never the agent's doing."""
        sample, hub = self.sample, self.target.ctx.mcp
        if self.sandboxes is not None:
            self.sandbox = await self.sandboxes.open(sample, self.repeat)
        self.servers = hub.session(str(sample.id), self.repeat) if hub is not None else None
        has_workspace = self.servers is not None and self.servers.has_workspace
        if self.sandbox is not None:
            return await self._build_in_sandbox(self.sandbox)
        if not (needs_world({**self.tools, **self.user_tools}, sample.environment) or has_workspace):
            await self._open_computer({})
            return
        setup = sample.environment.setup if sample.environment is not None else None
        declared = World(sample.environment)
        world = declared.copy()
        if setup is not None and setup.python is not None:
            await run_setup_function(setup, world, self.target.ctx.base_dir)
        folder = self.servers.make_workspace(world.files) if self.servers is not None else None
        if setup is not None and setup.commands is not None:
            await run_setup_commands(setup, world, folder)
        if self.servers is not None:
            files = await self.servers.start()
            if files is not None:
                world.files = files
        self._started_from(declared, world)
        await self._open_computer(world.files)

    def _started_from(self, declared: World, world: World) -> None:
        changes = world.diff(declared)
        for change in changes:
            change.actor = "setup"
        self.trajectory.setup_changes = changes or None
        self.world, self.start = world, world.copy()
        if self.user_tools:
            self.ledger = {}

    async def _build_in_sandbox(self, sandbox: HostedSandbox) -> None:
        """The world in the sandbox: declared, changed by the setup function, filled into its /workspace, changed
        by the setup commands run inside, and read back from there (the sandbox's files are the world's)."""
        setup = self.sample.environment.setup if self.sample.environment is not None else None
        declared = World(self.sample.environment)
        world = declared.copy()
        if setup is not None and setup.python is not None:
            await run_setup_function(setup, world, self.target.ctx.base_dir)
        await asyncio.to_thread(workspace.fill, sandbox.workspace, dict(world.files))
        sandbox.own()
        if setup is not None and setup.commands is not None:
            await run_setup_commands(setup, world, None, sandbox=sandbox)
        world.files = await asyncio.to_thread(workspace.read_back, sandbox.workspace)
        self._started_from(declared, world)
        await self._open_computer(world.files)

    async def _open_computer(self, files: dict[str, str]) -> None:
        """This episode's computer, over its sandbox (the run's `Computer`, target.ctx.computer; None: the suite
        has no computer tools or checks). With no sandbox (`kind: none`) the computer makes a stand-in over the world's
        files itself (`opened`: unisolated, on this machine); under --replay there is none at all."""
        computer = getattr(self.target.ctx, "computer", None)
        if computer is None:
            return
        self.computer = computer.session(str(self.sample.id), self.repeat, self.sandbox)
        await self.computer.opened(files)

    async def run_alone(self) -> Trajectory:
        """`run`, then `close`: an episode nothing grades (a target's own `run`) frees its sandbox at its end."""
        try:
            return await self.run()
        finally:
            await self.close()

    async def close(self) -> None:
        """The sandbox ended, whatever ran in it killed and its folder removed (idempotent); the runner calls it
        once the episode is graded, however it ended."""
        if self.computer is not None:
            await self.computer.close()
        sandbox, self.sandbox = self.sandbox, None
        if sandbox is not None:
            await sandbox.close()

    async def record_world(self) -> None:
        """What the agent changed from the starting state (also when the episode failed or was cut off): a live
        server's workspace is read back into the world first."""
        if self.servers is not None:
            files = await self.servers.finish()
            if files is not None and self.world is not None:
                self.world.files = files
        if self.sandbox is not None:
            await self.sandbox.stop_processes()  # nothing left running changes (or swaps) what is read back
        if self.computer is not None and self.world is not None:  # its sandbox's, or the recorded files
            self.world.files = await self.computer.finished(self.world.files)
        elif self.sandbox is not None and self.world is not None:
            self.world.files = await asyncio.to_thread(workspace.read_back, self.sandbox.workspace)  # off the loop
        if self.world is not None and self.start is not None:
            changes = self.world.diff(self.start)
            for change in changes:  # the last actor to change it (a live server's files: whose call wrote them;
                # the agent's when only the agent acts, or when the servers wrote them between calls)
                change.actor = (self.ledger or {}).get(change.target, "agent")
            self.trajectory.state_changes = changes

    async def run(self) -> Trajectory:
        target, sample, trajectory = self.target, self.sample, self.trajectory
        try:
            budget = self.budget()
        except ValueError as exc:
            trajectory.stop_reason = "error"
            raise SampleFailed(exc, trajectory) from exc
        if type(target).run_turn is Target.run_turn:  # a kind that runs its whole episode (its own `run`, as
            return await target.run(sample, trajectory)  # every kind did before episodes)
        try:
            await self.build()
        except BaseException as exc:
            if self.servers is not None:
                self.servers.discard()
            if not isinstance(exc, Exception):
                raise
            trajectory.stop_reason = "error"
            raise SampleFailed(exc, trajectory) from exc
        toolbox = self.toolbox("agent")
        schemas = target.schemas(sample, toolbox)
        player = self.player()
        if player is None and target.runs_whole_samples:
            try:
                return await target.run_whole_sample(sample, trajectory, toolbox, schemas)
            finally:  # also failed or cancelled (sample_timeout): the world as the agent left it
                await self.record_world()
        if target.calls_model:  # the row's own model, asked instead of the run's (results say so)
            trajectory.agent_model = sample.agent_model
        conversation = target.start(sample, trajectory)
        if isinstance(conversation, EpisodeState):  # a kind with per-episode resources (an agent process)
            conversation.repeat = self.repeat
            conversation.workspace = self.servers.folder if self.servers is not None else (
                self.computer.workspace if self.computer is not None else None)  # the sandbox's, on the host
            if self.sandbox is not None:
                conversation.workspace, conversation.sandbox = self.sandbox.workspace, self.sandbox
        max_steps = sample.max_steps or target.max_steps
        failed = True
        try:
            answered = await self._drive_within(budget, player, conversation, toolbox, schemas, max_steps)
            failed = False
        except Exception as exc:
            trajectory.stop_reason = "error"
            raise SampleFailed(exc.cause if isinstance(exc, AgentFailed) else exc, trajectory) from exc
        finally:  # also cut off, failed or cancelled (sample_timeout): the world as the agent left it
            try:
                if isinstance(conversation, EpisodeState):
                    await self._close(conversation, failed)
            finally:
                await self.record_world()
        if answered:
            trajectory.stop_reason = target.stop_reason(trajectory, toolbox)
        else:
            trajectory.stop_reason = budget.hit or "max_steps"
            if budget.hit is not None and trajectory.end_reason == "agent_max_steps":  # a simulated user's
                trajectory.end_reason = "agent_token_limit" if budget.hit == "token_limit" else "agent_message_limit"
        return trajectory

    def budget(self) -> SampleBudget:
        """This sample's token and message limits: the row's own, else the target's (None: no limit). A row's
        limit on a kind whose spec has none (its agent runs its own loop) cannot apply: the sample errors, never
        a limit silently dropped."""
        sample, spec = self.sample, self.target.spec
        for name in DRIVEN_LOOP_ONLY:
            if getattr(sample, name) is not None and name not in type(spec).model_fields:
                raise ValueError(f"sample {sample.id}: {name}: {DRIVEN_LOOP_ONLY[name]}; drop it from the row")
        tokens = sample.max_tokens_per_sample or getattr(spec, "max_tokens_per_sample", None)
        messages = sample.max_messages or getattr(spec, "max_messages", None)
        return SampleBudget(self.trajectory, tokens=tokens, messages=messages)

    async def _close(self, state: EpisodeState, failed: bool) -> None:
        """The kind's per-episode resources released; an error doing so fails an episode that had not failed."""
        try:
            await state.close(self.trajectory, failed)
        except Exception as exc:
            if failed:
                return
            self.trajectory.stop_reason = "error"
            raise SampleFailed(exc, self.trajectory) from exc

    async def _drive_within(self, budget: SampleBudget, *args: Any) -> bool:
        """`_drive` with this sample's budget in force for its task (the loops read it before each model call);
        a context variable, as one target serves many samples at once."""
        token = SAMPLE_BUDGET.set(budget)
        try:
            return await self._drive(*args)
        finally:
            SAMPLE_BUDGET.reset(token)

    async def _drive(self, player: UserPlayer | None, conversation: list[dict[str, Any]], toolbox: MockToolbox,
                     schemas: list[dict[str, Any]], max_steps: int) -> bool:
        """Who speaks next: the player, or the row's scripted user messages; False when a turn hit max_steps."""
        target, sample, trajectory = self.target, self.sample, self.trajectory

        async def agent_turn(turn_index: int, turn: Turn) -> bool:
            if turn.user is not None:
                conversation.append({"role": "user", "content": turn.user})
            return await target.run_turn(sample, turn_index, turn, conversation, toolbox, schemas, max_steps)

        if player is not None:  # a simulated user: the same turn code, one user message at a time
            user_box = self.toolbox("user") if self.user_tools else None
            return await converse(sample, trajectory, player, agent_turn, self.repeat, user_box)
        for turn_index, user in enumerate(list(sample.user_turns) or [None]):
            turn = Turn(user=user)
            trajectory.turns.append(turn)
            if not await agent_turn(turn_index, turn):
                return False
        return True
