"""The Typer application's own classes: every command gets -h beside --help, and flags are shown as flags.

Kept apart from the commands (one module each in this package, thin over the library API): these only shape
the help."""

from __future__ import annotations

import sys
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup


class _FlagsTakeNoValue:
    """Help that shows a flag (`--no-judge`, `--quiet`, `--help`) as a flag: Typer would print `<bool>` after it,
    as if it took a value."""

    def get_params(self, ctx: Any) -> list[Any]:
        params: list[Any] = super().get_params(ctx)  # type: ignore[misc]
        for param in params:
            if getattr(param, "is_flag", False) and param.metavar is None:
                param.metavar = ""
        return params


class _Command(_FlagsTakeNoValue, TyperCommand):
    pass


class EvalsGroup(_FlagsTakeNoValue, TyperGroup):
    pass


class EvalsApp(typer.Typer):
    """Every command gets -h as well as --help (inherited from the group's context) and flags shown as flags."""

    def command(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("cls", _Command)
        return super().command(*args, **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The process's command line names one command (`evals run ...`): build only that one. Typer builds every
        command's parameters (their types read, their help resolved) before parsing, about 7 ms of a run's start
        for the eleven it does not run. Anything else (no command, an option first, a misspelt or unknown name,
        a caller's own arguments) builds the whole tree, so help, suggestions and errors are Typer's own."""
        name = sys.argv[1] if len(sys.argv) > 1 and not args and not kwargs else None
        chosen = [info for info in self.registered_commands if name is not None and _name(info) == name]
        if len(chosen) != 1 or self.registered_groups:
            return super().__call__(*args, **kwargs)
        every = self.registered_commands
        self.registered_commands = chosen
        try:
            return super().__call__()
        finally:
            self.registered_commands = every


def _name(info: Any) -> str:
    """A registered command's name as Typer gives it: its own, or its function's with `_` as `-`."""
    return str(info.name or info.callback.__name__.lower().replace("_", "-"))
