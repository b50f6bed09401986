"""One bounded command on the host, as every kind runs its `exec`: its output kept up to a bound (the rest read and
dropped, so the command never blocks on a full pipe), and at its timeout its whole process group killed. The kinds
give it the argument vector that enters their sandbox; killing that entry process (bwrap, `engine exec`) is what
ends the tree inside, each kind saying how (`on_timeout`)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence

from evals_cli.sandbox.base import ExecResult

CHUNK = 65536
KILL_WAIT = 5.0  # seconds for a killed group's leader to be reaped


async def run_bounded(argv: Sequence[str], *, timeout: float, stdin: bytes | None, max_output: int,
                      env: Mapping[str, str] | None = None, cwd: str | None = None,
                      on_timeout: Callable[[], Awaitable[None]] | None = None) -> ExecResult:
    """Run `argv` to its end or `timeout`; OSError when it cannot be started (the caller says what is missing)."""
    started = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=dict(env) if env is not None else None,
        cwd=cwd, start_new_session=True)
    out, err = _Kept(max_output), _Kept(max_output)
    timed_out = False
    try:
        await asyncio.wait_for(_communicate(proc, stdin, out, err), timeout)
    except TimeoutError:
        timed_out = True
        if on_timeout is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(on_timeout(), KILL_WAIT)
        await kill_group(proc)
    except BaseException:  # cancelled (sample_timeout, Ctrl-C): nothing it started outlives the caller
        await asyncio.shield(kill_group(proc))
        raise
    return ExecResult(exit_code=None if timed_out else proc.returncode, stdout=out.text(), stderr=err.text(),
                      timed_out=timed_out, cut=out.cut or err.cut, seconds=time.monotonic() - started)


class _Kept:
    """The head of one stream, up to `limit` bytes; what came after is counted, not kept."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.dropped = 0

    @property
    def cut(self) -> bool:
        return self.dropped > 0

    def feed(self, chunk: bytes) -> None:
        room = self.limit - len(self.data)
        self.data += chunk[:max(room, 0)]
        self.dropped += max(len(chunk) - max(room, 0), 0)

    def text(self) -> str:
        text = self.data.decode("utf-8", errors="replace")
        return text + (f"\n[... {self.dropped:,} more bytes cut]" if self.dropped else "")


async def _communicate(proc: asyncio.subprocess.Process, stdin: bytes | None, out: _Kept, err: _Kept) -> None:
    async def pump(stream: asyncio.StreamReader | None, kept: _Kept) -> None:
        while stream is not None and (chunk := await stream.read(CHUNK)):
            kept.feed(chunk)

    async def feed() -> None:
        if proc.stdin is None:
            return
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            proc.stdin.write(stdin or b"")
            await proc.stdin.drain()
        proc.stdin.close()

    await asyncio.gather(feed(), pump(proc.stdout, out), pump(proc.stderr, err))
    await proc.wait()


async def kill_group(proc: asyncio.subprocess.Process) -> None:
    """SIGKILL to the process's group (it leads a session of its own), then its exit reaped within a bound."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(Exception):
        await asyncio.wait_for(proc.wait(), KILL_WAIT)
