"""The run's MCP servers: started (or read from a recording) before the first sample, their tools turned into
the `ToolSpec`s the agent is offered (offered.py), called live during the run through each episode's session
(session.py), and stopped when it ends.

Dual control: the suite's `user_mcp_servers` (the simulated user's own servers, in the shape of `mcp_servers`)
are servers of the same hub: started, recorded and replayed alike, in the same episode session (a per-episode
server of the user works in the same workspace as the agent's), but their tools are the user's (`user_tools()`),
never offered to the agent, and a name either side uses is refused on the other.

The connections live on an event loop of their own, in a daemon thread (hub_loop.py): the SDK's task groups then
never mix with the runner's tasks, and a sample cancelled by its timeout cannot tear a shared connection down. A
sample awaits its calls from the run's loop (`awaited`: the call runs on the hub's loop, the sample's task waits
on its future), so while one sample waits on a server every other sample, user and judge goes on; cancelling the
sample (its timeout, Ctrl-C) cancels the call. Opening before the run and closing after it wait on the hub's
loop.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import itertools
import weakref
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from evals_cli.endpoints.secrets import Redactor, header_secrets, secret_values, url_secrets
from evals_cli.errors import ConfigError, RunAborted, ToolServerFailed
from evals_cli.mcp import sdk, workspace
from evals_cli.mcp.connection import Connection, Launch
from evals_cli.mcp.hub_loop import HubLoop, terminate_as_interrupt
from evals_cli.mcp.recording import Replayed, Tape
from evals_cli.mcp.session import LiveServer, McpSession, result_text
from evals_cli.mcp.spec import WORKSPACE, McpServerSpec
from evals_cli.models.tools import ToolSpec, schema_problem, tool_name_problem

__all__ = ["Listed", "McpHub", "McpSession", "mcp_secrets", "result_text"]

T = TypeVar("T")
_OPEN: weakref.WeakSet[McpHub] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    """A run that ended without closing its hub (an exception between prepare and execute) still stops its
    servers: no process outlives evals-cli."""
    for hub in list(_OPEN):
        hub.close()


def mcp_secrets(servers: Mapping[str, McpServerSpec]) -> list[str]:
    """What the servers' settings hold that must never be printed: header values, URL credentials and
    secret-looking env values (API_TOKEN: ...)."""
    found: list[str] = []
    for spec in servers.values():
        found += header_secrets(spec.headers)
        found += url_secrets(spec.url)
        found += secret_values(spec.env)
    return found


@dataclass(frozen=True)
class Listed:
    """One tool as its server lists it."""

    name: str
    description: str
    schema: dict[str, Any]


class McpHub:
    """Every MCP server of one run. `open()` before the run (ConfigError: the suite's fault, exit 2; RunAborted:
    a url server that does not answer, exit 3), `tools()` for the agent's tools (`user_tools()` for the user's,
    from `user_servers`), `session()` per (sample, repeat), `close()` after (also at exit)."""

    def __init__(self, servers: Mapping[str, McpServerSpec], suite_tools: Mapping[str, ToolSpec], *,
                 base_dir: Path, record: Path | None = None, replay: Path | None = None,
                 redact: Redactor | None = None, user_servers: Mapping[str, McpServerSpec] | None = None,
                 user_tools: Mapping[str, ToolSpec] | None = None) -> None:
        self.servers = dict(servers)  # the agent's first; names differ (the loader refuses one in both)
        self.servers.update({n: spec for n, spec in (user_servers or {}).items() if n not in servers})
        self.user_side = set(user_servers or {}) - set(servers)
        self.suite_tools = dict(suite_tools)
        self.declared_user_tools = dict(user_tools or {})
        self.base_dir = base_dir
        self.redact = redact if redact is not None else Redactor()
        self.redact.add(mcp_secrets(self.servers))
        self.tape = Tape(record, self.redact) if record is not None else None
        self.replay = Replayed(replay, self.redact) if replay is not None else None
        self.listed: dict[str, list[Listed]] = {}
        self.shared: dict[str, Connection] = {}
        self.live: set[LiveServer] = set()  # started and not yet stopped: stopped at close
        self._served: dict[str, ToolSpec] | None = None
        self._user_served: dict[str, ToolSpec] = {}
        self._loop = HubLoop(on_start=lambda: _OPEN.add(self))
        self._root: Path | None = None
        self._numbers = itertools.count(1)
        self._closed = False

    async def awaited(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        """`coro` run on the hub's loop, awaited from the caller's (the run's) loop without blocking it; the
        caller's cancellation cancels it there."""
        return await self._loop.awaited(coro, timeout)

    def section(self, name: str) -> str:
        """The block the server `name` is declared in: `mcp_servers` (the agent's) or `user_mcp_servers`."""
        return "user_mcp_servers" if name in self.user_side else "mcp_servers"

    def block(self, name: str) -> str:
        """Where the server `name` is declared, for a message: `mcp_servers.NAME` or `user_mcp_servers.NAME`."""
        return f"{self.section(name)}.{name}"

    @property
    def workspace_needed(self) -> bool:
        return any(spec.per_episode for spec in self.servers.values())

    # --- starting a server ----------------------------------------------------------------------------

    def _connect(self, name: str, folder: Path | None) -> Connection:
        """Start one server at the start of the run: a failure is the suite's (ConfigError) or, for a url server,
        an unreachable one (RunAborted)."""
        spec = self.servers[name]
        connection = Connection(name, launch_for(spec, folder), spec.timeout, self.section(name))
        try:
            self._loop.run(connection.start(), spec.timeout)
        except BaseException as exc:
            message = start_failure(self.block(name), spec, connection, exc)
            if spec.url is not None:
                raise RunAborted(f"{self.block(name)}: {message}") from None
            raise ConfigError(f"{self.block(name)}: {message}") from None
        self.live.add(connection)
        return connection

    async def aconnect(self, name: str, folder: Path | None) -> Connection:
        """Start one server during the run (an episode's own), awaited; ToolServerFailed when it fails."""
        spec = self.servers[name]
        connection = Connection(name, launch_for(spec, folder), spec.timeout, self.section(name))
        try:
            await self.awaited(connection.start(), spec.timeout)
        except asyncio.CancelledError:
            await asyncio.shield(self.astop(connection))
            raise
        except BaseException as exc:
            raise ToolServerFailed(name, start_failure(self.block(name), spec, connection, exc)) from None
        self.live.add(connection)
        return connection

    # --- opening: the tool lists ----------------------------------------------------------------------

    def open(self) -> None:
        """List every server's tools (starting the shared live servers, which stay up for the run), and check
        them against the suite; idempotent."""
        if self._served is not None:
            return
        if self.replay is None:
            sdk.require()  # an optional extra: exit 2 with the install command, before any server starts
            self._loop.start()
        with terminate_as_interrupt():
            self._open()

    def _open(self) -> None:
        # the servers start at once (a Python server takes seconds to import its SDK): one thread waits on each
        with concurrent.futures.ThreadPoolExecutor(max_workers=min(8, len(self.servers) or 1)) as pool:
            futures = {name: pool.submit(self._list, name, spec) for name, spec in self.servers.items()}
            problems: list[str] = []
            for name, future in futures.items():
                try:
                    self.listed[name] = future.result()
                except ConfigError as exc:
                    problems.extend(exc.problems)
                except RunAborted:
                    raise
        if problems:
            raise ConfigError(problems)
        self._served, self._user_served = self._build_tools()

    def _list(self, name: str, spec: McpServerSpec) -> list[Listed]:
        if self.replay is not None:
            if not self.replay.has(name, "tools/list", {}):
                raise ConfigError(f"--replay {self.replay.path}: holds no tool list of {self.block(name)}; "
                                  "re-record with --record")
            raw = self.replay.next(name, "tools/list", {}, "listing tools", "tool list")
            return [Listed(t["name"], t.get("description") or "", t.get("inputSchema") or {}) for t in raw]
        folder = self.new_folder("listing", 0) if spec.per_episode else None
        connection = self._connect(name, folder)
        try:
            tools = self._loop.run(connection.list_tools(), spec.timeout)
        except BaseException as exc:
            self._stop(connection)
            problem = (f"did not list its tools within timeout {spec.timeout:g}s" if isinstance(exc, TimeoutError)
                       else f"listing its tools failed ({describe(exc)})")
            raise ConfigError(f"{self.block(name)}: {problem}; check the server") from None
        listed = [Listed(str(t.name), t.description or "", dict(t.input_schema or {})) for t in tools]
        if self.tape is not None:
            self.tape.write(name, "tools/list", {}, [{"name": t.name, "description": t.description,
                                                      "inputSchema": t.schema} for t in listed], "listing tools")
        if spec.per_episode or spec.mode == "mock":
            self._stop(connection)  # a fresh one per episode; a mock server is needed only for its schemas
            if folder is not None:
                workspace.remove(folder)
        else:
            self.shared[name] = connection
        return listed

    def _build_tools(self) -> tuple[dict[str, ToolSpec], dict[str, ToolSpec]]:
        """(the agent's tools, the user's): the suite's, with their servers' added (live) or given their schemas
        (mock); ConfigError naming every problem of either side at once."""
        suite_tools, user_tools = self.suite_tools, self.declared_user_tools
        agent, problems = self._side_tools([n for n in self.servers if n not in self.user_side], suite_tools, "tools")
        user, user_problems = self._side_tools([n for n in self.servers if n in self.user_side], user_tools,
                                               "user_tools")
        problems += user_problems + self._crossed(agent, user)
        if self.workspace_needed:
            effects = [f"{block}.{n}" for block, tools in (("tools", suite_tools), ("user_tools", user_tools))
                       for n, t in tools.items() if t.effect is not None and t.effect.op.startswith("files.")]
            if effects:
                problems.append(f"{effects[0]}: a files effect acts on the mocked files, while mcp_servers "
                                "with {workspace} act on the real folder; use one or the other")
        if problems:
            raise ConfigError(problems)
        return agent, user

    def _where(self, exposed: str, spec: ToolSpec, block: str) -> str:
        """Where a tool of one side comes from, for a message: its server and name there, or its block."""
        if spec._served_by is not None:
            return f"{self.block(spec._served_by)}'s tool '{spec._served_name}'"
        return f"{block}.{exposed}"

    def _crossed(self, agent: dict[str, ToolSpec], user: dict[str, ToolSpec]) -> list[str]:
        """A name both the agent and the user are offered, one of them from a server (two mocked tools are the
        loader's to refuse): one name would be two tools over one world, so it is refused naming both."""
        return [f"{self._where(name, spec, 'user_tools')} has the name of the agent's tool "
                f"{self._where(name, agent[name], 'tools')}; a user tool and an agent tool must have different "
                "names: give one server a prefix:, exclude the tool from it, or rename the mocked tool"
                for name, spec in user.items()
                if name in agent and (spec._served_by is not None or agent[name]._served_by is not None)]

    def _side_tools(self, names: list[str], mocked_tools: dict[str, ToolSpec],
                    block: str) -> tuple[dict[str, ToolSpec], list[str]]:
        """One actor's tools: `mocked_tools` (its `tools:` or `user_tools:` block) with its servers' tools added
        (live) or given their schemas (mock); and the problems found, at most one per listed tool."""
        problems: list[str] = []
        tools: dict[str, ToolSpec] = {}
        owner: dict[str, str] = {}  # exposed name -> the server that serves it
        for name in names:
            spec = self.servers[name]
            listed = {t.name: t for t in self.listed[name]}
            problems += self._unlisted(name, listed)
            for tool in listed.values():
                if not spec.offers(tool.name):
                    continue
                problem = self._unusable(name, tool, owner)
                if problem is None:
                    owner[spec.exposed(tool.name)] = name
                    problem = self._offer(name, tool, mocked_tools, block, tools)
                if problem is not None:
                    problems.append(problem)
        return {**mocked_tools, **tools}, problems

    def _unlisted(self, name: str, listed: dict[str, Listed]) -> list[str]:
        """The tools the server's `include` and `inject` name that it does not list."""
        spec, where_server = self.servers[name], self.block(name)
        lists = ", ".join(listed) or "none"
        problems = [f"{where_server}.include: the server lists no tool '{wanted}' (it lists: {lists})"
                    for wanted in spec.include or [] if wanted not in listed]
        for index, entry in enumerate(spec.inject):
            problems += [f"{where_server}.inject[{index}].tools: the server lists no tool '{wanted}' (it "
                         f"lists: {lists})" for wanted in entry.tools or [] if wanted not in listed]
        return problems

    def _unusable(self, name: str, tool: Listed, owner: dict[str, str]) -> str | None:
        """Why a listed tool cannot be offered at all: a bad name or schema, or a name another server serves."""
        exposed = self.servers[name].exposed(tool.name)
        where = f"{self.block(name)}: tool '{tool.name}'"
        bad = tool_name_problem(exposed) or schema_problem(tool.schema)
        if tool.schema.get("type", "object") != "object":
            bad = bad or f"inputSchema.type is '{tool.schema.get('type')}', not object"
        if bad is not None:
            return f"{where}: {bad}; leave it out with exclude: [{tool.name}]"
        if exposed in owner:
            return (f"{where}: the name '{exposed}' is also served by {self.block(owner[exposed])}; give one of them "
                    "a prefix:")
        return None

    def _offer(self, name: str, tool: Listed, mocked_tools: dict[str, ToolSpec], block: str,
               tools: dict[str, ToolSpec]) -> str | None:
        """Put the tool into `tools`, served live or answered by its mocked entry; or the problem in the way."""
        spec, where_server = self.servers[name], self.block(name)
        exposed = spec.exposed(tool.name)
        mocked = mocked_tools.get(exposed)
        if spec.mode == "live":
            if mocked is not None:
                return (f"{block}.{exposed}: also served live by {where_server} (its tool '{tool.name}'); remove one "
                        "of them, exclude it from the server, or give the server mode: mock")
            try:
                served = ToolSpec(description=tool.description, parameters=tool.schema)
            except ValueError as exc:
                return (f"{where_server}: tool '{tool.name}': its inputSchema is not usable ({describe(exc)}); leave "
                        f"it out with exclude: [{tool.name}]")
            served._served_by, served._served_name = name, tool.name
            served.inject = spec.inject_for(tool.name)
            tools[exposed] = served
        elif mocked is None:
            return (f"{where_server} (mode: mock): tool '{exposed}' has no entry in {block}: to give its results; "
                    f"add {block}.{exposed} with returns, cases or effect, or exclude: [{tool.name}]")
        else:
            tools[exposed] = mocked.model_copy(update={"description": tool.description or mocked.description,
                                                       "parameters": tool.schema,
                                                       "inject": mocked.inject or spec.inject_for(tool.name)})
        return None

    def tools(self) -> dict[str, ToolSpec]:
        """The suite's tools with the servers' added (live) or given their schemas (mock): what the agent sees."""
        self.open()
        assert self._served is not None
        return self._served

    def user_tools(self) -> dict[str, ToolSpec]:
        """The user's tools (dual control): the suite's `user_tools` with the `user_mcp_servers`' added (live) or
        given their schemas (mock), as `tools()` builds the agent's."""
        self.open()
        return self._user_served

    def sources(self, actor: str = "agent") -> dict[str, str]:
        """Where each tool the agent (`actor="user"`: the user) sees comes from, for `evals list tools`."""
        user = actor == "user"
        block = "user_tools" if user else "tools"
        mocks = {n: s for n, s in self.servers.items() if s.mode == "mock" and (n in self.user_side) == user}
        found = {}
        for exposed, spec in (self.user_tools() if user else self.tools()).items():
            server = spec._served_by
            owner = next((n for n, s in mocks.items()
                          if any(exposed == s.exposed(t.name) for t in self.listed.get(n, []))), None)
            if server is not None:
                found[exposed] = f"{self.block(server)} (live, its tool '{spec._served_name}')"
            elif owner is not None:
                found[exposed] = f"{self.block(owner)} (mock: schema from the server, results from {block}:)"
            else:
                found[exposed] = f"{block}: (mocked)"
        return found

    # --- episodes -------------------------------------------------------------------------------------

    def new_folder(self, sample_id: str, repeat: int) -> Path:
        """A fresh workspace folder for one (sample, repeat), under the run's root (made on first use)."""
        if self._root is None:
            self._root = workspace.new_root()
        folder = self._root / workspace.folder_name(sample_id, repeat, next(self._numbers))
        folder.mkdir(parents=True)
        return folder

    def session(self, sample_id: str, repeat: int) -> McpSession:
        """The servers' side of one (sample, repeat): its workspace and its own connections."""
        return McpSession(self, sample_id, repeat)

    # --- closing --------------------------------------------------------------------------------------

    def _stop(self, connection: Connection) -> None:
        self.live.discard(connection)
        with contextlib.suppress(BaseException):
            self._loop.run(connection.stop(), 20)

    async def astop(self, connection: LiveServer) -> None:
        """Stop one connection (an episode's own, at its end), awaited; never raises what stopping met."""
        self.live.discard(connection)
        with contextlib.suppress(Exception):
            await self.awaited(connection.stop(), 20)

    def close(self) -> None:
        """Stop every server still running and remove the workspaces; idempotent, and safe at exit."""
        if self._closed:
            return
        self._closed = True

        async def stop_all() -> None:
            await asyncio.gather(*(c.stop() for c in list(self.live)), return_exceptions=True)

        self._loop.shutdown(stop_all)
        self.live.clear()
        if self._root is not None:
            workspace.remove(self._root)
        _OPEN.discard(self)


def describe(exc: BaseException) -> str:
    """An exception for a message: the first of a group, its type and at most 300 characters of its text."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc)
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__


def launch_for(spec: McpServerSpec, folder: Path | None) -> Launch:
    """How to reach the server, `{workspace}` put in as the episode's folder (and that folder its cwd)."""
    def put(text: str) -> str:
        return text.replace(WORKSPACE, str(folder)) if folder is not None else text

    cwd = str(folder) if folder is not None and spec.command is not None else None
    return Launch(command=put(spec.command) if spec.command else None, args=[put(a) for a in spec.args],
                  env={k: put(v) for k, v in spec.env.items()}, url=put(spec.url) if spec.url else None,
                  headers=dict(spec.headers), cwd=cwd)


def start_failure(block: str, spec: McpServerSpec, connection: Connection, exc: BaseException) -> str:
    """Why a server did not start, and what to check, for the message naming it."""
    what = connection.launch.describe()
    tail = connection.stderr_tail()
    said = f"; its stderr ends: {tail}" if tail else ""
    if spec.url is not None:
        why = describe(connection.failure) if connection.failure is not None else (
            f"no MCP answer within timeout {spec.timeout:g}s" if isinstance(exc, TimeoutError) else describe(exc))
        return f"cannot connect to {what} ({why}); check url and that the server is running"
    if isinstance(exc, OSError) and not isinstance(exc, TimeoutError):  # TimeoutError is an OSError
        return (f"cannot start `{what}` ({exc.strerror or type(exc).__name__}); check command and args (is "
                "the program installed and on PATH?)")
    if isinstance(exc, TimeoutError):
        return (f"`{what}` did not finish the MCP handshake within timeout {spec.timeout:g}s{said}; check it "
                f"is an MCP server, or raise {block}.timeout")
    return (f"`{what}` exited or broke the MCP handshake ({describe(connection.failure or exc)}){said}; check "
            "command and args")
