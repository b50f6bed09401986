"""The computer of one run and of each episode: computer tool calls and sandbox checks answered in the episode's
sandbox, recorded with --record, and served from the recording with --replay (no sandbox at all then).

`Computer` is the run's (made once, with the recording file's reader and writer); `ComputerSession` is one
(sample, repeat)'s, over the sandbox the episode hands it. A sandbox that cannot be used raises
`SandboxUnavailable` (the sample errors, category `sandbox`): the agent did nothing wrong, and the tool's answer
would grade the machine, not the agent. What the agent sent wrongly is a tool error it reads and may correct.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evals_cli.computer.bash import MAX_OUTPUT, BashRefused, bash_argv, bash_text
from evals_cli.computer.confined import PathRefused, Workspace
from evals_cli.computer.editor import EditRefused, edit
from evals_cli.computer.recording import ComputerReplay, ComputerTape
from evals_cli.endpoints.context import CALL_CONTEXT
from evals_cli.endpoints.secrets import Redactor
from evals_cli.models.tools import ToolSpec
from evals_cli.sandbox.base import WORKSPACE, ExecResult, Sandbox, SandboxUnavailable

CHECK_OUTPUT = 1024 * 1024  # bytes a check keeps of each stream: its end (a test run's summary) is what is shown
RECORDED_TAIL = 64 * 1024  # characters of the end of each stream a recording keeps of a check: what a grade shows


class Computer:
    """The run's side: the recording written (`record`) or read (`replay`, when no sandbox is ever made)."""

    def __init__(self, *, record: Path | None = None, replay: Path | None = None,
                 redact: Redactor | None = None) -> None:
        self.redact = redact if redact is not None else Redactor()
        self.tape = ComputerTape(record, self.redact) if record is not None else None
        self.replay = ComputerReplay(replay, self.redact) if replay is not None else None

    @property
    def replaying(self) -> bool:
        return self.replay is not None

    def session(self, sample_id: str, repeat: int, sandbox: Sandbox | None) -> ComputerSession:
        return ComputerSession(self, sample_id, repeat, sandbox)

    def stand_in(self, files: Mapping[str, str]) -> Sandbox:
        """A `kind: none` sandbox over a fresh folder holding `files`, for an episode handed none."""
        from evals_cli.mcp.workspace import fill
        from evals_cli.sandbox.host import HostSandbox

        sandbox = HostSandbox()
        try:
            fill(sandbox.workspace, dict(files))
        except BaseException:
            import shutil

            shutil.rmtree(sandbox.workspace, ignore_errors=True)
            raise
        return sandbox


