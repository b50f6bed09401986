"""The `evals` command: the application, its commands in the order `evals --help` lists them, and the process's
entry point. A command is one module of this package (or one of a group: report.py holds `report` and
`compare`), a function that parses its options, calls one library function and renders what it returns; each is
registered here, guarded (guard.py: our errors become their message and exit code).

`evals --help` and `evals --version` import every command's module: those import at their top only what costs
start-up nothing (typer, the errors, the small modules a command uses), and the library a command runs (the
suite's models, the runner, Rich) when it runs."""

from __future__ import annotations

from typing import Annotated

import typer

from evals_cli import __version__
from evals_cli.cli import analyze, calibration, generate, history, init, listing, merge, report, run, validate, watch
from evals_cli.cli.app import EvalsApp, EvalsGroup
from evals_cli.cli.guard import guarded
from evals_cli.shutdown import exit_code, exit_now, hold_collections

app = EvalsApp(
    name="evals",
    help="Evaluate multi-turn LLM agents from a YAML suite: mocked tools, trajectory graders, an LLM judge, "
         "a CI gate.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=EvalsGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(value: bool) -> None:
    if value:
        print(f"evals {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[bool, typer.Option("--version", "-V", callback=_print_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    pass


COMMANDS = (run.run, validate.validate, report.report, report.compare, calibration.label, calibration.calibrate,
            analyze.analyze, merge.merge, init.init, listing.schema, history.history, history.view, generate.generate,
            watch.watch)

for command in COMMANDS:
    app.command()(guarded(command))
app.command("list")(guarded(listing.list_kinds))


def main() -> None:
    """The `evals` command: ends without the interpreter's teardown (see `evals_cli.shutdown`). Only here, the
    process's own entry point (`evals_cli.__main__` calls it, for the script and `python -m` alike): `app` called
    in-process (tests, a caller's program) exits as usual."""
    hold_collections()  # until settle_heap, when a run's samples start
    try:
        app()
    except SystemExit as exc:
        exit_now(exit_code(exc.code))
    exit_now(0)
