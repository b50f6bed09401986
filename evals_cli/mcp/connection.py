"""One live connection to one MCP server, owned by one task of the hub's event loop.

The SDK's `Client` is an async context manager holding an anyio task group: it must be entered and left by the
same task. So one task (`_own`) enters it and waits to be told to stop, while calls come from any task of the
same loop (a session serves concurrent requests). Leaving it runs the SDK's bounded shutdown (close stdin, wait,
kill the process group), which is what keeps a stopped run free of orphan servers.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
from dataclasses import dataclass, field
from typing import IO, Any

from evals_cli.errors import ToolServerFailed
from evals_cli.mcp.stdio import Bound, MessageTooLarge

MAX_PAGES = 100  # tools/list pages followed; a server whose cursor never ends cannot hang the run
STDERR_TAIL = 1500  # characters of a failed server's stderr quoted in the error


@dataclass
class Launch:
    """How to reach one server, with `{workspace}` already put in."""

    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None

    def describe(self) -> str:
        if self.url is not None:
            return self.url
        return " ".join([self.command or "", *self.args])[:200]


class Connection:
    """A started server. `start`, `list_tools`, `call` and `stop` run on the hub's loop."""

    def __init__(self, name: str, launch: Launch, timeout: float, block: str = "mcp_servers") -> None:
        self.name = name
        self.block = block  # where the server is declared: mcp_servers, or user_mcp_servers (the user's)
        self.launch = launch
        self.timeout = timeout
        self.client: Any = None
        self.failure: BaseException | None = None
        self._stderr: IO[str] | None = None
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[None] | None = None
        self._stop = asyncio.Event()
        self._tail: str | None = None  # the stderr tail, kept when the file is closed
        self.bound = Bound(_message_limit())  # what one message may take before it is parsed

    def _target(self) -> Any:
        if self.launch.url is not None:
            from mcp.client.streamable_http import streamable_http_client

            from evals_cli.mcp.http import bounded_client

            http = bounded_client(self.launch.headers, self.bound)
            return streamable_http_client(self.launch.url, http_client=http)
        from mcp import StdioServerParameters

        return StdioServerParameters(command=self.launch.command or "", args=self.launch.args,
                                     env=self.launch.env or None, cwd=self.launch.cwd)

    async def start(self) -> None:
        """Start (or connect to) the server and finish the handshake within the timeout; raise what went wrong
        (OSError for a command that cannot run, TimeoutError for a hang, anything else for a broken server)."""
        self._ready = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._own(), name=f"mcp server {self.name}")
        try:
            await asyncio.wait_for(asyncio.shield(self._ready), self.timeout)
        except BaseException as exc:
            await self.stop()
            ready = self._ready
            if ready.done() and not ready.cancelled() and ready.exception() is not None:  # retrieved: no warning
                found = ready.exception()  # a CancelledError is stop() ending the handshake, not what went wrong
                self.failure = None if isinstance(found, asyncio.CancelledError) else found
            elif not isinstance(exc, TimeoutError | asyncio.CancelledError):
                self.failure = exc
            if self.bound.broken is not None:
                self.failure = MessageTooLarge(self.bound.broken)
            raise

    async def _own(self) -> None:
        from mcp import Client

        from evals_cli.mcp import sdk_log

        assert self._ready is not None
        sdk_log.install()
        sdk_log.SERVER.set(self.name)  # this task's, and the SDK tasks it starts: their log lines name the server
        try:
            target = self._target()
            if self.launch.command is not None:
                self._stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
                target = _stdio(target, self._stderr, self.bound)
            async with Client(target, read_timeout_seconds=self.timeout, cache=None) as client:
                self.client = client
                if not self._ready.done():
                    self._ready.set_result(None)
                await self._stop.wait()
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits, never lost
            if self.bound.broken is not None and not isinstance(exc, asyncio.CancelledError):
                exc = MessageTooLarge(self.bound.broken)  # the cause, not the closed stream it left
            if not self._ready.done():
                self._ready.set_exception(exc)
            else:
                self.failure = exc
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self.client = None

    def stderr_tail(self) -> str:
        """The last lines the server wrote to stderr, for an error message ('' when none)."""
        if self._tail is not None or self._stderr is None:
            return self._tail or ""
        with contextlib.suppress(OSError, ValueError):
            self._stderr.flush()
            self._stderr.seek(0)
            text = self._stderr.read()
            return text[-STDERR_TAIL:].strip()
        return ""

    def _broken(self, what: str, exc: BaseException | None) -> ToolServerFailed:
        why = f"{type(exc).__name__}: {exc}" if exc is not None and str(exc) else (type(exc).__name__ if exc else "")
        tail = self.stderr_tail()
        return ToolServerFailed(self.name, f"{what}{' (' + why + ')' if why else ''}"
                                           f"{'; its stderr ends: ' + tail if tail else ''}")

    async def list_tools(self) -> list[Any]:
        """Every tool the server lists, following its pages."""
        tools: list[Any] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            try:
                page = await asyncio.wait_for(self._session().list_tools(cursor=cursor), self.timeout)
            except Exception:
                if self.bound.broken is not None:
                    raise MessageTooLarge(self.bound.broken) from None
                raise
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    def _session(self) -> Any:
        if self.client is None:
            raise self._broken("the connection is closed: the server exited or was stopped", self.failure)
        return self.client

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """The server's CallToolResult; ToolServerFailed when the server is gone, hangs or breaks the protocol."""
        client = self._session()
        try:
            return await asyncio.wait_for(client.call_tool(name, arguments), self.timeout)
        except TimeoutError:
            raise self._broken(f"tools/call {name} got no answer within timeout {self.timeout:g}s (raise "
                               f"{self.block}.{self.name}.timeout for a slow server)", None) from None
        except Exception as exc:
            if self.bound.broken is not None:
                raise self._broken(f"tools/call {name} failed", MessageTooLarge(self.bound.broken)) from None
            raise self._broken(f"tools/call {name} failed: the server crashed or broke the protocol", exc) from exc

    async def stop(self) -> None:
        """Leave the client (the SDK stops the process, bounded) and wait for it; idempotent."""
        self._stop.set()
        task = self._task
        try:
            if task is not None and not task.done():
                if self._ready is not None and not self._ready.done():
                    task.cancel()  # still in the handshake: nothing to leave gently (the SDK's teardown is shielded)
                try:
                    await asyncio.wait_for(asyncio.shield(task), 15)
                except asyncio.CancelledError:
                    if _being_cancelled():
                        raise  # the caller is cancelled; the task's own cancellation is what stop() asked for
                except (TimeoutError, Exception):
                    task.cancel()
                    with contextlib.suppress(BaseException):
                        await task
        finally:
            if self._stderr is not None and self._tail is None:
                self._tail = self.stderr_tail() if not self._stderr.closed else ""
                with contextlib.suppress(OSError):
                    self._stderr.close()


def _being_cancelled() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _message_limit() -> int:
    from evals_cli.settings import knob

    value: int = knob("max_mcp_message_bytes")
    return value


def _stdio(params: Any, errlog: IO[str], bound: Bound) -> Any:
    """The transport of a stdio server: evals-cli's own on POSIX (bounded lines, the process group ended with
    the server: evals_cli/mcp/stdio.py), the SDK's elsewhere."""
    if sys.platform == "win32":  # pragma: no cover - the SDK's job objects end the tree there
        from mcp.client.stdio import stdio_client

        return stdio_client(params, errlog=errlog)
    from evals_cli.mcp.stdio import bounded_stdio

    return bounded_stdio(params, errlog, bound)
