"""`evals watch SUITE`: the command's options, parsed into the library's WatchOptions; the work is
evals_cli/watch/. cli.py registers it (`app.command("watch")`), under its own error guard."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from evals_cli.errors import ConfigError

ONCE_HELP = ("Watch for this long (e.g. 10m, 90s), then exit with the window's gate: 0 passed, 1 failed, 3 no "
             "verdict (fewer than window.min_samples graded, or too many errored). For a CI job on a canary.")


def watch(
    suite: Annotated[Path, typer.Argument(metavar="SUITE", help="A watch suite: graders, gate and a watch: block (no target, no dataset).")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Folder of the results windows (one subfolder per replica).")] = Path("results/watch"),
    listen: Annotated[str, typer.Option("--listen", metavar="HOST:PORT", help="Where the OTLP/HTTP endpoint listens; off loopback it needs --tls-cert, --tls-key and --token.")] = "127.0.0.1:4318",
    tls_cert: Annotated[Path | None, typer.Option("--tls-cert", help="PEM certificate chain: serve over TLS.")] = None,
    tls_key: Annotated[Path | None, typer.Option("--tls-key", help="The certificate's PEM private key.")] = None,
    token: Annotated[str | None, typer.Option("--token", envvar="EVALS_WATCH_TOKEN", help="Bearer token every request must carry (prefer EVALS_WATCH_TOKEN).")] = None,
    once: Annotated[str | None, typer.Option("--once", metavar="DURATION", help=ONCE_HELP)] = None,
    exit_on_fail: Annotated[bool, typer.Option("--exit-on-fail", help="Exit 1 as soon as the window's gate fails.")] = False,
    no_judge: Annotated[bool, typer.Option("--no-judge", help="Skip model_judge graders: no judge calls at all.")] = False,
    judge_model: Annotated[str | None, typer.Option("--judge-model", help="Judge model for every model_judge grader.")] = None,
    judge_base_url: Annotated[str | None, typer.Option("--judge-base-url", help="Judge endpoint for every model_judge grader.")] = None,
) -> None:
    """Grade live traffic: take OTLP spans, grade finished conversations with the suite's graders, keep a rolling
    gate and /metrics, until SIGTERM (or --once)."""
    from evals_cli.run_options import RunOptions
    from evals_cli.watch.grading import ConversationGrader
    from evals_cli.watch.server import Listen, parse_listen
    from evals_cli.watch.service import Watch, WatchOptions
    from evals_cli.watch.spec import seconds
    from evals_cli.watch.suite import load_watch_suite

    host, port = parse_listen(listen)
    try:
        duration = seconds(once, "--once") if once is not None else None
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    ws = load_watch_suite(suite)
    options = WatchOptions(output=output, listen=Listen(host, port, tls_cert, tls_key, token or None),
                           once=duration, exit_on_fail=exit_on_fail,
                           run=RunOptions(no_judge=no_judge, judge_model=judge_model, judge_base_url=judge_base_url))
    try:
        service = Watch(ws, options, ConversationGrader)
    except OSError as exc:  # the port is taken, the folder cannot be written
        raise ConfigError(f"evals watch: cannot start: {exc.strerror or exc} (--listen {listen}, -o {output})") \
            from None
    raise typer.Exit(asyncio.run(service.run()))
