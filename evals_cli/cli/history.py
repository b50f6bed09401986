"""`evals history` (the runs under a results folder and each suite's trend: `evals_cli.history`) and `evals view`
(the same, and every run's report, served on 127.0.0.1: `history.server`, handed its pages).

`evals --help` imports every command's module: the run history's models are imported when a command runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def history(
    folder: Annotated[Path, typer.Argument(metavar="DIR", help="The results folder (default: results).")] = Path("results"),
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="Show the N newest runs (the trends use all).")] = 30,
    as_json: Annotated[bool, typer.Option("--json", help="Print every run as JSON instead.")] = False,
) -> None:
    """The runs under a results folder, newest first (when, suite, models, pass rate, gate, cost), and each suite's
    trend over its last completed runs."""
    from evals_cli.history import scan_runs, trends

    entries = scan_runs(folder)
    if as_json:
        import json

        print(json.dumps([entry.as_json() for entry in entries], indent=2))
        return
    from evals_cli.display.console import make_console
    from evals_cli.history.render import render_history

    make_console().print(render_history(entries, trends(entries), str(folder), limit))


def view(
    folder: Annotated[Path, typer.Argument(metavar="DIR", help="The results folder (default: results).")] = Path("results"),
    port: Annotated[int, typer.Option("--port", "-p", min=0, max=65535, help="Port on 127.0.0.1 (0: any free one).")] = 8765,
) -> None:
    """Serve the run history and every run's report on http://127.0.0.1:PORT/ until Ctrl-C; a run in flight
    reloads itself."""
    from evals_cli.history import pages
    from evals_cli.history.server import HistoryServer

    server = HistoryServer(folder, port, pages=pages)
    print(f"serving the runs under {folder} at {server.url} (Ctrl-C stops)", flush=True)
    server.serve_until_interrupted()
    print("stopped", flush=True)
