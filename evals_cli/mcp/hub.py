"""The run's MCP servers: started (or read from a recording) before the first sample, their tools turned into
the `ToolSpec`s the agent is offered, called live during the run, and stopped when it ends.

Dual control: the suite's `user_mcp_servers` (the simulated user's own servers, in the shape of `mcp_servers`)
are servers of the same hub: started, recorded and replayed alike, in the same episode session (a per-episode
server of the user works in the same workspace as the agent's), but their tools are the user's (`user_tools()`),
never offered to the agent, and a name either side uses is refused on the other.

The connections live on an event loop of their own, in a daemon thread: the SDK's task groups then never mix
with the runner's tasks, and a sample cancelled by its timeout cannot tear a shared connection down. A sample
awaits its calls from the run's loop (`_await`: the call runs on the hub's loop, the sample's task waits on its
future), so while one sample waits on a server every other sample, user and judge goes on; cancelling the sample
(its timeout, Ctrl-C) cancels the call. Opening before the run and closing after it wait on the hub's loop
(`_run`).
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import itertools
import json
import signal
import threading
import weakref
from collections.abc import Callable, Coroutine, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from evals_cli.endpoints.context import CALL_CONTEXT
from evals_cli.endpoints.secrets import Redactor, header_secrets, secret_values, url_secrets
from evals_cli.errors import ConfigError, RunAborted, ToolServerFailed
from evals_cli.mcp import sdk, workspace
from evals_cli.mcp.connection import Connection, Launch
from evals_cli.mcp.recording import Replayed, Tape
from evals_cli.mcp.spec import WORKSPACE, McpServerSpec
from evals_cli.models.tools import ToolSpec, schema_problem, tool_name_problem

T = TypeVar("T")
_OPEN: weakref.WeakSet[McpHub] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    """A run that ended without closing its hub (an exception between prepare and execute) still stops its
    servers: no process outlives evals-cli."""
    for hub in list(_OPEN):
        hub.close()


@dataclass(frozen=True)
class Listed:
    """One tool as its server lists it."""

    name: str
    description: str
    schema: dict[str, Any]


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


def mcp_secrets(servers: Mapping[str, McpServerSpec]) -> list[str]:
    """What the servers' settings hold that must never be printed: header values, URL credentials and
    secret-looking env values (API_TOKEN: ...)."""
    found: list[str] = []
    for spec in servers.values():
        found += header_secrets(spec.headers)
        found += url_secrets(spec.url)
        found += secret_values(spec.env)
    return found


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
        self.live: set[Connection] = set()
        self._served: dict[str, ToolSpec] | None = None
        self._user_served: dict[str, ToolSpec] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._root: Path | None = None
        self._numbers = itertools.count(1)
        self._closed = False

    # --- the loop -------------------------------------------------------------------------------------

    def _start_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(target=self._loop.run_forever, name="evals-mcp", daemon=True)
            self._thread.start()
            _OPEN.add(self)
        return self._loop

    def _run(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        future = asyncio.run_coroutine_threadsafe(coro, self._start_loop())
        return _interruptible(future, timeout + 30)  # the coroutine bounds itself; this guards against a stuck loop

    async def _await(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        """`coro` run on the hub's loop, awaited from the caller's (the run's) loop without blocking it; the
        caller's cancellation cancels it there. Bounded like `_run`."""
        future = asyncio.run_coroutine_threadsafe(coro, self._start_loop())
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), timeout + 30)
        except BaseException:
            future.cancel()
            raise

    def section(self, name: str) -> str:
        """The block the server `name` is declared in: `mcp_servers` (the agent's) or `user_mcp_servers`."""
        return "user_mcp_servers" if name in self.user_side else "mcp_servers"

    def block(self, name: str) -> str:
        """Where the server `name` is declared, for a message: `mcp_servers.NAME` or `user_mcp_servers.NAME`."""
        return f"{self.section(name)}.{name}"

    @property
    def workspace_needed(self) -> bool:
        return any(spec.per_episode for spec in self.servers.values())

    def _launch(self, spec: McpServerSpec, folder: Path | None) -> Launch:
        def put(text: str) -> str:
            return text.replace(WORKSPACE, str(folder)) if folder is not None else text

        cwd = str(folder) if folder is not None and spec.command is not None else None
        return Launch(command=put(spec.command) if spec.command else None, args=[put(a) for a in spec.args],
                      env={k: put(v) for k, v in spec.env.items()}, url=put(spec.url) if spec.url else None,
                      headers=dict(spec.headers), cwd=cwd)

    def _connect(self, name: str, folder: Path | None) -> Connection:
        """Start one server at the start of the run: a failure is the suite's (ConfigError) or, for a url server,
        an unreachable one (RunAborted)."""
        spec = self.servers[name]
        connection = Connection(name, self._launch(spec, folder), spec.timeout, self.section(name))
        try:
            self._run(connection.start(), spec.timeout)
        except BaseException as exc:
            message = self._start_failure(self.block(name), spec, connection, exc)
            if spec.url is not None:
                raise RunAborted(f"{self.block(name)}: {message}") from None
            raise ConfigError(f"{self.block(name)}: {message}") from None
        self.live.add(connection)
        return connection

    async def _aconnect(self, name: str, folder: Path | None) -> Connection:
        """Start one server during the run (an episode's own), awaited; ToolServerFailed when it fails."""
        spec = self.servers[name]
        connection = Connection(name, self._launch(spec, folder), spec.timeout, self.section(name))
        try:
            await self._await(connection.start(), spec.timeout)
        except asyncio.CancelledError:
            await asyncio.shield(self._astop(connection))
            raise
        except BaseException as exc:
            raise ToolServerFailed(name, self._start_failure(self.block(name), spec, connection, exc)) from None
        self.live.add(connection)
        return connection

    @staticmethod
    def _start_failure(block: str, spec: McpServerSpec, connection: Connection, exc: BaseException) -> str:
        what = connection.launch.describe()
        tail = connection.stderr_tail()
        said = f"; its stderr ends: {tail}" if tail else ""
        if spec.url is not None:
            why = _describe(connection.failure) if connection.failure is not None else (
                f"no MCP answer within timeout {spec.timeout:g}s" if isinstance(exc, TimeoutError) else _describe(exc))
            return f"cannot connect to {what} ({why}); check url and that the server is running"
        if isinstance(exc, OSError) and not isinstance(exc, TimeoutError):  # TimeoutError is an OSError
            return (f"cannot start `{what}` ({exc.strerror or type(exc).__name__}); check command and args (is "
                    "the program installed and on PATH?)")
        if isinstance(exc, TimeoutError):
            return (f"`{what}` did not finish the MCP handshake within timeout {spec.timeout:g}s{said}; check it "
                    f"is an MCP server, or raise {block}.timeout")
        return (f"`{what}` exited or broke the MCP handshake ({_describe(connection.failure or exc)}){said}; check "
                "command and args")

    # --- opening: the tool lists ----------------------------------------------------------------------

    def open(self) -> None:
        """List every server's tools (starting the shared live servers, which stay up for the run), and check
        them against the suite; idempotent."""
        if self._served is not None:
            return
        if self.replay is None:
            sdk.require()  # an optional extra: exit 2 with the install command, before any server starts
            self._start_loop()
        with _terminate_as_interrupt():
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
        self._served = self._build_tools()

    def _list(self, name: str, spec: McpServerSpec) -> list[Listed]:
        if self.replay is not None:
            if not self.replay.has(name, "tools/list", {}):
                raise ConfigError(f"--replay {self.replay.path}: holds no tool list of {self.block(name)}; "
                                  "re-record with --record")
            raw = self.replay.next(name, "tools/list", {}, "listing tools", "tool list")
            return [Listed(t["name"], t.get("description") or "", t.get("inputSchema") or {}) for t in raw]
        folder = self._new_folder("listing", 0) if spec.per_episode else None
        connection = self._connect(name, folder)
        try:
            tools = self._run(connection.list_tools(), spec.timeout)
        except BaseException as exc:
            self._stop(connection)
            problem = (f"did not list its tools within timeout {spec.timeout:g}s" if isinstance(exc, TimeoutError)
                       else f"listing its tools failed ({_describe(exc)})")
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

    def _build_tools(self) -> dict[str, ToolSpec]:
        """The agent's tools (the suite's, with its servers'), and the user's into `_user_served`; every problem
        of either side at once."""
        agent_names = [n for n in self.servers if n not in self.user_side]
        agent, problems = self._side_tools(agent_names, self.suite_tools, "tools")
        user, user_problems = self._side_tools([n for n in self.servers if n in self.user_side],
                                               self.declared_user_tools, "user_tools")
        problems += user_problems + self._crossed(agent, user)
        if self.workspace_needed:
            effects = [f"{block}.{n}" for block, tools in (("tools", self.suite_tools),
                                                          ("user_tools", self.declared_user_tools))
                       for n, t in tools.items() if t.effect is not None and t.effect.op.startswith("files.")]
            if effects:
                problems.append(f"{effects[0]}: a files effect acts on the mocked files, while mcp_servers "
                                "with {workspace} act on the real folder; use one or the other")
        if problems:
            raise ConfigError(problems)
        self._user_served = user
        return agent

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
        (live) or given their schemas (mock); and the problems found."""
        problems: list[str] = []
        tools: dict[str, ToolSpec] = {}
        owner: dict[str, str] = {}
        for name in names:
            spec, where_server = self.servers[name], self.block(name)
            listed = {t.name: t for t in self.listed[name]}
            for wanted in spec.include or []:
                if wanted not in listed:
                    problems.append(f"{where_server}.include: the server lists no tool '{wanted}' (it lists: "
                                    f"{', '.join(listed) or 'none'})")
            for index, entry in enumerate(spec.inject):
                problems += [f"{where_server}.inject[{index}].tools: the server lists no tool '{wanted}' (it "
                             f"lists: {', '.join(listed) or 'none'})"
                             for wanted in entry.tools or [] if wanted not in listed]
            for tool in listed.values():
                if not spec.offers(tool.name):
                    continue
                exposed = spec.exposed(tool.name)
                where = f"{where_server}: tool '{tool.name}'"
                bad = tool_name_problem(exposed) or schema_problem(tool.schema)
                if tool.schema.get("type", "object") != "object":
                    bad = bad or f"inputSchema.type is '{tool.schema.get('type')}', not object"
                if bad is not None:
                    problems.append(f"{where}: {bad}; leave it out with exclude: [{tool.name}]")
                    continue
                if exposed in owner:
                    problems.append(f"{where}: the name '{exposed}' is also served by {self.block(owner[exposed])}; "
                                    f"give one of them a prefix:")
                    continue
                owner[exposed] = name
                mocked = mocked_tools.get(exposed)
                if spec.mode == "live":
                    if mocked is not None:
                        problems.append(f"{block}.{exposed}: also served live by {where_server} (its tool "
                                        f"'{tool.name}'); remove one of them, exclude it from the server, or give "
                                        "the server mode: mock")
                        continue
                    try:
                        served = ToolSpec(description=tool.description, parameters=tool.schema)
                    except ValueError as exc:
                        problems.append(f"{where}: its inputSchema is not usable ({_describe(exc)}); leave it out "
                                        f"with exclude: [{tool.name}]")
                        continue
                    served._served_by, served._served_name = name, tool.name
                    served.inject = spec.inject_for(tool.name)
                    tools[exposed] = served
                elif mocked is None:
                    problems.append(f"{where_server} (mode: mock): tool '{exposed}' has no entry in {block}: to "
                                    f"give its results; add {block}.{exposed} with returns, cases or effect, or "
                                    f"exclude: [{tool.name}]")
                else:
                    tools[exposed] = mocked.model_copy(update={"description": tool.description or mocked.description,
                                                               "parameters": tool.schema,
                                                               "inject": mocked.inject or spec.inject_for(tool.name)})
        return {**mocked_tools, **tools}, problems

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

    def _new_folder(self, sample_id: str, repeat: int) -> Path:
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
            self._run(connection.stop(), 20)

    async def _astop(self, connection: Connection) -> None:
        self.live.discard(connection)
        with contextlib.suppress(Exception):
            await self._await(connection.stop(), 20)

    def close(self) -> None:
        """Stop every server still running and remove the workspaces; idempotent, and safe at exit."""
        if self._closed:
            return
        self._closed = True
        loop = self._loop
        if loop is not None and loop.is_running():
            async def stop_all() -> None:
                await asyncio.gather(*(c.stop() for c in list(self.live)), return_exceptions=True)

            with contextlib.suppress(BaseException):
                self._run(stop_all(), 30)
            self.live.clear()
            loop.call_soon_threadsafe(loop.stop)
            if self._thread is not None:
                self._thread.join(10)
            if not loop.is_running():
                loop.close()
        if self._root is not None:
            workspace.remove(self._root)
        _OPEN.discard(self)


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """While the servers start (before the run installs its own handlers), SIGTERM is a Ctrl-C: the
    KeyboardInterrupt unwinds through PreparedRun, which stops what was started, instead of killing evals-cli
    with its servers still up."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt()

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class _Interrupted(Exception):
    pass


