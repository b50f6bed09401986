"""What the layers below the computer see of it: the run's computer (in a target's context) and one episode's
(its toolbox and its graders), as protocols, so that naming them lifts no module onto the computer's floors."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from evals_cli.models.tools import ToolSpec
    from evals_cli.sandbox.base import ExecResult, Sandbox


class EpisodeComputer(Protocol):
    """One episode's computer (computer/session.py `ComputerSession`)."""

    @property
    def available(self) -> bool:
        """Checks can be answered: a sandbox to run them in, or a recording to read them from."""
        ...

    @property
    def workspace(self) -> Path | None:
        """The host folder that is /workspace in the sandbox (None: no sandbox, as under --replay)."""
        ...

    async def call(self, spec: ToolSpec, arguments: dict[str, Any]) -> tuple[str, bool]: ...

    async def check(self, name: str, argv: Sequence[str], *, timeout: float,
                    env: Mapping[str, str] | None = None) -> ExecResult: ...

    async def opened(self, files: Mapping[str, str]) -> None: ...

    async def finished(self, files: dict[str, str]) -> dict[str, str]: ...

    async def close(self) -> None: ...


class RunComputer(Protocol):
    """The run's computer (computer/session.py `Computer`): one `EpisodeComputer` per (sample, repeat)."""

    @property
    def replaying(self) -> bool: ...

    def session(self, sample_id: str, repeat: int, sandbox: Sandbox | None) -> EpisodeComputer: ...
