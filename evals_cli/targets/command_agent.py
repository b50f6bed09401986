"""`kind: command`: any agent program, started once per episode and spoken to in JSON lines on stdin/stdout.

evals-cli writes `{"type": "user", "content": TEXT}` per user turn (scripted, per-turn or simulated users alike)
and reads the reply to that turn as the next stdout line `{"type": "assistant", "content": TEXT}` (other stdout
lines are ignored; stderr is kept, its tail shown when the episode fails). At the episode's end stdin is closed
and the program gets `exit_timeout` seconds to exit (and flush its telemetry); then its process group is killed.
The program is pointed at the run's OTLP receiver the usual way (OTEL_EXPORTER_OTLP_* variables) and tagged
with `evals.episode=<id>` in OTEL_RESOURCE_ATTRIBUTES, so an agent instrumented as usual needs no change; its
spans rebuild the episode's trajectory (targets/external.py). The sample's timeout bounds it all.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import uuid
from collections import deque
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator

from evals_cli.endpoints.errors import InvalidResponse
from evals_cli.errors import ConfigError
from evals_cli.models.sample import Sample
from evals_cli.models.trajectory import StopReason, Trajectory, Turn
from evals_cli.settings import child_environment
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

LINE_LIMIT = 4 * 1024 * 1024  # one stdout line; a longer one fails the episode instead of filling memory
STDERR_TAIL = 40  # lines of stderr kept for the error message


class CommandTarget(ExternalSpec):
    """An agent program run once per episode, talking JSON lines on stdin/stdout."""

    kind: Literal["command"] = "command"
    command: list[str] = Field(min_length=1, description="The program and its arguments, e.g. "
                               "[python, agent.py]; relative paths are the suite's folder's.")
    env: dict[str, str] = Field(default_factory=dict, description="Environment variables set for the program (on "
                                "top of evals-cli's own environment); prefer ${VAR} for secrets.")
    cwd: str | None = Field(default=None, description="Working folder, relative to the suite (default: the episode's "
                            "workspace when it has one, else the suite's folder).")
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
        self.process: asyncio.subprocess.Process | None = None
        self.stderr: deque[str] = deque(maxlen=STDERR_TAIL)
        self._stderr_task: asyncio.Task[None] | None = None

    def environment(self) -> dict[str, str]:
        spec, env = self.target.spec, {**child_environment(), **self.target.spec.env}
        env["EVALS_EPISODE"] = self.tag
        if spec.telemetry:
            endpoint = receiver_for(self.target).endpoint
            env.update(OTEL_EXPORTER_OTLP_ENDPOINT=endpoint, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=f"{endpoint}/v1/traces",
                       OTEL_EXPORTER_OTLP_PROTOCOL=env.get("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
                       OTEL_TRACES_EXPORTER="otlp", OTEL_BSP_SCHEDULE_DELAY=env.get("OTEL_BSP_SCHEDULE_DELAY", "200"))
            attributes = env.get("OTEL_RESOURCE_ATTRIBUTES", "")
            env["OTEL_RESOURCE_ATTRIBUTES"] = ",".join(a for a in (attributes, f"evals.episode={self.tag}") if a)
        return env

    async def begin(self) -> None:
        spec, base = self.target.spec, self.target.ctx.base_dir
        cwd = (base / spec.cwd) if spec.cwd else (self.workspace or base)
        program = spec.command[0]
        if "/" in program and not Path(program).is_absolute():
            program = str((base / program).resolve())
        try:
            self.process = await asyncio.create_subprocess_exec(
                program, *spec.command[1:], stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, cwd=str(cwd), env=self.environment(), limit=LINE_LIMIT,
                start_new_session=True)
        except OSError as exc:
            raise InvalidResponse(f"command agent: cannot start {spec.command[0]!r} in {cwd}: {exc.strerror or exc}; "
                                  "check target.command and target.cwd") from None
        self._stderr_task = asyncio.create_task(self._keep_stderr())

    async def _keep_stderr(self) -> None:
        assert self.process is not None and self.process.stderr is not None
        with contextlib.suppress(ValueError, OSError):
            async for raw in self.process.stderr:
                self.stderr.append(raw.decode("utf-8", "replace").rstrip("\n"))

    def failure(self, what: str) -> InvalidResponse:
        tail = "\n".join(self.stderr)
        return InvalidResponse(f"{Path(self.target.spec.command[-1]).name}: {what}"
                               + (f"; its stderr ended with:\n{tail}" if tail else " (nothing on stderr)"))

    async def ask(self, text: str) -> str:
        """Send one user message, read lines until the reply to it."""
        if self.process is None:
            await self.begin()
        process = self.process
        assert process is not None and process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write((json.dumps({"type": "user", "content": text}, ensure_ascii=False) + "\n").encode())
            await process.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            await self._wait_exit(1.0)
            raise self.failure(f"exited (code {process.returncode}) before reading the user message") from None
        while True:
            try:
                raw = await process.stdout.readline()
            except ValueError:
                raise self.failure(f"wrote a stdout line over {LINE_LIMIT} bytes") from None
            if not raw:
                await self._wait_exit(1.0)
                raise self.failure(f"exited (code {process.returncode}) without replying to turn "
                                   f"{len(self.replies) + 1}")
            reply = _assistant_line(raw)
            if reply is not None:
                return reply

    async def _wait_exit(self, bound: float) -> bool:
        if self.process is None:
            return True
        try:
            await asyncio.wait_for(self.process.wait(), bound)
            return True
        except TimeoutError:
            return False

    async def close(self, trajectory: Trajectory, failed: bool) -> None:
        if self.replayed is not None:
            observe(trajectory, self.replayed.requests, self.tag)
            return
        process, exited = self.process, True
        if process is not None:
            if process.stdin is not None and not process.stdin.is_closing():
                process.stdin.close()
            exited = (not failed) and await self._wait_exit(self.target.spec.exit_timeout)
            if not exited:
                await _kill_group(process)
            if self._stderr_task is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self._stderr_task, 1.0)
        if failed:
            return
        requests = receiver_for(self.target).requests_for(self.tag) if self.target.spec.telemetry else []
        observe(trajectory, requests, self.tag)
        record(self.target.ctx.pool, self.sample_id, self.repeat, Observed(self.replies, requests))  # type: ignore[arg-type]
        if not exited:
            raise self.failure(f"did not exit within exit_timeout ({self.target.spec.exit_timeout:g}s) after its "
                               "stdin was closed, and was killed; exit on end of input")


def _assistant_line(raw: bytes) -> str | None:
    """The reply a stdout line carries, None for any other line (logs, progress)."""
    try:
        data = json.loads(raw.decode("utf-8", "replace"))
    except ValueError:
        return None
    if isinstance(data, dict) and data.get("type") == "assistant":
        content = data.get("content")
        return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    return None


async def _kill_group(process: asyncio.subprocess.Process) -> None:
    """The program and whatever it started: SIGTERM to its group, SIGKILL if it is still there after 2 s."""
    for sig, bound in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 2.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, sig)
        try:
            await asyncio.wait_for(process.wait(), bound)
            return
        except TimeoutError:
            continue


@TARGETS.register("command", spec=CommandTarget)
class CommandAgent(Target):
    """An agent program run per episode (see the module's docstring)."""

    calls_model = False  # the program calls its own model: model_judge graders need a judge of their own
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
        if not conversation.replies and conversation.process is None and conversation.replayed is None:
            conversation.replayed = replayed(self.ctx.pool, str(sample.id), conversation.repeat)  # type: ignore[arg-type]
        if conversation.replayed is not None:
            replay_turn(conversation, turn)
            return True
        conversation.reply(turn, await conversation.ask(turn.user or ""))
        return True

    def stop_reason(self, trajectory: Trajectory, toolbox: Toolbox) -> StopReason:
        return "completed" if trajectory.turns and trajectory.turns[-1].answer else "empty_answer"
