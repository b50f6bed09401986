"""Shared test helpers: write a suite + dataset into a temp folder, run the real CLI (in this process, or in a
subprocess where the process itself is under test)."""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent

TOOLS = {
    "read_file": {
        "description": "Read a file",
        "parameters": {"path": "File path"},
        "cases": [{"when": {"path": ".env"}, "returns": "DB_HOST=localhost\nDB_PORT=5432"}],
        "error": "file not found",
    },
    "list_files": {"description": "List files", "parameters": {"directory": "Directory"}, "returns": ".env\nsrc/"},
}


def write_suite(tmp: Path, rows: list[dict[str, Any]], *, base_url: str = "http://127.0.0.1:9/v1",
                graders: dict[str, Any] | None = None, **overrides: Any) -> Path:
    """A suite.yaml and data.jsonl under tmp; returns the suite path."""
    (tmp / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    suite: dict[str, Any] = {
        "name": "test-suite",
        "dataset": "data.jsonl",
        "concurrency": 2,
        "target": {"kind": "openai_chat", "base_url": base_url, "model": "scripted", "api_key": "sk-test",
                   "max_retries": 0, "timeout": 10, "max_steps": 5},
        "tools": TOOLS,
        "graders": graders or {
            "answer": {"kind": "tool", "function": "contains"},
            "order": {"kind": "tool_order"},
            "avoided": {"kind": "tools_avoided"},
        },
        "gate": {"kind": "weighted_average", "aggregation": "avg_score", "op": "gte", "value": 0.8},
    }
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(suite.get(key), dict):
            suite[key] = {**suite[key], **value}
        else:
            suite[key] = value
    path = tmp / "suite.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    return path


@dataclass
class CliResult:
    """What a run of `evals` left: the exit code and both streams, as `subprocess.run` names them."""

    returncode: int
    stdout: str
    stderr: str


def _cli_env(env: dict[str, str] | None) -> dict[str, str | None]:
    """The environment a user's shell would give: no developer endpoints or keys, plain output, wide lines."""
    scrubbed: dict[str, str | None] = {k: None for k in os.environ
                                       if k.startswith(("EVAL_AGENT_", "EVAL_JUDGE_", "EVAL_USER_", "OPENAI_"))}
    scrubbed.update({"NO_COLOR": "1", "COLUMNS": "200"})
    scrubbed.update(env or {})
    return scrubbed


def run_cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
            timeout: float = 120, input: str | None = None) -> CliResult:  # input: stdin, not a terminal
    """The `evals` command run in this process through Typer's runner: the same exit code, stdout and stderr a
    user sees, without paying for an interpreter start per call. Tests where the process itself matters
    (signals, a killed run, `os._exit`, import costs) use `run_cli_process`. `timeout` is kept for that
    signature; here pytest's own time limit bounds a call."""
    from typer.testing import CliRunner

    command = _evals_command()
    runner = CliRunner()
    with _process_state_kept(cwd or ROOT), runner.isolation(input=input, env=_cli_env(env)) as (out, err, _):
        try:
            command.main(args=list(args), prog_name=runner.get_default_prog_name(command))
            code: object = 0
        except SystemExit as exc:  # any other exception is a bug that escaped the CLI's guard: it propagates
            code = exc.code
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
        if code is not None and not isinstance(code, int):  # a message, as the interpreter and Typer's runner print it
            print(code)
            sys.stdout.flush()
            code = 1
        return CliResult(code or 0, _text(out.getvalue()), _text(err.getvalue()))


def _text(data: bytes) -> str:
    """A captured stream as Typer's runner gives it: UTF-8, bad bytes replaced, CRLF as LF."""
    return data.decode("utf-8", "replace").replace("\r\n", "\n")


@functools.cache
def _evals_command() -> Any:
    """The click command tree of `evals`, built once per test process. Typer's runner builds it again at every
    call (every command's parameters, their types read from the annotations: some 20 ms, a fifth of a typical
    in-process call); the tree holds no state of a call (each call gets a fresh click context)."""
    import typer.main

    from evals_cli.cli import app

    return typer.main.get_command(app)


_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGALRM") if hasattr(signal, name))


