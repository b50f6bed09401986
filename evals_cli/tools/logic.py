"""Tools with logic: `python: tools.py:cancel_reservation` (or `module:attr`) names a function that gets the
call's arguments and the episode's world and returns the result, or raises `ToolError` to refuse (the agent
sees the message as a tool error). It may read and change several records and files at once; the world's diff
is the episode's final state, as for effects.

    from evals_cli.tools.logic import ToolError

    def cancel_reservation(arguments, world):
        booking = world.records["reservations"].get(arguments["reservation_id"])
        if booking is None or booking["status"] == "cancelled":
            raise ToolError("no active reservation with that id")
        booking["status"] = "cancelled"
        return {"status": "cancelled"}

It is the suite's own code, so it runs under the custom-code guard (evals_cli/custom_code/): loaded only from
the suite's folders, an exit or KeyboardInterrupt it raises becomes that sample's error (category custom_code),
and it gets what is left of the sample's `sample_timeout`. Any other exception is a bug of the suite's tool,
not the agent's doing: the sample errors, naming the function.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from evals_cli import custom_code

ToolFunction = Callable[[dict[str, Any], Any], Any]


class ToolError(Exception):
    """Raised by a tool function to refuse the call: the agent sees `Error: <message>` as the tool's result."""


def load_tool_function(ref: str, base_dir: Path) -> ToolFunction:
    """The function named by 'file.py:name' (relative to the suite's folder, confined like any custom file) or
    'package.module:name'; ValueError naming what is wrong."""
    module_part, _, name = ref.rpartition(":")
    if not module_part or not name:
        raise ValueError(f"python: '{ref}': name the function as file.py:function or module:function")
    if module_part.endswith(".py"):
        from evals_cli.code_loading import NotImported, load_object

        found, _ = load_object(ref, base_dir, "tool function")
        if isinstance(found, NotImported):
            return _not_imported
    elif not custom_code.may_run():  # evals validate without --import-code: an installed module is not run either
        return _not_imported
    else:
        try:
            module: Any = None

            def load() -> None:
                nonlocal module
                module = importlib.import_module(module_part)

            custom_code.import_guarded(load, f"tool function {module_part}")
        except ImportError as exc:
            raise ValueError(f"python: '{ref}': cannot import {module_part} ({exc})") from None
        found = getattr(module, name, None)
        if found is None:
            raise ValueError(f"python: '{ref}': {module_part} has no attribute {name}")
    if not callable(found):
        raise ValueError(f"python: '{ref}' is not a function")
    return found


def load_logic(blocks: Mapping[str, Mapping[str, Any]], base_dir: Path) -> list[str]:
    """Load every tool with logic (`python:`) of the suite's tool blocks (`tools`, `user_tools`) into its spec;
    the problems, each naming `block.tool.python`."""
    from evals_cli.errors import ConfigError

    problems = []
    for block, tools in blocks.items():
        for name, spec in tools.items():
            if spec.python is not None:
                try:
                    spec._logic = load_tool_function(spec.python, base_dir)
                except (ValueError, ConfigError, custom_code.CustomCodeError) as exc:
                    problems.append(f"{block}.{name}.python: {exc}")
    return problems


def _not_imported(arguments: dict[str, Any], world: Any) -> Any:
    raise RuntimeError("this tool function was checked without being imported (evals validate)")


async def run_tool_function(fn: ToolFunction, ref: str, arguments: dict[str, Any], world: Any) -> tuple[str, bool]:
    """(result text, is_error) of one call: ToolError is the agent's tool error; an exit, an interrupt, running
    out of the sample's time or any other exception raises CustomCodeError (the sample's error). The function
    runs in a worker thread of its own (custom_code.call) and is awaited, so the run's event loop (the other
    samples, the users, the judge, Ctrl-C) goes on while it works; cancelling the sample stops waiting for it."""
    where = f"tool function {ref}"
    try:
        value = await custom_code.call(fn, arguments, world, where=where, thread_name=f"evals tool {ref}"[:60])
    except ToolError as error:
        return f"Error: {error}", True
    except custom_code.CustomCodeError:
        raise
    except Exception as error:
        raise custom_code.CustomCodeError(where, f"raised {type(error).__name__}: {error}",
                                          "the sample errored; raise ToolError to refuse a call") from error
    if value is None:
        return "", False
    return (value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)), False
