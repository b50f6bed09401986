"""How every command ends on a problem: our own errors become their message and exit code, a bad EVALS_* value
is exit 2 before the command does anything, and a bug shows its traceback only with EVALS_DEBUG=1."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any, NoReturn

import typer

from evals_cli.custom_code import EXIT_GUARD
from evals_cli.display.problems import print_problems
from evals_cli.errors import EXIT_INCOMPLETE, EXIT_INVALID, ConfigError, EvalsError
from evals_cli.registry import blamed_plugin
from evals_cli.settings import check, knob


def fail(problems: list[str], code: int) -> NoReturn:
    print_problems(problems, code)
    raise typer.Exit(code)


def guarded(fn: Callable[..., None]) -> Callable[..., None]:
    """Our own errors become a message and an exit code; a bug shows its traceback only with EVALS_DEBUG=1."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        try:
            with EXIT_GUARD:  # the suite's code cannot exit for us, even from a thread it left running
                _check_settings()
                return fn(*args, **kwargs)
        except ConfigError as exc:
            fail(exc.problems, exc.exit_code)
        except EvalsError as exc:
            fail([str(exc)], exc.exit_code)
        except KeyboardInterrupt:  # before the run started (or after): nothing to save
            raise typer.Exit(130) from None
        except (typer.Exit, typer.Abort):
            raise
        except Exception as exc:
            if _debug():
                raise
            blamed = blamed_plugin(exc)  # an installed plug-in's own code: exit 2 naming it, not ours to own
            if blamed is not None:
                fail([blamed], EXIT_INVALID)
            fail([f"internal error: {type(exc).__name__}: {exc} (set EVALS_DEBUG=1 for the traceback)"],
                 EXIT_INCOMPLETE)

    return wrapper


def _check_settings() -> None:
    """A bad EVALS_* value is exit 2 naming it, before the command does anything. Only EVALS_* variables have a
    type that can be wrong (the others are text): without one set, the settings model is not even built."""
    if any(name.startswith("EVALS_") for name in os.environ):
        check()


def _debug() -> bool:
    try:
        return bool(knob("debug"))
    except ConfigError:
        return False
