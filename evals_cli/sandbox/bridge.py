"""The host's end of a sandbox's way to a loopback service (the run's OTLP receiver): a Unix socket in the
sandbox's own folder, every connection to it copied both ways to one host:port. Only that port is reached: the
sandbox gets the socket, never the host's network (forward.py is the other end, inside)."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable
from pathlib import Path

CHUNK = 65536


Vouch = Callable[[tuple[str, int]], None]


class Bridge:
    """A Unix socket at `path` leading to `host:port`; `close` stops it and every connection through it. Each
    connection it opens upstream is told to `on_connect` (its local address) before a byte goes through, and to
    `on_close` when it ends: the run's receiver takes what comes from it as the sandbox's episode's
    (traces/receiver.py: vouch), since the connection is this process's, not one of the episode's processes'."""

    def __init__(self, path: Path, host: str, port: int, on_connect: Vouch | None = None,
                 on_close: Vouch | None = None) -> None:
        self.path, self.host, self.port = path, host, port
        self.on_connect, self.on_close = on_connect, on_close
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def open(self, mode: int = 0o666) -> None:
        self._server = await asyncio.start_unix_server(self._connection, path=str(self.path))
        os.chmod(self.path, mode)  # the sandbox's user (not this process's) connects to it

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
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