@contextlib.contextmanager
def _process_state_kept(cwd: Path) -> Iterator[None]:
    """Run in `cwd` and leave the process as it was found: the working directory, every environment variable
    (Typer's runner only puts back those it was given), signal handlers, the root logger's handlers and level,
    sys.argv and the exits the custom-code guard replaces while it runs. A command that changed one of them
    would otherwise change the tests that follow it in the same worker."""
    import logging
    import posix

    previous, environ, argv = Path.cwd(), dict(os.environ), list(sys.argv)
    handlers = {sig: signal.getsignal(sig) for sig in _SIGNALS}
    root = logging.getLogger()
    log_handlers, log_level = list(root.handlers), root.level
    exits = (os._exit, posix._exit, sys.exit)
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(previous)
        for name in set(os.environ) - set(environ):
            del os.environ[name]
        os.environ.update({k: v for k, v in environ.items() if os.environ.get(k) != v})
        sys.argv[:] = argv
        for sig, handler in handlers.items():
            # None: set outside Python, cannot be put back; only the main thread may set a handler
            if handler is not None and signal.getsignal(sig) is not handler:
                signal.signal(sig, handler)
        root.handlers[:] = log_handlers
        root.setLevel(log_level)
        os._exit, posix._exit, sys.exit = exits


def run_cli_process(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
                    timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The real `evals` command in a subprocess (true exit codes, real stdout/stderr, its own signals)."""
    full_env = {k: v for k, v in os.environ.items()
                if not k.startswith(("EVAL_AGENT_", "EVAL_JUDGE_", "EVAL_USER_", "OPENAI_"))}
    full_env.update({"NO_COLOR": "1", "COLUMNS": "200"})
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "evals_cli", *args], capture_output=True, text=True,
                          env=full_env, cwd=cwd or ROOT, timeout=timeout)


def process_program() -> str:
    """What `evals` prints as its own name when started as `python -m evals_cli` (run_cli_process, start_run),
    so that a test compares a printed command with what a user pasting it would run (evals_cli/invocation.py)."""
    from evals_cli.invocation import command

    argv = sys.argv
    sys.argv = [str(ROOT / "evals_cli" / "__main__.py")]
    try:
        return command()
    finally:
        sys.argv = argv


def start_run(suite: Path, out: Path, *extra: str) -> subprocess.Popen[str]:
    """`evals run` started in a real subprocess and left running, for tests that signal or kill it."""
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.Popen([sys.executable, "-m", "evals_cli", "run", str(suite), "-o", str(out), *extra],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_lines(path: Path, n: int, timeout: float = 30) -> None:
    """Until a run's results file holds `n` lines (bounded: a run that never gets there fails the test)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and len(path.read_text().splitlines()) >= n:
            return
        time.sleep(0.05)
    raise AssertionError(f"{path} never reached {n} lines")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def load_script(name: str) -> ModuleType:
    """scripts/NAME.py (a script, not a package), imported so a test can call what it does and compare its output."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class SyncToolbox:
    """A sample's toolbox and world as the Episode builds them (targets/episode.py), for tests of the tools alone:
    each call is awaited to its end on a loop of its own (`asyncio.run`), and `state_changes` is the world's diff
    from the start, as the Episode records it."""

    def __init__(self, tools: dict[str, Any], environment: Any = None) -> None:
        from evals_cli.environment.world import World
        from evals_cli.tools.mock import MockToolbox, needs_world

        self.world = World(environment) if needs_world(tools, environment) else None
        self.start = self.world.copy() if self.world is not None else None
        self.box = MockToolbox(dict(tools), self.world)

    @property
    def tools(self) -> dict[str, Any]:
        return self.box.tools

    @property
    def calls(self) -> dict[str, int]:
        return self.box.calls

    def schemas(self) -> list[dict[str, Any]]:
        return self.box.schemas()

    def call(self, call_id: str, name: str, raw_arguments: str) -> Any:
        import asyncio

        return asyncio.run(self.box.call(call_id, name, raw_arguments))

    def state_changes(self) -> list[Any] | None:
        if self.world is None or self.start is None:
            return None
        return self.world.diff(self.start)


def set_started(folder: Path, when: str) -> None:
    """Two runs of a test start in the same second: give each its own start, as runs a day apart have."""
    path = folder / "summary.json"
    data = json.loads(path.read_text())
    data["started_at"] = when
    path.write_text(json.dumps(data))


def calls_of(line: dict[str, Any]) -> list[dict[str, Any]]:
    """The agent's tool calls in a results line, in order."""
    return [c for turn in line["trajectory"]["turns"] for step in turn["steps"] for c in step["tool_calls"]]