class ComputerSession:
    """One episode's computer: `call` answers a computer tool call, `check` runs a check after the episode."""

    def __init__(self, computer: Computer, sample_id: str, repeat: int, sandbox: Sandbox | None) -> None:
        self.computer = computer
        self.sample_id = sample_id
        self.repeat = repeat
        self.sandbox = sandbox
        self._owned = False  # the sandbox is this session's own stand-in (closed by `close`)

    async def opened(self, files: Mapping[str, str]) -> None:
        """The episode's world is built (`files`): with no sandbox handed in, and not replaying, a `kind: none`
        stand-in over those files."""
        if self.sandbox is None and not self.computer.replaying:
            self.sandbox = self.computer.stand_in(files)
            self._owned = True

    async def finished(self, files: dict[str, str]) -> dict[str, str]:
        """The workspace's files as the episode left them: read back from the sandbox (recorded with --record),
        or the recorded ones under --replay (`files`, the world's, when the recording holds none)."""
        request = self._request()
        replay = self.computer.replay
        if replay is not None:
            if not replay.has("workspace", request):
                return files
            found = replay.next("workspace", request, f"workspace of sample {self.sample_id}")
            return {str(k): str(v) for k, v in dict(found.get("files") or {}).items()}
        if self.sandbox is None:
            return files
        from evals_cli.mcp.workspace import read_back

        read = await asyncio.to_thread(read_back, self.sandbox.workspace)
        self._record("workspace", request, {"files": read})
        return read

    async def close(self) -> None:
        if self._owned and self.sandbox is not None:
            self._owned = False
            await self.sandbox.close()

    @property
    def available(self) -> bool:
        """Whether checks can be answered: a sandbox to run them in, or a recording to read them from."""
        return self.sandbox is not None or self.computer.replaying

    @property
    def workspace(self) -> Path | None:
        return self.sandbox.workspace if self.sandbox is not None else None

    def _request(self, **fields: Any) -> dict[str, Any]:
        return {"sample": self.sample_id, "repeat": self.repeat, **fields}

    def _inside(self, text: str) -> str:
        """Host paths of the workspace written as /workspace: the agent's view of its machine, and no path of
        this machine in a recording."""
        if self.sandbox is None:
            return text
        return text.replace(str(self.sandbox.workspace), WORKSPACE)

    def _sandbox(self, what: str) -> Sandbox:
        if self.sandbox is None:
            raise SandboxUnavailable(f"sample {self.sample_id}: {what} needs the episode's sandbox, and the episode "
                                     "has none; give the suite a sandbox: block")
        return self.sandbox

    async def call(self, spec: ToolSpec, arguments: dict[str, Any]) -> tuple[str, bool]:
        """(text, is_error) of one computer tool call; SandboxUnavailable when the sandbox failed."""
        name = spec.computer or ""
        request = self._request(tool=name, arguments=arguments)
        replay = self.computer.replay
        if replay is not None:
            found = replay.next(name, request, f"{name} call of sample {self.sample_id} (repeat {self.repeat}): "
                                f"{json.dumps(arguments, ensure_ascii=False)[:200]}")
            _raise_if_unavailable(found)
            return str(found.get("text", "")), bool(found.get("is_error"))
        try:
            text, is_error = await (self._bash(arguments) if name == "bash" else self._edit(arguments))
        except SandboxUnavailable as exc:
            self._record(name, request, {"unavailable": str(exc)})
            raise
        text = self._inside(text)
        self._record(name, request, {"text": text, "is_error": is_error})
        return text, is_error

    async def _bash(self, arguments: dict[str, Any]) -> tuple[str, bool]:
        try:
            argv, timeout, note = bash_argv(arguments)
        except BashRefused as exc:
            return f"Error: {exc}", True
        result = await self._sandbox("the bash tool").exec(argv, timeout=timeout, cwd=WORKSPACE,
                                                            max_output=MAX_OUTPUT)
        return bash_text(result, timeout, note)

    async def _edit(self, arguments: dict[str, Any]) -> tuple[str, bool]:
        root = Workspace(self._sandbox("the edit tool").workspace)
        try:  # file work off the event loop: the other episodes go on meanwhile
            return await asyncio.to_thread(edit, root, arguments), False
        except (PathRefused, EditRefused) as exc:
            return f"Error: {exc}", True

    async def check(self, name: str, argv: Sequence[str], *, timeout: float,
                    env: Mapping[str, str] | None = None) -> ExecResult:
        """One check run inside after the episode, recorded or replayed; SandboxUnavailable when it cannot run
        (no sandbox, the program missing, the sandbox failed), which is never a pass or a fail."""
        request = self._request(check=name, argv=list(argv))
        replay = self.computer.replay
        if replay is not None:
            found = replay.next("check", request, f"check {name} of sample {self.sample_id} (repeat {self.repeat})")
            _raise_if_unavailable(found)
            return ExecResult(exit_code=found.get("exit_code"), stdout=str(found.get("stdout", "")),
                              stderr=str(found.get("stderr", "")), timed_out=bool(found.get("timed_out")),
                              cut=bool(found.get("cut")), seconds=float(found.get("seconds") or 0.0))
        try:
            result = await self._sandbox(f"check {name}").exec(list(argv), timeout=timeout, env=env,
                                                                cwd=WORKSPACE, max_output=CHECK_OUTPUT)
        except SandboxUnavailable as exc:
            self._record("check", request, {"unavailable": str(exc)})
            raise
        result = ExecResult(exit_code=result.exit_code, stdout=self._inside(result.stdout),
                            stderr=self._inside(result.stderr), timed_out=result.timed_out, cut=result.cut,
                            seconds=result.seconds)
        self._record("check", request, {"exit_code": result.exit_code, "stdout": result.stdout[-RECORDED_TAIL:],
                                        "stderr": result.stderr[-RECORDED_TAIL:], "timed_out": result.timed_out,
                                        "cut": result.cut or max(len(result.stdout), len(result.stderr)) >
                                        RECORDED_TAIL, "seconds": round(result.seconds, 3)})
        return result

    def _record(self, op: str, request: dict[str, Any], result: dict[str, Any]) -> None:
        if self.computer.tape is not None:
            self.computer.tape.write(op, request, result, CALL_CONTEXT.get())


def _raise_if_unavailable(found: dict[str, Any]) -> None:
    """A recorded call whose sandbox failed fails the same way in the replay."""
    if "unavailable" in found:
        raise SandboxUnavailable(str(found["unavailable"]))
