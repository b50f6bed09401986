"""`kind: command`: any agent program, started once per episode and spoken to in JSON lines on stdin/stdout.

evals-cli writes `{"type": "user", "content": TEXT}` per user turn (scripted, per-turn or simulated users alike)
and reads the reply to that turn as the next stdout line `{"type": "assistant", "content": TEXT}` (other stdout
lines are ignored; stderr is kept as a bounded tail, shown when the episode fails). At the episode's end stdin is
closed and the program gets `exit_timeout` seconds to exit (and flush its telemetry), then it is stopped. Whatever
the program started is killed when it exits or is stopped, and the episode ends once all of it is gone
(targets/agent_process.py, targets/reaper.py).
The program is pointed at the run's OTLP receiver the usual way (OTEL_EXPORTER_OTLP_* variables) and tagged
with `evals.episode=<id>` in OTEL_RESOURCE_ATTRIBUTES, so an agent instrumented as usual needs no change; its
spans rebuild the episode's trajectory (targets/external.py). On Linux the tag is a label only: the receiver takes
as the episode's the spans sent by its processes (its reaper and all below it, traces/peers.py), told of them here
before the process starts and once it is gone, so that another episode's agent, which can read the tag in
/proc/<pid>/environ, cannot feed this one. The sample's timeout bounds it all.

In an episode with a sandbox (`sandbox:`, evals_cli/sandbox) the program runs inside it, under the same reaper
(which holds the sandbox's entry process, so the sandbox's whole tree goes with it), in /workspace, with
`target.env` as its whole environment, and its telemetry reaches the receiver through the sandbox's socket only
(`HostedSandbox.reach`): never the network. That socket's bridge is evals-cli's, and it vouches to the receiver
that what comes through it is this episode's (a sandbox sees no other episode's bridge).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import uuid
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator

from evals_cli.endpoints.errors import AgentFailed
from evals_cli.errors import ConfigError
from evals_cli.models.sample import Sample
from evals_cli.models.trajectory import StopReason, Trajectory, Turn
from evals_cli.sandbox.base import WORKSPACE, SandboxUnavailable
from evals_cli.settings import child_environment
from evals_cli.targets.agent_process import LINE_LIMIT, AgentProcess
from evals_cli.targets.base import TARGETS, Target, TargetContext, Toolbox
from evals_cli.targets.external import (
    ExternalEpisode,
    ExternalSpec,
    Observed,
    check_telemetry,
    observe,
    receiver_for,
    record,
    replay_turn,
    replayed,
)

if TYPE_CHECKING:
    from evals_cli.sandbox.base import HostedSandbox

QUOTED = 300  # characters of a stdout line quoted in an error
JSON_KINDS = {list: "an array", dict: "an object", bool: "a boolean", int: "a number", float: "a number"}


class CommandTarget(ExternalSpec):
    """An agent program run once per episode, talking JSON lines on stdin/stdout."""

    kind: Literal["command"] = "command"
    command: list[str] = Field(min_length=1, description="The program and its arguments, e.g. "
                               "[python, agent.py]; relative paths are the suite's folder's.")
    env: dict[str, str] = Field(default_factory=dict, description="Environment variables set for the program (on "
                                "top of evals-cli's own environment); prefer ${VAR} for secrets.")
    cwd: str | None = Field(default=None, description="Working folder, relative to the suite (default: the episode's "
                            "workspace when it has one, else the suite's folder); in a sandbox, a path inside it "
                            "(default: /workspace).")
    exit_timeout: float = Field(default=10.0, gt=0, description="Seconds the program gets to exit after its stdin is "
                                "closed at the episode's end (to flush its telemetry) before it is killed.")

    @field_validator("command")
    @classmethod
    def _program(cls, command: list[str]) -> list[str]:
        if not command[0].strip():
            raise ValueError("the program (the list's first entry) is empty; e.g. command: [python, agent.py]")
        return command


class CommandEpisode(ExternalEpisode):
    """The process of one episode, started at its first turn."""

    def __init__(self, target: CommandAgent, sample: Sample) -> None:
        super().__init__(f"{sample.id}-{uuid.uuid4().hex[:12]}", str(sample.id))
        self.target = target
        self.agent: AgentProcess | None = None

    def environment(self, inside: str | None = None) -> dict[str, str]:
        """The program's environment: evals-cli's own under `target.env`, or, inside a sandbox, `target.env` alone
        with the receiver at `inside` (the sandbox's way to it)."""
        spec = self.target.spec
        env = {**(child_environment() if self.sandbox is None else {}), **spec.env}
        env["EVALS_EPISODE"] = self.tag
        if spec.telemetry:
            endpoint = inside or receiver_for(self.target).endpoint
            env.update(OTEL_EXPORTER_OTLP_ENDPOINT=endpoint, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=f"{endpoint}/v1/traces",
                       OTEL_EXPORTER_OTLP_PROTOCOL=env.get("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
                       OTEL_TRACES_EXPORTER="otlp", OTEL_BSP_SCHEDULE_DELAY=env.get("OTEL_BSP_SCHEDULE_DELAY", "200"))
            attributes = env.get("OTEL_RESOURCE_ATTRIBUTES", "")
            env["OTEL_RESOURCE_ATTRIBUTES"] = ",".join(a for a in (attributes, f"evals.episode={self.tag}") if a)
        return env

    async def begin(self) -> None:
        if self.sandbox is not None:
            return await self._begin_inside(self.sandbox)
        spec, base = self.target.spec, self.target.ctx.base_dir
        cwd = (base / spec.cwd) if spec.cwd else (self.workspace or base)
        program = spec.command[0]
        if "/" in program and not Path(program).is_absolute():
            program = str((base / program).resolve())
        receiver = receiver_for(self.target) if spec.telemetry else None
        if receiver is not None:  # its connections wait for the root's pid rather than be refused meanwhile
            receiver.expect(self.tag)
        try:
            self.agent = await AgentProcess.start(program, spec.command[1:], str(cwd), self.environment())
        except OSError as exc:
            raise AgentFailed(f"command agent: cannot start {spec.command[0]!r} in {cwd}: {exc.strerror or exc}; "
                                  "check target.command and target.cwd") from None
        finally:
            if receiver is not None and self.agent is None:
                receiver.forget(self.tag)
        if receiver is not None:
            receiver.started(self.tag, self.agent.process.pid)

    async def _begin_inside(self, sandbox: HostedSandbox) -> None:
        """The program started in the episode's sandbox (its /workspace the working folder unless `target.cwd`,
        a path inside), under the same reaper; its telemetry reaches the receiver through the sandbox only."""
        spec = self.target.spec
        program = spec.command[0]
        if "/" in program and not program.startswith("/"):
            raise AgentFailed(f"command agent: {program!r} is relative, and inside the {sandbox.kind} sandbox only "
                              "its /workspace is the episode's: give the program by name (on the sandbox's PATH) or "
                              "by an absolute path the sandbox has (sandbox.ro_paths, the image, environment.files)")
        inside = None
        if spec.telemetry:  # through a bridge of evals-cli's own, which vouches for the episode to the receiver
            receiver = receiver_for(self.target)
            parts = urlsplit(receiver.endpoint)
            inside = await sandbox.reach(parts.hostname or "127.0.0.1", parts.port or 80,
                                         on_connect=partial(receiver.vouch, self.tag), on_close=receiver.unvouch)
        argv = sandbox.wrap(spec.command, env=self.environment(inside), cwd=spec.cwd or WORKSPACE)
        try:
            self.agent = await AgentProcess.start(argv[0], argv[1:], str(sandbox.workspace), child_environment())
        except OSError as exc:
            raise SandboxUnavailable(f"command agent: cannot start the {sandbox.kind} sandbox ({argv[0]}: "
                                     f"{exc.strerror or exc})") from None

    def failure(self, what: str) -> AgentFailed:
        tail = self.agent.stderr.text() if self.agent is not None else ""
        return AgentFailed(f"{Path(self.target.spec.command[-1]).name}: {what}"
                               + (f"; its stderr ended with:\n{tail}" if tail else " (nothing on stderr)"))

    async def ask(self, text: str) -> str:
        """Send one user message, read lines until the reply to it."""
        if self.agent is None:
            await self.begin()
        assert self.agent is not None
        agent, process = self.agent, self.agent.process
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write((json.dumps({"type": "user", "content": text}, ensure_ascii=False) + "\n").encode())
            await process.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            await agent.wait(1.0)
            raise self.failure(f"exited (code {process.returncode}) before reading the user message") from None
        while True:
            try:
                raw = await process.stdout.readline()
            except ValueError:
                raise self.failure(f"wrote a stdout line over {LINE_LIMIT // 2**20} MiB; stdout carries one JSON "
                                   "line per reply: write long logs to stderr") from None
            if not raw:
                await agent.wait(1.0)
                raise self.failure(f"exited (code {process.returncode}) without replying to turn "
                                   f"{len(self.replies) + 1}")
            reply = self._assistant_line(raw)
            if reply is not None:
                return reply

    def _assistant_line(self, raw: bytes) -> str | None:
        """The reply a stdout line carries, None for any other line (logs, progress). A reply without text (its
        content missing, null, or a JSON value that is not a string) is the sample's error naming the line:
        graded, it would be a zero for something the program never said."""
        try:
            data = json.loads(raw.decode("utf-8", "replace"))
        except ValueError:
            return None
        if not (isinstance(data, dict) and data.get("type") == "assistant"):
            return None
        content = data.get("content")
        if isinstance(content, str):
            return content
        line = raw.decode("utf-8", "replace").strip()
        quoted = line if len(line) <= QUOTED else f"{line[:QUOTED]}… [{len(line) - QUOTED:,} more characters]"
        what = "no content" if content is None else f"content that is {JSON_KINDS.get(type(content), 'not text')}"
        raise self.failure(f"replied with {what} to turn {len(self.replies) + 1}: {quoted}; reply with "
                           '{"type": "assistant", "content": "<the answer as text>"}')

    async def close(self, trajectory: Trajectory, failed: bool) -> None:
        if self.replayed is not None:
            observe(trajectory, self.replayed.requests, self.tag)
            return
        exited, telemetry = True, self.target.spec.telemetry
        bound = telemetry and self.agent is not None  # begin told the receiver of it
        try:
            if self.agent is not None:  # the episode ends once the program and all it started are gone
                exited = await self.agent.end(None if failed else self.target.spec.exit_timeout)
        finally:
            if bound:
                receiver_for(self.target).ended(self.tag)
        if failed:
            if bound:
                receiver_for(self.target).forget(self.tag)
            return
        requests = []
        if telemetry:  # its settle wait (up to SETTLE_S) blocks a thread, not every episode's loop
            requests = await asyncio.to_thread(receiver_for(self.target).requests_for, self.tag, opened=self.opened)
        observe(trajectory, requests, self.tag)
        record(self.target.ctx.pool, self.sample_id, self.repeat, Observed(self.replies, requests))  # type: ignore[arg-type]
        if not exited:
            raise self.failure(f"did not exit within exit_timeout ({self.target.spec.exit_timeout:g}s) after its "
                               "stdin was closed, and was killed; exit on end of input")


@TARGETS.register("command", spec=CommandTarget)
class CommandAgent(Target):
    """An agent program run per episode (see the module's docstring)."""

    calls_model = False  # the program calls its own model: model_judge graders need a judge of their own
    binds_telemetry = True  # its receiver takes each episode's spans from that episode's processes alone
    checked_by_building = True  # building finds the program: `evals validate` reports a missing one
    spec: CommandTarget

    def __init__(self, spec: CommandTarget, ctx: TargetContext) -> None:
        super().__init__(spec, ctx)
        if getattr(ctx.pool, "replay", None) is None:  # a replay starts no process: the program may be absent
            self._find_program()
        check_telemetry(spec, ctx.pool)

    def _find_program(self) -> None:
        """The program exists (exit 2 naming it before any sample, not an error per sample)."""
        program, base = self.spec.command[0], self.ctx.base_dir
        relative = "/" in program
        found = (base / program).exists() if relative else shutil.which(program) is not None
        if not found:
            where = "relative to the suite" if relative else "on PATH"
            raise ConfigError(f"target.command: program {program!r} not found ({where}); give its path, e.g. "
                              "command: [python3, agent.py]")
        if self.spec.cwd is not None and not (base / self.spec.cwd).is_dir():
            raise ConfigError(f"target.cwd: {self.spec.cwd!r} is not a folder (relative to the suite)")

    def start(self, sample: Sample, trajectory: Trajectory) -> list[dict[str, Any]]:
        return CommandEpisode(self, sample)

    async def run_turn(self, sample: Sample, turn_index: int, turn: Turn, conversation: list[dict[str, Any]],
                       toolbox: Toolbox, schemas: list[dict[str, Any]], max_steps: int) -> bool:
        assert isinstance(conversation, CommandEpisode)
        if not conversation.replies and conversation.agent is None and conversation.replayed is None:
            conversation.replayed = replayed(self.ctx.pool, str(sample.id), conversation.repeat)  # type: ignore[arg-type]
        if conversation.replayed is not None:
            replay_turn(conversation, turn)
            return True
        conversation.reply(turn, await conversation.ask(turn.user or ""))
        return True

    def stop_reason(self, trajectory: Trajectory, toolbox: Toolbox) -> StopReason:
        return "completed" if trajectory.turns and trajectory.turns[-1].answer else "empty_answer"
