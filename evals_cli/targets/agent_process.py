"""The process of one command-agent episode: started under its reaper (targets/reaper.py) so that nothing it starts
outlives the episode, its stderr kept as a bounded tail, its output pipes always read so it never blocks on them.

On Linux the program runs below a per-episode reaper process (a child subreaper: see reaper.py for why, and for why
not a PID namespace); what evals holds is the reaper, whose exit code is the agent's and whose exit means the
agent and everything it started are gone. Elsewhere (no prctl) the program is started directly as the leader of a
new session and, when it must be stopped, its process group is killed: a process that left the group, or a
background one still holding stdout after the agent exited, is not reached there.

The reaper's death signal (it stops the episode when evals dies) follows the thread that started it: episodes are
started on the run's event loop thread, which lives as long as the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path

from evals_cli.targets.byte_tail import ByteTail
from evals_cli.targets.reaper import SWEEP_BOUND

LINE_LIMIT = 4 * 1024 * 1024  # one stdout line; a longer one fails the episode instead of filling memory
READ_CHUNK = 64 * 1024
KILL_GRACE = 2.0  # seconds between SIGTERM and SIGKILL when an agent is stopped
REAPER = Path(__file__).with_name("reaper.py")
REAPER_BOUND = KILL_GRACE + SWEEP_BOUND + 3.0  # how long a stopped reaper may take: its grace, its sweep, a margin
REAPED = sys.platform.startswith("linux") and bool(sys.executable) and not getattr(sys, "frozen", False)


class AgentProcess:
    """A started agent program (under its reaper where there is one) and the tail of its stderr."""

    def __init__(self, process: asyncio.subprocess.Process, reaped: bool) -> None:
        self.process = process
        self.reaped = reaped
        self.stderr = ByteTail()
        self._stderr_task = asyncio.create_task(self._keep_stderr())

    @classmethod
    async def start(cls, program: str, args: list[str], cwd: str, env: dict[str, str]) -> AgentProcess:
        """The program started with pipes on stdin, stdout and stderr; OSError when it cannot be executed (a
        missing cwd, program or permission), as for any process start."""
        if not REAPED:  # no prctl, or no interpreter to run the reaper with (a frozen build)
            return cls(await _spawn([program, *args], cwd, env, ()), reaped=False)
        status, status_w = os.pipe()
        try:
            process = await _spawn([sys.executable, "-I", "-S", str(REAPER), str(status_w), str(os.getpid()),
                                    f"{KILL_GRACE:g}", "--", program, *args], cwd, env, (status_w,))
        except BaseException:
            os.close(status)
            raise
        finally:
            os.close(status_w)
        agent = cls(process, reaped=True)
        try:
            error = await _exec_error(status)
        except BaseException:  # cut off meanwhile (sample_timeout): the episode holds no process to end yet
            await agent.end(None)
            raise
        if error:
            await agent.end(None)
            raise OSError(error, os.strerror(error))
        return agent

    async def _keep_stderr(self) -> None:
        """Read in chunks to the end, whatever the line lengths: an unread stderr pipe fills and blocks the agent."""
        assert self.process.stderr is not None
        with contextlib.suppress(OSError):
            while chunk := await self.process.stderr.read(READ_CHUNK):
                self.stderr.feed(chunk)

    async def wait(self, bound: float) -> bool:
        """Whether the process exited (with its pipes closed: under the reaper, its whole tree gone) within bound."""
        return await _exited(self.process, bound)

    async def end(self, exit_timeout: float | None) -> bool:
        """The episode's end: stdin closed, up to exit_timeout seconds (None: none) for the program to exit by itself,
        then stopped. Stdout is read and dropped meanwhile (a program flushing its logs must not block on a full
        pipe). True when it exited by itself."""
        process = self.process
        if process.stdin is not None and not process.stdin.is_closing():
            process.stdin.close()
        drain = asyncio.create_task(_drain(process.stdout))
        try:
            exited = exit_timeout is not None and await self.wait(exit_timeout)
            if not exited:
                await self.stop()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._stderr_task, 1.0)
        finally:
            drain.cancel()
        return exited

    async def stop(self) -> None:
        """Under the reaper: SIGTERM to it (it sends SIGTERM to the agent's whole tree, gives the agent KILL_GRACE
        seconds to exit, then SIGKILLs what is left); a reaper that does not exit within its bound, or no reaper,
        has its process group killed."""
        if self.reaped:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(signal.SIGTERM)
            if await self.wait(REAPER_BOUND):
                return
        await _kill_group(self.process)


async def _spawn(argv: list[str], cwd: str, env: dict[str, str], pass_fds: tuple[int, ...]) -> asyncio.subprocess.Process:
    pipe = asyncio.subprocess.PIPE
    return await asyncio.create_subprocess_exec(*argv, stdin=pipe, stdout=pipe, stderr=pipe, cwd=cwd, env=env,
                                                limit=LINE_LIMIT, start_new_session=True, pass_fds=pass_fds)


async def _exec_error(fd: int) -> int:
    """What the reaper says on its status pipe: 0 when the program was executed (the pipe closes with nothing
    written), else the errno of the failure (one short write, then the pipe closes)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    pipe = os.fdopen(fd, "rb", buffering=0)
    try:
        transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
    except BaseException:
        pipe.close()
        raise
    try:
        said = await reader.read(64)
    finally:
        transport.close()
    return int(said) if said.strip().isdigit() else 0


async def _exited(process: asyncio.subprocess.Process, bound: float) -> bool:
    try:
        await asyncio.wait_for(process.wait(), bound)
        return True
    except TimeoutError:
        return False


async def _drain(stream: asyncio.StreamReader | None) -> None:
    with contextlib.suppress(OSError):
        while stream is not None and await stream.read(READ_CHUNK):
            pass


async def _kill_group(process: asyncio.subprocess.Process) -> None:
    """The process and its group: SIGTERM, then SIGKILL if it is still there after KILL_GRACE."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, sig)
        if await _exited(process, KILL_GRACE):
            return
