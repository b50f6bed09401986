"""The stdio transport evals-cli runs MCP servers with (POSIX), in place of the SDK's `stdio_client`, for two
things the SDK does not do:

- **One line is bounded before it is parsed.** The SDK joins stdout chunks into a line of any size and parses
  it whole: a tool answering a million integers (a 6 MB line) pushed evals past 2 GB. Here a line past
  `limit` bytes is never held: its bytes are dropped as they come, the transport records why (`Bound`) and
  closes the read side, so the call in flight fails and the connection's owner reports the bound.
- **The server's process group ends with it.** The SDK kills the group only when the server outlives its
  stdin by 2 s; a server that exits cleanly leaves the helpers it started running after the run. Here the
  group gets SIGTERM, then SIGKILL, whenever the server stops, however it stopped.

The rest follows the SDK: the server in a new session (its own process group), newline-delimited JSON-RPC,
close stdin then wait then kill, every wait bounded and shielded from the caller's cancellation.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import IO, Any

import anyio
import anyio.abc

GRACE = 2.0  # seconds for the server to exit after its stdin closes (the SDK's figure)
KILL_WAIT = 2.0  # seconds between SIGTERM and SIGKILL of the group
CHUNK = 65536


@dataclass
class Bound:
    """The size bound of one connection's messages, and what broke it (None: nothing did)."""

    limit: int
    broken: str | None = None

    def exceeded(self, where: str) -> str:
        self.broken = (f"the server sent {where} over {self.limit} bytes (EVALS_MAX_MCP_MESSAGE_BYTES), refused "
                       "before it was parsed; raise EVALS_MAX_MCP_MESSAGE_BYTES, or have the tool answer less")
        return self.broken


class MessageTooLarge(Exception):
    """What a connection failed with when its server sent a message past the bound (Bound.broken says it)."""


class _Lines:
    """Splits stdout into lines, never holding more than `limit` bytes of one: past it the rest of that line
    is dropped up to its newline, and `overflowed` is set."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.buffer = bytearray()
        self.skipping = False
        self.overflowed = False

    def feed(self, chunk: bytes) -> list[bytes]:
        lines: list[bytes] = []
        while chunk:
            end = chunk.find(b"\n")
            piece, chunk = (chunk, b"") if end < 0 else (chunk[:end], chunk[end + 1:])
            if not self.skipping:
                self.buffer += piece
                if len(self.buffer) > self.limit:
                    self.buffer.clear()
                    self.skipping = self.overflowed = True
            if end >= 0:
                if not self.skipping and self.buffer.strip():
                    lines.append(bytes(self.buffer))
                self.buffer.clear()
                self.skipping = False
        return lines


@contextlib.asynccontextmanager
async def bounded_stdio(params: Any, errlog: IO[str], bound: Bound) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's transport streams (read: SessionMessage | Exception, write: SessionMessage) over a server
    started from `params` (an SDK StdioServerParameters)."""
    from mcp.client.stdio import get_default_environment
    from mcp.shared.message import SessionMessage

    process = await anyio.open_process([params.command, *params.args],
                                       env=get_default_environment() | (params.env or {}), stderr=errlog,
                                       cwd=params.cwd, start_new_session=True)
    incoming_w, incoming = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    outgoing, outgoing_r = anyio.create_memory_object_stream[SessionMessage](0)
    stopped = False
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(_read, process, incoming_w, bound)
            group.start_soon(_write, process, outgoing_r, incoming_w)
            try:
                yield incoming, outgoing
            finally:
                incoming.close()
                outgoing.close()
                with anyio.CancelScope(shield=True):  # stopped while the reader drains its stdout
                    await stop_process(process)
                stopped = True
                group.cancel_scope.cancel()
    finally:
        if not stopped:  # a cancelled caller must not leave the server (or its helpers) up
            with anyio.CancelScope(shield=True):
                await stop_process(process)


async def _read(process: anyio.abc.Process, incoming: Any, bound: Bound) -> None:
    """Parse each whole line into a message; a line past the bound closes the read side (the pending calls
    fail at once) and the rest of stdout is drained, so the server never blocks on a full pipe."""
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    assert process.stdout is not None
    lines = _Lines(bound.limit)
    async with incoming:
        with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            while True:
                chunk = await process.stdout.receive(CHUNK)
                for line in lines.feed(chunk):
                    try:
                        message: SessionMessage | Exception = SessionMessage(
                            types.jsonrpc_message_adapter.validate_json(line, by_name=False))
                    except ValueError as exc:
                        message = exc
                    await incoming.send(message)
                if lines.overflowed:
                    bound.exceeded("a message")
                    break
    with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        while True:  # drained until the process closes stdout (it is stopped by then)
            await process.stdout.receive(CHUNK)


async def _write(process: anyio.abc.Process, outgoing: Any, incoming: Any) -> None:
    assert process.stdin is not None
    try:
        async with outgoing:
            async for message in outgoing:
                text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                await process.stdin.send((text + "\n").encode())
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        await incoming.aclose()  # the server stopped reading: the session sees the connection end


async def stop_process(process: anyio.abc.Process) -> None:
    """Close stdin, give the server GRACE seconds to exit, then end its whole process group (SIGTERM, then
    SIGKILL): the helpers it started go with it even when it exited on its own. Idempotent."""
    if process.stdin is not None:
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
    with anyio.move_on_after(GRACE):
        while process.returncode is None:
            await anyio.sleep(0.01)
    await end_group(process.pid, process)
    with anyio.move_on_after(KILL_WAIT):  # not process.wait(): it also waits for EOF on pipes a survivor holds
        while process.returncode is None:
            await anyio.sleep(0.01)
    if process.stdout is not None:
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdout.aclose()


async def end_group(pgid: int, process: anyio.abc.Process | None = None) -> None:
    """SIGTERM to the group, SIGKILL to what is left after KILL_WAIT seconds. The leader's pid is the group's
    id (a new session): never getpgid, which fails once the leader is reaped while members live on."""
    if not _signal_group(pgid, signal.SIGTERM):
        return
    with anyio.move_on_after(KILL_WAIT):
        while _signal_group(pgid, 0):
            if process is not None:
                _ = process.returncode  # reaps a zombie leader, which would keep the group alive
            await anyio.sleep(0.02)
        return
    _signal_group(pgid, signal.SIGKILL)


def _signal_group(pgid: int, sig: int) -> bool:
    """Send `sig` to the group; False once no member is left."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # a zombie or a member we may not signal: not proof the group is gone
    return True
