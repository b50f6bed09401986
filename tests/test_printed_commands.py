"""Every command evals-cli prints for the user runs when pasted, even where `evals` is not on PATH (right after
`make demo`): the program is named the way it was started. The tests start the real `evals` script by a
relative path, in a shell whose PATH lacks the virtualenv, and run what it printed verbatim."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evals_cli import invocation

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path(sys.executable).parent / "evals"


def _shell_env() -> dict[str, str]:
    """The user's shell before `. .venv/bin/activate`: no folder on PATH holds an `evals`."""
    folders = [f for f in os.environ.get("PATH", "").split(os.pathsep) if f and not (Path(f) / "evals").exists()]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVAL_", "OPENAI_", "VIRTUAL_ENV"))}
    env.update({"PATH": os.pathsep.join(folders), "NO_COLOR": "1", "COLUMNS": "200"})
    return env


def _sh(line: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", line], cwd=cwd, env=_shell_env(), capture_output=True, text=True, timeout=120)


@pytest.fixture
def typed(tmp_path: Path) -> str:
    if not SCRIPT.is_file():
        pytest.skip("evals-cli is not installed as a script beside this python")
    assert shutil.which("evals", path=_shell_env()["PATH"]) is None
    return os.path.relpath(SCRIPT, tmp_path)  # as a user types it: a relative path, not a name on PATH


def test_the_full_report_line_runs_when_pasted(typed: str, tmp_path: Path) -> None:
    demo = _sh(f"{typed} run {ROOT / 'suites/demo.yaml'} --replay {ROOT / 'suites/demo.recording.jsonl'} -o demo",
               tmp_path)
    assert demo.returncode == 1, demo.stdout + demo.stderr  # the demo's gate fails, on purpose
    (line,) = [line for line in demo.stdout.splitlines() if "full report:" in line]
    printed = line.split("full report:", 1)[1].strip()
    assert printed == f"{typed} report demo --html report.html"
    pasted = _sh(printed, tmp_path)
    assert pasted.returncode == 0, pasted.stdout + pasted.stderr
    assert (tmp_path / "report.html").is_file()


@pytest.mark.slow  # over a CPU-second of subprocesses: make test-slow (CI runs it)
def test_init_next_steps_and_its_makefile_run_when_pasted(typed: str, tmp_path: Path) -> None:
    done = _sh(f"{typed} init starter", tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    steps = done.stdout.split("next:", 1)[1].splitlines()
    commands = [s.strip() for s in steps if s.strip() and not s.strip().startswith(("#", "export"))]
    assert commands[0] == "cd starter"
    assert commands[1] == f"{os.path.relpath(SCRIPT, tmp_path / 'starter')} validate suite.yaml"
    offline = " && ".join(commands[:3])  # cd, validate, the offline replay
    pasted = _sh(offline, tmp_path)
    assert pasted.returncode in (0, 1), pasted.stdout + pasted.stderr  # a verdict, not "command not found"
    assert "Gate" in pasted.stdout
    if shutil.which("make"):
        made = _sh("make evals-offline", tmp_path / "starter")
        assert made.returncode in (0, 2) and "command not found" not in made.stderr, made.stdout + made.stderr
        assert "Gate" in made.stdout


@pytest.mark.parametrize(("argv0", "on_path", "expected"), [
    ("evals", True, "evals"),
    (".venv/bin/evals", False, ".venv/bin/evals"),
    ("my tools/evals", False, "'my tools/evals'"),
    ("-c", False, "evals"),  # embedded (the Python API, pytest workers): the documented name
])
def test_the_program_is_named_as_started(argv0: str, on_path: bool, expected: str, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    started = tmp_path / argv0
    if argv0 != "-c":
        started.parent.mkdir(parents=True, exist_ok=True)
        started.write_text("#!/bin/sh\n", encoding="utf-8")
        started.chmod(0o755)
    monkeypatch.setattr(sys, "argv", [str(started) if on_path else argv0])
    monkeypatch.setenv("PATH", str(started.parent) if on_path else "/nonexistent")
    assert invocation.command("report", "run dir") == f"{expected} report 'run dir'"


def test_a_relative_program_is_named_from_the_folder_a_command_runs_in(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [".venv/bin/evals"])
    monkeypatch.setenv("PATH", "/nonexistent")
    assert invocation.program(cwd=tmp_path / "starter") == "../.venv/bin/evals"


def test_python_dash_m_is_named_with_its_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", [str(ROOT / "evals_cli" / "__main__.py")])
    monkeypatch.setenv("PATH", "/nonexistent")
    assert invocation.program() == f"{sys.executable} -m evals_cli"
