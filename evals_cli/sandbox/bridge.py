"""The host's end of a sandbox's way to a loopback service (the run's OTLP receiver): a Unix socket in the
sandbox's own folder, every connection to it copied both ways to one host:port. Only that port is reached: the
sandbox gets the socket, never the host's network (forward.py is the other end, inside). The socket is in a
folder only the sandbox's user may enter, and each connection's peer (SO_PEERCRED) must be one of the sandbox's
processes (`Peer`): what comes through is vouched as the episode's, so no other process may speak there."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import struct
from collections.abc import Callable
from pathlib import Path

CHUNK = 65536
PEERCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid


Vouch = Callable[[tuple[str, int]], None]
Peer = Callable[[int, int], bool]  # (pid, uid) of a connecting process: True when it is one of the sandbox's


def pid_namespace(pid: int) -> int | None:
    """The inode of `pid`'s pid namespace (None: the process is gone or not ours to see)."""
    try:
        return os.stat(f"/proc/{pid}/ns/pid").st_ino
    except OSError:
        return None


def peer(sock: socket.socket | None) -> tuple[int, int] | None:
    """The (pid, uid) of the process at the other end of a Unix socket, as the kernel saw it connect."""
    if sock is None:
        return None
    try:
        pid, uid, _ = PEERCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, PEERCRED.size))
    except OSError:
        return None
    return pid, uid


class Bridge:
    """A Unix socket at `path` leading to `host:port`; `close` stops it and every connection through it. Each
    connection it opens upstream is told to `on_connect` (its local address) before a byte goes through, and to
    `on_close` when it ends: the run's receiver takes what comes from it as the sandbox's episode's
    (traces/receiver.py: vouch), since the connection is this process's, not one of the episode's processes'."""

    def __init__(self, path: Path, host: str, port: int, on_connect: Vouch | None = None,
                 on_close: Vouch | None = None, *, allow: Peer, owner: int | None = None) -> None:
        self.path, self.host, self.port = path, host, port
        self.on_connect, self.on_close = on_connect, on_close
        self.allow, self.owner = allow, owner  # owner: the sandbox's user id when it is not this process's
        self.refused = 0  # connections from a process not the sandbox's, closed unread
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def open(self, mode: int = 0o600) -> None:
        self._server = await asyncio.start_unix_server(self._connection, path=str(self.path))
        if self.owner is not None:  # the sandbox's user (not this process's) connects to it
            os.chown(self.path, self.owner, self.owner)
        os.chmod(self.path, mode)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        who = peer(writer.get_extra_info("socket"))
        if who is None or not self.allow(*who):
            self.refused += 1
            writer.close()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(self.host, self.port)
        except OSError:
            writer.close()
            return
        local = up_writer.get_extra_info("sockname")
        client = (str(local[0]), int(local[1])) if isinstance(local, tuple) else None
        if client is not None and self.on_connect is not None:
            self.on_connect(client)
        tasks = []
        for source, sink in ((reader, up_writer), (up_reader, writer)):
            task = asyncio.create_task(_copy(source, sink))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            tasks.append(task)
        if client is not None and self.on_close is not None:
            done = self.on_close
            tasks[1].add_done_callback(lambda _: done(client))  # the upstream's answers ended: it is closed

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for task in list(self._tasks):
            task.cancel()
        with contextlib.suppress(OSError):
            self.path.unlink()


async def _copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    try:
        while chunk := await source.read(CHUNK):
            sink.write(chunk)
            await sink.drain()
    except (OSError, asyncio.IncompleteReadError):
        pass
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            sink.close()
