"""`evals list` (the registered kinds, the settings, or the tools a suite's agent sees: `evals_cli.catalog`,
`evals_cli.tool_listing`) and `evals schema` (the suite's JSON Schema: `evals_cli.suite_schema`)."""

from __future__ import annotations

import difflib
import shutil
import sys
from pathlib import Path
from typing import Annotated

import typer

from evals_cli.catalog import render_section
from evals_cli.cli.printing import write_out
from evals_cli.errors import ConfigError
from evals_cli.suite_schema import schema_text
from evals_cli.tool_listing import offered_tools, render

LISTABLE = ("graders", "extractors", "targets", "gates", "effects", "users", "settings")


def schema(
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write the schema to this file instead of printing it (e.g. suite.schema.json beside your suites).")] = None,
) -> None:
    """Print the JSON Schema of suite.yaml (the installed plug-ins' kinds included), for editors: a suite whose first
    line is `# yaml-language-server: $schema=suite.schema.json` gets every key completed and checked as you type."""
    text = schema_text()
    if output is None:
        write_out(text)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{output}: cannot write the schema there: {exc.strerror or exc}") from None
    print(f"wrote {output}: the JSON Schema of suite.yaml; point a suite at it with its first line:\n"
          f"  # yaml-language-server: $schema={output.name}")


def list_kinds(
    what: Annotated[str | None, typer.Argument(metavar="WHAT", help="graders, extractors, targets, gates, effects, users "
                                                                        "or settings (default: all seven); or tools SUITE.")] = None,
    suite: Annotated[Path | None, typer.Argument(metavar="SUITE", help="With `tools`: the suite whose tools to list.")] = None,
    target_file: Annotated[Path | None, typer.Option("--target", help="With `tools`: a --target file, as for evals run.")] = None,
    replay: Annotated[Path | None, typer.Option("--replay", help="With `tools`: read the MCP servers' tool lists from this recording instead of starting them.")] = None,
) -> None:
    """List every registered grader, extractor, target and gate kind, the simulated-user options, from the schemas,
    and the environment variables read (settings); `evals list tools SUITE` lists the tools the suite's agent will
    see and where each comes from (its MCP servers are started to list theirs)."""
    if what == "tools" or suite is not None:
        if what != "tools" or suite is None:
            raise ConfigError("give the suite whose tools to list: evals list tools SUITE")
        sys.stdout.write(render(offered_tools(suite, target_file, replay), max(60, shutil.get_terminal_size((100, 24)).columns)) + "\n")
        return
    if what is not None and what not in LISTABLE:
        hint = difflib.get_close_matches(what, LISTABLE, n=1)
        more = f"did you mean '{hint[0]}'? " if hint else ""
        raise ConfigError(f"cannot list '{what}'; {more}choose one of: {', '.join(LISTABLE)}")
    width = max(60, min(shutil.get_terminal_size((100, 24)).columns, 120))
    sections = [what] if what else list(LISTABLE)
    write_out("\n\n".join(render_section(name, width) for name in sections) + "\n")
