"""The Typer application's own classes: every command gets -h beside --help, and flags are shown as flags.

Kept apart from cli.py, whose commands stay thin over the library API; these only shape the help."""

from __future__ import annotations

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
