"""One (sample, repeat)'s side of the servers: its workspace, its own connections to the per-episode servers,
and every call the episode's actors make, awaited from the run's loop, recorded (--record) or replayed
(--replay).

Apart from the hub (hub.py), which holds the run's servers from before the first sample to after the last,
because an episode's connections begin and end with the episode: what one episode started or wrote is never
another's.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any, Protocol, TypeVar

from evals_cli.endpoints.context import CALL_CONTEXT
from evals_cli.errors import ToolServerFailed
from evals_cli.mcp import workspace
from evals_cli.mcp.recording import Replayed, Tape
from evals_cli.mcp.spec import WORKSPACE, McpServerSpec

T = TypeVar("T")


class ServedTool(Protocol):
    """What a call needs of the agent's tool (a `ToolSpec` the hub marked as served): the server that serves it
    and the tool's name there."""

    _served_by: str | None
    _served_name: str


class LiveServer(Protocol):
    """A started server (evals_cli/mcp/connection.py `Connection`), as a session calls it and the hub stops it."""

    async def call(self, name: str, arguments: dict[str, Any]) -> Any: ...

    async def stop(self) -> None: ...


class RunServers(Protocol):
    """What an episode's session uses of the run's hub (evals_cli/mcp/hub.py `McpHub`): named here, so that the
    session stands below the hub that makes it."""

    @property
    def servers(self) -> Mapping[str, McpServerSpec]: ...

    @property
    def shared(self) -> Mapping[str, LiveServer]: ...

    @property
    def tape(self) -> Tape | None: ...

    @property
    def replay(self) -> Replayed | None: ...

    @property
    def workspace_needed(self) -> bool: ...

    def new_folder(self, sample_id: str, repeat: int) -> Path: ...

    async def aconnect(self, name: str, folder: Path | None) -> LiveServer: ...

    async def astop(self, connection: LiveServer) -> None: ...

    async def awaited(self, coro: Coroutine[Any, Any, T], timeout: float) -> T: ...


def result_text(result: Any) -> str:
    """What the agent reads of a CallToolResult: its text blocks, one per line; other blocks named by kind;
    structured content as JSON when there is no text."""
    parts: list[str] = []
    for block in getattr(result, "content", None) or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(str(getattr(block, "text", "")))
        elif kind == "resource":
            inner = getattr(block, "resource", None)
            parts.append(str(getattr(inner, "text", None) or f"[resource {getattr(inner, 'uri', '')}]"))
        else:
            parts.append(f"[{kind or 'content'} {getattr(block, 'mime_type', '') or ''}]".replace(" ]", "]"))
    structured = getattr(result, "structured_content", None)
    if not parts and structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False))
    return "\n".join(parts)


