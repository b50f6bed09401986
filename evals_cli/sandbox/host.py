"""`kind: none`: commands run on the host, in the episode's folder, with no isolation at all. What it still owes
every consumer of the `Sandbox` protocol: bounded time (the whole process group killed at the timeout, so a
command that forks a sleeper does not outlive its call) and bounded output (the head kept, the cut said).

A path inside (`/workspace/src`) is the same path under `workspace` on the host; a command that writes
`/workspace/...` literally reaches the host's own `/workspace`, which is why `none` is for trusted agents only.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import posixpath
import shutil
import signal
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from evals_cli.sandbox.base import MAX_OUTPUT, WORKSPACE, ExecResult, SandboxUnavailable
from evals_cli.settings import child_environment

CUT_NOTE = "\n[output cut: more than {limit} bytes; the first {limit} kept]"
PIPE_GRACE_S = 1.0  # how long output is still read after the command ended, from what it left running
_BASE_ENV = ("PATH", "LANG", "LC_ALL", "TZ", "TERM")  # what a command needs of the host's environment to run


def host_path(workspace: Path, inside: str) -> Path:
    """The host path of a working directory given as inside (`/workspace/sub` or `sub`); ValueError outside."""
    normal = posixpath.normpath(posixpath.join(WORKSPACE, inside))
    if normal != WORKSPACE and not normal.startswith(WORKSPACE + "/"):
        raise ValueError(f"{inside!r} is outside {WORKSPACE}")
    return workspace / normal[len(WORKSPACE):].lstrip("/")


class _Bounded:
    """One output stream read to its end, keeping at most `limit` bytes (the rest is read and dropped, so a
    command writing without end never blocks on a full pipe nor fills the memory)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.kept = bytearray()
        self.cut = False

    async def drain(self, stream: asyncio.StreamReader | None) -> None:
        if stream is None:
            return
        while chunk := await stream.read(65536):
            room = self.limit - len(self.kept)
            if room > 0:
                self.kept += chunk[:room]
            if len(chunk) > max(room, 0):
                self.cut = True

    def text(self) -> str:
        said = CUT_NOTE.format(limit=self.limit) if self.cut else ""
        return self.kept.decode("utf-8", errors="replace") + said


class HostSandbox:
    """One episode's folder on the host (`workspace`: given, or a fresh temporary one this sandbox removes)."""

    kind = "none"

    def __init__(self, workspace: Path | None = None) -> None:
        self._owned = workspace is None
        self.workspace = Path(tempfile.mkdtemp(prefix="evals-sandbox-")) if workspace is None else workspace
        self._running: set[asyncio.subprocess.Process] = set()
        self._closed = False

    def _env(self, env: Mapping[str, str] | None) -> dict[str, str]:
        here = child_environment()
        base = {k: here[k] for k in _BASE_ENV if k in here}
        return {**base, "HOME": str(self.workspace), **(env or {})}

    async def exec(self, argv: Sequence[str], *, timeout: float, stdin: bytes | None = None,
                   env: Mapping[str, str] | None = None, cwd: str = WORKSPACE,
                   max_output: int = MAX_OUTPUT) -> ExecResult:
        if self._closed:
            raise SandboxUnavailable("the sandbox is closed")
        if not argv:
            raise ValueError("exec: an empty argument vector")
        started = time.monotonic()
        try:
            process = await asyncio.create_subprocess_exec(
                *argv, cwd=host_path(self.workspace, cwd), env=self._env(env), start_new_session=True,
                stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        except FileNotFoundError as exc:  # the program (or the folder) is missing: it cannot run at all
            raise SandboxUnavailable(f"cannot run {argv[0]!r}: {exc.strerror or 'not found'}") from None
        except PermissionError as exc:
            raise SandboxUnavailable(f"cannot run {argv[0]!r}: {exc.strerror or 'permission denied'}") from None
        self._running.add(process)
        out, err = _Bounded(max_output), _Bounded(max_output)
        timed_out = False
        try:
            if stdin is not None and process.stdin is not None:
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    process.stdin.write(stdin)
                    await process.stdin.drain()
                process.stdin.close()
            drains = asyncio.gather(out.drain(process.stdout), err.drain(process.stderr))
            try:
                async with asyncio.timeout(timeout):
                    await _exited(process)
            except TimeoutError:
                timed_out = True
            # a background child may hold the pipes open past the command's end: it gets a moment to finish
            # writing, then the group is killed, which closes them
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(drains), PIPE_GRACE_S)
            _kill_group(process)
            await drains
        finally:
            _kill_group(process)  # whatever it left running (a background child) ends with the call
            with contextlib.suppress(ProcessLookupError):
                await asyncio.shield(process.wait())
            self._running.discard(process)
        return ExecResult(exit_code=None if timed_out else process.returncode, stdout=out.text(), stderr=err.text(),
                          timed_out=timed_out, cut=out.cut or err.cut, seconds=time.monotonic() - started)

    def wrap(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: str = WORKSPACE) -> list[str]:
        return list(argv)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for process in list(self._running):
            _kill_group(process)
        if self._owned:
            shutil.rmtree(self.workspace, ignore_errors=True)


async def _exited(process: asyncio.subprocess.Process) -> None:
    """The command itself ended, whatever it left running: asyncio's `wait` also waits for every pipe to close,
    which a background child (`sleep 300 &`) holds open; a pidfd says when the process alone is done."""
    try:
        fd = os.pidfd_open(process.pid)
    except (AttributeError, OSError):  # no pidfd here (an old kernel): the pipes' end it is
        await process.wait()
        return
    loop = asyncio.get_running_loop()
    done = loop.create_future()

    def exited() -> None:
        if not done.done():
            done.set_result(None)

    loop.add_reader(fd, exited)
    try:
        await done
    finally:
        loop.remove_reader(fd)
        os.close(fd)


def _kill_group(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
