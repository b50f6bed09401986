"""The computer tools by name: what the agent is shown of each (a `ToolSpec` with its JSON schema), marked so the
toolbox sends their calls to the episode's computer (computer/session.py), never to a mock."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from evals_cli.models.tools import ToolSpec

ComputerTool = Literal["bash", "edit"]
NAMES: tuple[str, ...] = ("bash", "edit")
DEFAULT_TIMEOUT_S = 60
MAX_TIMEOUT_S = 600

BASH = ("Run a shell command with `bash -c` in /workspace (the task's files) and read what it printed (stdout, "
        "then stderr) and its exit code. Each call starts a new shell: `cd` and variables do not carry over, so "
        "chain commands with && in one call. Long output is cut; a command past its timeout is killed.")
EDIT = ("View and edit files in /workspace. Commands: `view` (a file with line numbers, or a directory's files "
        "two levels deep; view_range [start, end] shows part of a file, end -1 to the last line), `create` (write "
        "file_text as the whole file), `str_replace` (replace old_str, which must occur exactly once, with "
        "new_str), `insert` (new_str after line insert_line; 0: at the start). Paths are inside /workspace "
        "(relative ones are taken from there).")

_SCHEMAS: dict[str, dict[str, Any]] = {
    "bash": {"type": "object", "properties": {
        "command": {"type": "string", "description": "The command line, run by bash -c in /workspace."},
        "timeout": {"type": "integer", "description": f"Seconds before the command is killed (default "
                    f"{DEFAULT_TIMEOUT_S}, at most {MAX_TIMEOUT_S})."}},
        "required": ["command"]},
    "edit": {"type": "object", "properties": {
        "command": {"type": "string", "enum": ["view", "create", "str_replace", "insert"],
                    "description": "What to do."},
        "path": {"type": "string", "description": "A file or directory inside /workspace."},
        "file_text": {"type": "string", "description": "create: the file's whole text."},
        "old_str": {"type": "string", "description": "str_replace: the exact text to replace (once in the file)."},
        "new_str": {"type": "string", "description": "str_replace: the text that replaces it; insert: the text "
                    "inserted."},
        "insert_line": {"type": "integer", "description": "insert: the line after which new_str goes (0: start)."},
        "view_range": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2,
                       "description": "view: [start, end] lines of a file (end -1: to the last line)."}},
        "required": ["command", "path"]},
}


def computer_tool(name: str) -> ToolSpec:
    """The spec the agent is shown for one computer tool, marked as the computer's (`ToolSpec.computer`)."""
    spec = ToolSpec(description=BASH if name == "bash" else EDIT, parameters=_SCHEMAS[name])
    spec._computer = name
    return spec


def computer_tools(names: Sequence[str]) -> dict[str, ToolSpec]:
    return {name: computer_tool(name) for name in dict.fromkeys(names)}