class McpSession:
    """One (sample, repeat)'s side of the servers: its workspace (when a server takes {workspace}), its own
    connections to the per-episode servers (started with it, before the agent acts, so whatever they write while
    starting is the starting state), the shared ones, and the recording or replay of each call. Every method
    that talks to a server is awaited from the run's loop."""

    def __init__(self, hub: RunServers, sample_id: str, repeat: int) -> None:
        self.hub = hub
        self.sample_id = sample_id
        self.repeat = repeat
        self.folder: Path | None = None
        self.own: dict[str, LiveServer] = {}
        self._files: dict[str, str] | None = None
        self._finished = False

    @property
    def has_workspace(self) -> bool:
        return self.hub.workspace_needed

    def make_workspace(self, files: Mapping[str, str]) -> Path | None:
        """Make and fill the workspace (None: no server takes one), before setup and the servers start."""
        if self.has_workspace and self.folder is None:
            self.folder = self.hub.new_folder(self.sample_id, self.repeat)
            workspace.fill(self.folder, dict(files))
        return self.folder

    async def start(self) -> dict[str, str] | None:
        """Start this episode's own servers (in its workspace) and return the workspace's files as they left it:
        the starting state (None: no workspace). Under --replay, the recorded starting files (or the folder's,
        for a recording made before they were recorded); with --record, they are recorded."""
        if self.hub.replay is None:
            names = [n for n, spec in self.hub.servers.items() if spec.per_episode and spec.mode == "live"]
            started = await asyncio.gather(*(self.hub.aconnect(n, self.folder) for n in names),
                                           return_exceptions=True)
            for name, connection in zip(names, started, strict=True):
                if not isinstance(connection, BaseException):  # started (aconnect raises otherwise)
                    self.own[name] = connection
            failed = next((c for c in started if isinstance(c, BaseException)), None)
            if failed is not None:
                raise failed
        if self.folder is None:
            return None
        return self._snapshot("workspace_start", "starting workspace", recorded_only=False)

    def _snapshot(self, op: str, label: str, recorded_only: bool) -> dict[str, str]:
        """The workspace's files: under --replay, the recorded ones (`recorded_only` False: the folder's when the
        recording has none, as one made before they were recorded); else the folder's, recorded with --record."""
        assert self.folder is not None
        key = {"sample": self.sample_id, "repeat": self.repeat}
        replay = self.hub.replay
        if replay is not None and (recorded_only or replay.has("workspace", op, key)):
            found = replay.next("workspace", op, key, f"sample {self.sample_id}", f"{label} of repeat {self.repeat}")
            return {str(k): self._unmasked(str(v)) for k, v in dict(found).items()}
        files = workspace.read_back(self.folder)
        if self.hub.tape is not None:
            self.hub.tape.write("workspace", op, key, self._masked(files), f"sample {self.sample_id}")
        return files

    def _masked(self, value: Any) -> Any:
        """`value` with the workspace path written as {workspace} (what is recorded and keyed)."""
        if self.folder is None:
            return value
        text = json.dumps(value, ensure_ascii=False)
        return json.loads(text.replace(json.dumps(str(self.folder))[1:-1], WORKSPACE))

    def _unmasked(self, text: str) -> str:
        return text.replace(WORKSPACE, str(self.folder)) if self.folder is not None else text

    async def call(self, spec: ServedTool, arguments: dict[str, Any],
                   changed: Callable[[list[str]], None] | None = None) -> tuple[str, bool]:
        """(text, is_error) of one live call, awaited; ToolServerFailed when the server failed (not the agent).

        `changed` (dual control: whoever called the tool changed what it wrote) is given the workspace files the
        call wrote, made or removed, told by their sizes and modification times before and after the call, also
        when the call failed half-way; recorded with the call under --record, read from the recording under
        --replay (nothing from a recording made without it). Not called without a workspace."""
        server, name = spec._served_by or "", spec._served_name
        context = CALL_CONTEXT.get()
        request = {"tool": name, "arguments": self._masked(arguments)}
        shown = f"call {name}({json.dumps(arguments, ensure_ascii=False)[:200]})"
        if self.hub.replay is not None:
            found = self.hub.replay.next(server, "tools/call", request, context, shown)
            recorded = found.get("changed")
            if changed is not None and isinstance(recorded, list):
                changed([str(path) for path in recorded])
            return self._unmasked(str(found.get("text", ""))), bool(found.get("is_error"))
        folder = self.folder if changed is not None else None
        before = workspace.fingerprint(folder) if folder is not None else None
        touched: list[str] = []
        try:
            connection = await self._connection(server)
            result = await self.hub.awaited(connection.call(name, arguments), self.hub.servers[server].timeout)
        finally:
            if folder is not None and changed is not None:
                touched = workspace.changed_between(before, workspace.fingerprint(folder))
                changed(touched)
        text, is_error = result_text(result), bool(getattr(result, "is_error", False))
        if self.hub.tape is not None:
            answer: dict[str, Any] = {"text": self._masked(text), "is_error": is_error}
            if folder is not None:
                answer["changed"] = touched
            self.hub.tape.write(server, "tools/call", request, answer, context)
        return text, is_error

    async def _connection(self, server: str) -> LiveServer:
        spec = self.hub.servers[server]
        if not spec.per_episode:
            found = self.hub.shared.get(server)
            if found is None:
                raise ToolServerFailed(server, "is not running (it was stopped)")
            return found
        if server not in self.own:  # started with the episode; a mock-mode server is never called
            self.own[server] = await self.hub.aconnect(server, self.folder)
        return self.own[server]

    async def finish(self) -> dict[str, str] | None:
        """After the last turn: stop this episode's servers, and return the workspace's files (None: there is
        no workspace). Under --replay, the files the recorded episode left; with --record, they are recorded."""
        if self._finished:
            return self._files
        self._finished = True
        own, self.own = list(self.own.values()), {}
        await asyncio.shield(asyncio.gather(*(self.hub.astop(c) for c in own)))
        if self.folder is None:
            return None
        self._files = self._snapshot("workspace", "workspace", recorded_only=True)
        workspace.remove(self.folder)
        return self._files

    def discard(self) -> None:
        """An episode that ended before `finish` (its setup failed, it was cancelled): remove its workspace; its
        servers are stopped with the hub's."""
        if not self._finished and self.folder is not None:
            self._finished = True
            workspace.remove(self.folder)
