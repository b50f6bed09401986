"""`${VAR}` and `${VAR:-default}` expansion in suite values."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

_PATTERN = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class MalformedVariable(Exception):
    """A `${` that does not start `${NAME}` or `${NAME:-default}` (unterminated, or a bad name)."""

    def __init__(self, fragment: str) -> None:
        super().__init__(fragment)
        self.fragment = fragment


class MissingVariable(Exception):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def expand_string(text: str, env: Mapping[str, str] | None = None, defaulted: list[str] | None = None) -> str:
    """Expand every `${VAR}` / `${VAR:-default}`; `$${` stays a literal `${`. The names whose default was used
    are added to `defaulted` when given (a value the environment did not set, so a message can say so)."""
    env = os.environ if env is None else env

    def replace(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        value = env.get(name)
        if value is None or (value == "" and default is not None):
            if default is None:
                raise MissingVariable(name)
            if defaulted is not None:
                defaulted.append(name)
            return default
        return value

    parts = text.split("$${")
    for part in parts:  # what the pattern cannot read would otherwise stay in the value, silently
        left = _PATTERN.sub("", part)
        if "${" in left:
            raise MalformedVariable(left[left.index("${"):][:40])
    return "${".join(_PATTERN.sub(replace, part) for part in parts)


def expand(value: Any, path: tuple[str | int, ...], problems: list[tuple[tuple[str | int, ...], str]],
           env: Mapping[str, str] | None = None, defaults: dict[tuple[str | int, ...], str] | None = None) -> Any:
    """Expand variables in every string of a parsed YAML tree; collect missing ones with their key path, and in
    `defaults` (when given) the key paths whose value is a `${VAR:-default}` default, with the variable."""
    if isinstance(value, str):
        try:
            used: list[str] = []
            expanded = expand_string(value, env, used)
            if used and defaults is not None:
                defaults[path] = used[0]
            return expanded
        except MissingVariable as exc:
            problems.append((path, f"environment variable {exc.name} is not set; export it or write "
                                   f"${{{exc.name}:-default}}"))
            return value
        except MalformedVariable as exc:
            problems.append((path, f"'{exc.fragment}' is not a variable reference: write ${{NAME}} or "
                                   "${NAME:-default} (a name of letters, digits and _), or $${ for a literal ${"))
            return value
    if isinstance(value, dict):
        return {k: expand(v, (*path, k), problems, env, defaults) for k, v in value.items()}
    if isinstance(value, list):
        return [expand(v, (*path, i), problems, env, defaults) for i, v in enumerate(value)]
    return value
