"""The `bash` computer tool: one command line run by `bash -c` in /workspace, its output as the agent reads it."""

from __future__ import annotations

from typing import Any

from evals_cli.computer.tools import DEFAULT_TIMEOUT_S, MAX_TIMEOUT_S
from evals_cli.sandbox.base import ExecResult

MAX_OUTPUT = 32 * 1024  # bytes of stdout and of stderr a call keeps (the head; the cut is said)


class BashRefused(Exception):
    """Arguments the tool cannot run (no command, a timeout that is not a number): the agent's error."""


def bash_argv(arguments: dict[str, Any]) -> tuple[list[str], float, str]:
    """(argument vector, timeout, a note for the agent or "") of one call; BashRefused on bad arguments."""
    command = arguments.get("command")
    if not isinstance(command, str) or not command.strip():
        raise BashRefused("command is required: the command line to run, as a string")
    timeout = arguments.get("timeout", DEFAULT_TIMEOUT_S)
    if timeout is None:
        timeout = DEFAULT_TIMEOUT_S
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise BashRefused(f"timeout must be a positive number of seconds, got {timeout!r}")
    note = ""
    if timeout > MAX_TIMEOUT_S:
        note = f"[timeout {timeout:g}s lowered to the most a call may take, {MAX_TIMEOUT_S}s]\n"
        timeout = MAX_TIMEOUT_S
    return ["bash", "-c", command], float(timeout), note


def bash_text(result: ExecResult, timeout: float, note: str = "") -> tuple[str, bool]:
    """What the agent reads: stdout, stderr under its own heading, the exit code; a command killed at its timeout
    is a tool error (what it printed before is kept). A non-zero exit is not an error of the tool: the command
    ran, and its exit code is part of what it says (a failing test run is information, not a broken tool)."""
    parts = [note + result.stdout.rstrip("\n")] if note or result.stdout else []
    if result.stderr:
        parts.append("[stderr]\n" + result.stderr.rstrip("\n"))
    if result.timed_out:
        said = "\n".join(parts)
        return (f"Error: the command did not finish within {timeout:g}s and was killed (raise timeout, or run it "
                f"in the background)" + (f"; its output until then:\n{said}" if said else "")), True
    parts.append(f"[exit code {result.exit_code}]")
    return "\n".join(parts), False

