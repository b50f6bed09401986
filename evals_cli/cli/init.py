"""`evals init`: a starter suite written into a folder (`evals_cli.scaffold`), and the commands to go on with.

`evals --help` imports every command's module: the scaffold (its templates read through importlib.resources) is
imported when the command runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def init(
    folder: Annotated[Path, typer.Argument(metavar="FOLDER", help="Where to write the suite; created when missing (default: here).")] = Path("."),
    force: Annotated[bool, typer.Option("--force", help="Replace files of the same names that already exist.")] = False,
    sandbox: Annotated[bool, typer.Option("--sandbox", help="Run each episode in a bubblewrap sandbox (sandbox: {kind: bwrap}).")] = False,
) -> None:
    """Scaffold a starter suite (tools, graders, judge rubric, gate, Makefile) and a recording to replay offline."""
    from evals_cli.scaffold import FILES, next_commands, scaffold

    result = scaffold(folder, force=force, sandbox=sandbox)
    where = f"{folder} (created)" if result.created_folder else str(folder)
    lines = [f"wrote {len(result.written)} files to {where}:"]
    width = max(len(str(path)) for path in result.written)
    lines += [f"  {str(path):<{width}}  {FILES[path.name]}" for path in result.written]
    lines += ["", "next:"]
    for step, why in next_commands(folder):
        lines += [f"  # {why}", f"  {step}"] if why else [f"  {step}"]
    print("\n".join(lines))
