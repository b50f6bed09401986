"""The `edit` computer tool: view, create, str_replace and insert, in the shape coding agents already know
(Anthropic's text editor tool, SWE-agent's str_replace_editor), on the files of the episode's /workspace.

It works on the host's copy of the workspace through `confined.Workspace`, so it needs no program inside the
sandbox and never follows a link out of it. Every refusal is a `PathRefused` or `EditRefused`, whose message the
agent reads as the tool's error; nothing the agent sends raises anything else.
"""

from __future__ import annotations

from typing import Any

from evals_cli.computer.confined import PathRefused, Workspace, listing, read_file, write_file

MAX_FILE_BYTES = 1024 * 1024  # what view, str_replace and insert read of one file
SNIPPET_LINES = 4  # lines of context shown around an edit
COMMANDS = ("view", "create", "str_replace", "insert")


class EditRefused(Exception):
    """A call the editor cannot carry out as asked (an argument missing, old_str not found once)."""


def _text(arguments: dict[str, Any], name: str, *, required: bool = True) -> str | None:
    value = arguments.get(name)
    if value is None:
        if required:
            raise EditRefused(f"{name} is required for command {arguments.get('command')}")
        return None
    if not isinstance(value, str):
        raise EditRefused(f"{name} must be a string, got {type(value).__name__}")
    return value


def numbered(text: str, first: int = 1) -> str:
    """`cat -n`'s layout: the line number, a tab, the line."""
    return "\n".join(f"{number:6}\t{line}" for number, line in enumerate(text.split("\n"), first))


def edit(root: Workspace, arguments: dict[str, Any]) -> str:
    """Carry out one call; the text the agent reads. PathRefused or EditRefused: the agent's error."""
    command = arguments.get("command")
    if command not in COMMANDS:
        raise EditRefused(f"command must be one of {', '.join(COMMANDS)}, got {command!r}")
    path = _text(arguments, "path")
    assert path is not None
    if command == "view":
        return _view(root, path, arguments.get("view_range"))
    if command == "create":
        return _create(root, path, _text(arguments, "file_text") or "")
    if command == "str_replace":
        old = _text(arguments, "old_str")
        assert old is not None
        return _replace(root, path, old, _text(arguments, "new_str", required=False) or "")
    return _insert(root, path, arguments.get("insert_line"), _text(arguments, "new_str") or "")


def _read(root: Workspace, path: str) -> tuple[str, str]:
    """(the path as shown, the file's text); refused for a folder or a missing file."""
    with root.locate(path) as found:
        info = found.lstat()
        if info is None:
            raise PathRefused(f"{found.path} does not exist; create it with command create")
        raw = read_file(found, MAX_FILE_BYTES)
        return found.path, raw.decode("utf-8", errors="replace")


def _write(root: Workspace, path: str, text: str, *, make_parents: bool = False) -> str:
    with root.locate(path, make_parents=make_parents) as found:
        write_file(found, text.encode("utf-8"))
        return found.path


def _view(root: Workspace, path: str, view_range: Any) -> str:
    with root.locate(path) as found:
        info = found.lstat()
        if info is None:
            raise PathRefused(f"{found.path} does not exist")
        if not found.name or _is_dir(info.st_mode):
            if view_range is not None:
                raise EditRefused("view_range applies to a file; this is a directory")
            entries = listing(found)
            return (f"Files and folders in {found.path}, 2 levels deep (hidden ones left out):\n"
                    + ("\n".join(entries) or "(empty)"))
        text = read_file(found, MAX_FILE_BYTES).decode("utf-8", errors="replace")
        shown_path = found.path
    lines = text.split("\n")
    if view_range is None:
        return f"{shown_path}:\n{numbered(text)}"
    start, end = _range(view_range, len(lines))
    return f"{shown_path} (lines {start}-{end}):\n" + numbered("\n".join(lines[start - 1:end]), start)


def _is_dir(mode: int) -> bool:
    import stat

    return stat.S_ISDIR(mode)


def _range(view_range: Any, count: int) -> tuple[int, int]:
    if (not isinstance(view_range, list) or len(view_range) != 2
            or not all(isinstance(n, int) and not isinstance(n, bool) for n in view_range)):
        raise EditRefused("view_range must be two integers [start, end] (end -1: to the last line)")
    start, end = view_range
    end = count if end == -1 else end
    if not 1 <= start <= count:
        raise EditRefused(f"view_range start {start} is not a line of the file (it has {count} lines)")
    if end < start or end > count:
        raise EditRefused(f"view_range end {view_range[1]} must be from {start} to {count}, or -1")
    return start, end


def _create(root: Workspace, path: str, file_text: str) -> str:
    with root.locate(path, make_parents=True) as found:
        info = found.lstat()
        if info is not None and (not found.name or _is_dir(info.st_mode)):
            raise PathRefused(f"{found.path} is a directory")
        write_file(found, file_text.encode("utf-8"))
        verb = "overwrote" if info is not None else "created"
        return f"{verb} {found.path} ({len(file_text.splitlines())} lines)"


def _replace(root: Workspace, path: str, old: str, new: str) -> str:
    shown_path, text = _read(root, path)
    if not old:
        raise EditRefused("old_str is empty; give the exact text to replace (use insert to add text)")
    count = text.count(old)
    if count == 0:
        raise EditRefused(f"old_str was not found in {shown_path}; it must match the file exactly, whitespace "
                          "and indentation included (view the file first)")
    if count > 1:
        lines = [str(text[:i].count("\n") + 1) for i in _positions(text, old)]
        raise EditRefused(f"old_str occurs {count} times in {shown_path} (lines {', '.join(lines[:10])}); include "
                          "more of the surrounding text so that it occurs once")
    at = text.index(old)
    changed = text[:at] + new + text[at + len(old):]
    _write(root, path, changed)
    first = text[:at].count("\n") + 1
    return f"edited {shown_path}; " + _snippet(changed, first, new.count("\n") + 1)


def _positions(text: str, part: str) -> list[int]:
    found, at = [], text.find(part)
    while at != -1:
        found.append(at)
        at = text.find(part, at + 1)
    return found


def _insert(root: Workspace, path: str, insert_line: Any, new: str) -> str:
    shown_path, text = _read(root, path)
    lines = text.split("\n")
    if not isinstance(insert_line, int) or isinstance(insert_line, bool):
        raise EditRefused("insert_line is required for command insert: the line after which new_str goes "
                          "(0: at the start)")
    if not 0 <= insert_line <= len(lines):
        raise EditRefused(f"insert_line {insert_line} must be from 0 to {len(lines)} (the file's lines)")
    added = new.split("\n")
    changed = "\n".join(lines[:insert_line] + added + lines[insert_line:])
    _write(root, path, changed)
    return f"inserted {len(added)} line(s) into {shown_path} after line {insert_line}; " + _snippet(
        changed, insert_line + 1, len(added))


def _snippet(text: str, first: int, count: int) -> str:
    """The changed lines with a few around them, numbered: what the agent checks its edit against."""
    lines = text.split("\n")
    start = max(1, first - SNIPPET_LINES)
    end = min(len(lines), first + count - 1 + SNIPPET_LINES)
    return f"lines {start}-{end} now read:\n" + numbered("\n".join(lines[start - 1:end]), start)
