"""What every sandbox kind gives an episode: a host folder that is `/workspace` inside, commands run in it with
bounded time and output, and the argument vector that starts a long-lived process inside (a command agent, a
stdio MCP server) for callers that keep their own process handling. Consumers (setup commands, computer tools,
`sandbox_check`) name this protocol, never a kind."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from evals_cli.errors import SandboxUnavailable

__all__ = ["MAX_OUTPUT", "WORKSPACE", "ExecResult", "HostedSandbox", "Sandbox", "SandboxUnavailable"]

WORKSPACE = "/workspace"  # the working directory inside every kind
MAX_OUTPUT = 64 * 1024  # bytes of stdout and of stderr one exec keeps; the rest is cut, and the cut said


@dataclass(frozen=True)
class ExecResult:
    """One finished command: `exit_code` None when it was killed at its timeout."""

    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    cut: bool = False  # stdout or stderr went past the bound: the text holds its head and says the cut
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


@runtime_checkable
class Sandbox(Protocol):
    """One episode's machine. `workspace` is on the host, so the world is filled into it and read back from it
    as MCP workspaces are (mcp/workspace.py), whatever the kind."""

    kind: str
    workspace: Path

    async def exec(self, argv: Sequence[str], *, timeout: float, stdin: bytes | None = None,
                   env: Mapping[str, str] | None = None, cwd: str = WORKSPACE,
                   max_output: int = MAX_OUTPUT) -> ExecResult:
        """Run `argv` (no shell) inside, to its end or its timeout (then the whole tree it started is killed)."""
        ...

    def wrap(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: str = WORKSPACE) -> list[str]:
        """The host argument vector that runs `argv` inside, for a process the caller starts and ends itself."""
        ...

    async def close(self) -> None:
        """Kill everything still running inside and free what the sandbox holds (idempotent)."""
        ...


@runtime_checkable
class HostedSandbox(Sandbox, Protocol):
    """What the kinds evals-cli makes add for the Episode and the command agent: the world's files handed to the
    user inside once filled in (`own`), and a loopback service of this machine (the OTLP receiver) made
    reachable inside, never the network (`reach`: the URL to use inside, for the processes `wrap` starts)."""

    def own(self) -> None: ...

    async def stop_processes(self) -> None:
        """Kill whatever still runs inside (what the agent left in the background), so nothing changes the
        workspace while it is read back; commands may still be run inside afterwards (a grader's)."""
        ...

    async def reach(self, host: str, port: int, on_connect: Callable[[tuple[str, int]], None] | None = None,
                    on_close: Callable[[tuple[str, int]], None] | None = None) -> str: ...
