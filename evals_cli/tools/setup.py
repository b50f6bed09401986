"""`environment.setup:`, what prepares a sample's world before the agent starts: commands run in the episode's
folder, or a Python function given the world. Run by the Episode (targets/episode.py), which records what it
changed as the starting state (`Trajectory.setup_changes`, actor `setup`), never as the agent's doing.

Commands run without a shell, one after another, each bounded by `timeout` and killed with its process group past
it; the folder is the episode's MCP workspace when a server takes `{workspace}`, else a folder of their own filled
from the world's files and read back into it. A command that exits non-zero or runs too long raises SetupFailed
with the end of its output (stdout and stderr together), which errors that sample. The function runs under the
custom-code guard (evals_cli/custom_code/) in a worker thread, awaited, with what is left of the sample's time.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import tempfile
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evals_cli import custom_code
from evals_cli.environment.world import World
from evals_cli.errors import SetupFailed
from evals_cli.mcp import workspace
from evals_cli.models.environment import SetupSpec

if TYPE_CHECKING:
    from evals_cli.sandbox.base import Sandbox

OUTPUT_TAIL = 2000  # characters of a failed command's output kept in the sample's error
_CHUNK = 65536

_LOADED: dict[tuple[str, Path], Any] = {}


def load_setup_function(ref: str, base_dir: Path) -> Any:
    """The setup function `ref` names (file.py:fn inside the suite's folders, or module:fn), loaded once per run
    under the custom-code policy; ValueError naming what is wrong."""
    from evals_cli.tools.logic import _not_imported, load_tool_function

    key = (ref, base_dir)
    if key in _LOADED:
        return _LOADED[key]
    fn = load_tool_function(ref, base_dir)
    if fn is not _not_imported:  # only read (evals validate): a later run imports it
        _LOADED[key] = fn
    return fn


async def run_setup_function(spec: SetupSpec, world: World, base_dir: Path) -> None:
    """Call `python: file.py:fn` with the world (it changes `world.files` and `world.records` in place)."""
    ref = spec.python or ""
    try:
        fn = load_setup_function(ref, base_dir)
    except ValueError as exc:
        raise SetupFailed(f"environment.setup.python: {exc}") from None
    try:
        await custom_code.call(fn, world, where=f"setup function {ref}", thread_name=f"evals-setup {ref}"[:60])
    except custom_code.CustomCodeError:
        raise
    except Exception as exc:
        raise SetupFailed(f"environment.setup: {ref} raised {type(exc).__name__}: {exc}") from None


async def run_setup_commands(spec: SetupSpec, world: World, folder: Path | None, *,
                             sandbox: Sandbox | None = None) -> None:
    """Run the commands in `folder` (the episode's workspace, which the caller reads back), or inside the
    episode's `sandbox` (in its /workspace, which the caller reads back), or, without either, in a folder of
    their own holding the world's files, read back into the world when they are done."""
    if sandbox is not None:
        for argv in spec.commands or []:
            await _run_inside(sandbox, argv, spec.timeout)
        return
    if folder is not None:
        for argv in spec.commands or []:
            await _run_command(argv, folder, spec.timeout)
        return
    own = Path(tempfile.mkdtemp(prefix="evals-setup-"))
    try:
        workspace.fill(own, dict(world.files))
        for argv in spec.commands or []:
            await _run_command(argv, own, spec.timeout)
        world.files = workspace.read_back(own)
    finally:
        workspace.remove(own)


async def _run_inside(sandbox: Sandbox, argv: list[str], timeout: float) -> None:
    """One setup command in the sandbox; a sandbox that cannot run it is SandboxUnavailable (category sandbox)."""
    shown = " ".join(argv)[:200]
    done = await sandbox.exec(argv, timeout=timeout)
    said = deque([done.stdout, done.stderr])
    if done.timed_out:
        raise SetupFailed(f"environment.setup: `{shown}` was still running after {timeout:g}s in the {sandbox.kind} "
                          f"sandbox, and was killed (raise environment.setup.timeout){_said(said)}")
    if done.exit_code != 0:
        raise SetupFailed(f"environment.setup: `{shown}` exited with {done.exit_code} in the {sandbox.kind} "
                          f"sandbox{_said(said)}")


async def _run_command(argv: list[str], cwd: Path, timeout: float) -> None:
    shown = " ".join(argv)[:200]
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, cwd=str(cwd), stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT, start_new_session=True)
    except OSError as exc:
        raise SetupFailed(f"environment.setup: cannot run `{shown}` ({exc.strerror or type(exc).__name__}); is the "
                          "program installed and on PATH?") from None
    tail: deque[str] = deque()
    try:
        await asyncio.wait_for(_read_tail(proc, tail), timeout)
    except TimeoutError:
        await _kill(proc)
        raise SetupFailed(f"environment.setup: `{shown}` was still running after {timeout:g}s (raise "
                          f"environment.setup.timeout){_said(tail)}") from None
    except BaseException:  # cancelled (sample_timeout, Ctrl-C): no command outlives its sample
        await asyncio.shield(_kill(proc))
        raise
    if proc.returncode != 0:
        raise SetupFailed(f"environment.setup: `{shown}` exited with {proc.returncode}{_said(tail)}")


async def _read_tail(proc: asyncio.subprocess.Process, tail: deque[str]) -> None:
    """Read the command's output to its end, keeping only the last OUTPUT_TAIL characters, and wait for it."""
    assert proc.stdout is not None
    kept = 0
    while chunk := await proc.stdout.read(_CHUNK):
        text = chunk.decode("utf-8", errors="replace")
        tail.append(text)
        kept += len(text)
        while kept - len(tail[0]) >= OUTPUT_TAIL:
            kept -= len(tail.popleft())
    await proc.wait()


def _said(tail: deque[str]) -> str:
    text = "".join(tail)[-OUTPUT_TAIL:].strip()
    return f"; its output ends: {text}" if text else " (no output)"


async def _kill(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(Exception):
        await asyncio.wait_for(proc.wait(), 5)