def _interruptible(future: concurrent.futures.Future[T], timeout: float) -> T:
    """Wait for a call on the hub's loop without deafening the run to Ctrl-C and SIGTERM: the runner's handlers
    live on its event loop, which this wait blocks. A signal meanwhile (the loop still gets it, through its
    wakeup fd, once it runs again) stops the wait and cancels the call; the sample is cancelled, as an
    interrupted one is, and its server is stopped with the others when the run ends."""
    if threading.current_thread() is not threading.main_thread():
        return future.result(timeout)

    def stop_waiting(signum: int, frame: Any) -> None:
        raise _Interrupted()

    previous = {sig: signal.signal(sig, stop_waiting) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        return future.result(timeout)
    except _Interrupted:
        future.cancel()
        raise asyncio.CancelledError("interrupted during an MCP call") from None
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _describe(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc)
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__


class McpSession:
    """One (sample, repeat)'s side of the servers: its workspace (when a server takes {workspace}), its own
    connections to the per-episode servers (started with it, before the agent acts, so whatever they write while
    starting is the starting state), the shared ones, and the recording or replay of each call. Every method
    that talks to a server is awaited from the run's loop."""

    def __init__(self, hub: McpHub, sample_id: str, repeat: int) -> None:
        self.hub = hub
        self.sample_id = sample_id
        self.repeat = repeat
        self.folder: Path | None = None
        self.own: dict[str, Connection] = {}
        self._files: dict[str, str] | None = None
        self._finished = False

    @property
    def has_workspace(self) -> bool:
        return self.hub.workspace_needed

    def make_workspace(self, files: Mapping[str, str]) -> Path | None:
        """Make and fill the workspace (None: no server takes one), before setup and the servers start."""
        if self.has_workspace and self.folder is None:
            self.folder = self.hub._new_folder(self.sample_id, self.repeat)
            workspace.fill(self.folder, dict(files))
        return self.folder

    async def start(self) -> dict[str, str] | None:
        """Start this episode's own servers (in its workspace) and return the workspace's files as they left it:
        the starting state (None: no workspace). Under --replay, the recorded starting files (or the folder's,
        for a recording made before they were recorded); with --record, they are recorded."""
        if self.hub.replay is None:
            names = [n for n, spec in self.hub.servers.items() if spec.per_episode and spec.mode == "live"]
            started = await asyncio.gather(*(self.hub._aconnect(n, self.folder) for n in names),
                                           return_exceptions=True)
            for name, connection in zip(names, started, strict=True):
                if isinstance(connection, Connection):
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

    async def call(self, spec: ToolSpec, arguments: dict[str, Any],
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
            result = await self.hub._await(connection.call(name, arguments), self.hub.servers[server].timeout)
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

    async def _connection(self, server: str) -> Connection:
        spec = self.hub.servers[server]
        if not spec.per_episode:
            found = self.hub.shared.get(server)
            if found is None:
                raise ToolServerFailed(server, "is not running (it was stopped)")
            return found
        if server not in self.own:  # started with the episode; a mock-mode server is never called
            self.own[server] = await self.hub._aconnect(server, self.folder)
        return self.own[server]

    async def finish(self) -> dict[str, str] | None:
        """After the last turn: stop this episode's servers, and return the workspace's files (None: there is
        no workspace). Under --replay, the files the recorded episode left; with --record, they are recorded."""
        if self._finished:
            return self._files
        self._finished = True
        own, self.own = list(self.own.values()), {}
        await asyncio.shield(asyncio.gather(*(self.hub._astop(c) for c in own)))
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
