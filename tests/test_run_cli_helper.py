"""tests.helpers.run_cli, the in-process `evals` most tests use: what Typer's own runner gives, from a command tree
built once per process, and the process left as it was found after each call."""

from __future__ import annotations

import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evals_cli.cli import app
from tests.helpers import ROOT, _cli_env, _process_state_kept, run_cli


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["run", "--help"], ["validat", "x"], [],
                                  ["validate", "suites/multi_turn.yaml"], ["run", "no-such-suite.yaml"],
                                  ["list", "gates"]], ids=lambda a: " ".join(a) or "no-args")
def test_the_same_exit_code_and_streams_as_typers_runner(args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    typers = CliRunner().invoke(app, args, env=_cli_env(None))
    ours = run_cli(*args)
    assert (ours.returncode, ours.stdout, ours.stderr) == (typers.exit_code, typers.stdout, typers.stderr)


def _state() -> tuple[Any, ...]:
    root = logging.getLogger()
    return (Path.cwd(), dict(os.environ), list(sys.argv), signal.getsignal(signal.SIGTERM), list(root.handlers),
            root.level, os._exit, sys.exit)


def test_a_call_leaves_cwd_environment_signals_logging_and_exits_as_they_were(tmp_path: Path) -> None:
    before = _state()
    try:
        with _process_state_kept(tmp_path):
            assert Path.cwd() == tmp_path
            os.environ["EVALS_LEFT_BEHIND"] = "1"
            os.environ.pop("PATH", None)
            sys.argv.append("--left")
            signal.signal(signal.SIGTERM, lambda *_: None)
            logging.getLogger().addHandler(logging.NullHandler())
            logging.getLogger().setLevel(logging.DEBUG)
            os._exit = sys.exit = lambda *_: None  # type: ignore[assignment]
        after = _state()
    finally:  # whatever the helper did, the rest of this worker's tests get the process back
        cwd, environ, argv, handler, handlers, level, os._exit, sys.exit = before
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(environ)
        sys.argv[:] = argv
        signal.signal(signal.SIGTERM, handler)
        logging.getLogger().handlers[:] = handlers
        logging.getLogger().setLevel(level)
    assert after == before
