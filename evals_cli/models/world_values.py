"""How the world spells what it holds: one spelling of a file path (`normal_path`, `normal_target`), a record id
compared as text (`record_key`), and the JSON a file or record may hold (`json_problem`).

Apart from the specs because the declared world, the effects that change it, the expected state and the world
itself (evals_cli/environment/) must all agree on them: two spellings of one file would be two files.
"""

from __future__ import annotations

import posixpath
import unicodedata
from typing import Any


def normal_path(path: str) -> str:
    """The one spelling of a file path in the world: `./config.json` and `config.json` name the same file, as
    they would on a disk; a trailing slash or a doubled one does not make another file. The world has one root,
    so `/config.json` is `config.json` too (files.list already treats `/` as the root: a listing the agent then
    could not read back would be a trap no real tool sets). Case matters, as on Linux."""
    text = unicodedata.normalize("NFC", str(path).strip())  # "café" typed or pasted decomposed is the same name
    if not text or text in (".", "./"):
        return ""
    norm = posixpath.normpath(text).lstrip("/")
    return "" if norm == "." else norm.removeprefix("./")


def outside_root(path: str) -> bool:
    """A normalised path that climbs out of the world (`../secrets`): no file of the world can be there."""
    return path == ".." or path.startswith("../")


def json_problem(value: Any, at: str) -> str | None:
    """Where a value loaded from YAML is not JSON (a date, a set, bytes, NaN), naming the spot and the fix: the
    world's files and records are what the agent reads back as JSON, and a date there failed the tool call at
    run time instead of the suite at load time."""
    stack: list[tuple[Any, str]] = [(value, at)]
    while stack:
        item, where = stack.pop()
        if item is None or isinstance(item, str | bool | int):
            continue
        if isinstance(item, float):
            if item != item or item in (float("inf"), float("-inf")):
                return f"{where}: {item} is not a JSON number; give a finite number or a string"
            continue
        if isinstance(item, dict):
            for key, sub in item.items():
                if not isinstance(key, str):
                    return f"{where}: key {key!r} is not text; quote it"
                stack.append((sub, f"{where}.{key}"))
            continue
        if isinstance(item, list):
            stack.extend((sub, f"{where}[{i}]") for i, sub in enumerate(item))
            continue
        return (f"{where}: {item!r} ({type(item).__name__}) is not a JSON value; quote it in the YAML "
                f"(e.g. '2024-01-01') to make it text")
    return None


def record_key(value: Any) -> str:
    """Record ids compare as text: a model sends `"12345"` or `12345` for the same order."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def normal_target(target: str) -> str:
    """A path or `collection/id` as the world spells it (paths normalised; a record target kept as written)."""
    return normal_path(target)
