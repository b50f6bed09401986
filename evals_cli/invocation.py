"""How this evals-cli was started, so every command it prints for the user runs when pasted.

After `make demo`, `evals` is in `.venv/bin` and not on PATH: a printed `evals report ...` would fail with
"command not found". Commands are printed with the program as the user started it: `evals` when that is what
PATH finds, `.venv/bin/evals` when it was typed so, `python -m evals_cli` (with that python) for the module.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path


def _same_file(found: str | None, path: Path) -> bool:
    return found is not None and os.path.abspath(found) == os.path.abspath(path)


def _python() -> str:
    """The interpreter, by the name PATH gives it when PATH gives this one (a venv's python is a symlink to the
    system's, so paths are compared without following links)."""
    for name in ("python", "python3"):
        if _same_file(shutil.which(name), Path(sys.executable)):
            return name
    return shlex.quote(sys.executable)


def program(cwd: Path | None = None) -> str:
    """The program to put in front of a printed command, for a shell in `cwd` (default: the current folder).

    Started as `evals` found on PATH: `evals`. Started by a path: that path, relative to `cwd` when it was
    typed relative (so `.venv/bin/evals` from the repo, `../.venv/bin/evals` from a folder below it). Started
    as `python -m evals_cli`: the same. Embedded (the Python API, tests): `evals`."""
    argv0 = sys.argv[0] if sys.argv else ""
    started = Path(argv0)
    if started.name == "__main__.py" and started.parent.name == "evals_cli":
        return f"{_python()} -m evals_cli"
    if started.name not in ("evals", "evals.exe"):
        return "evals"
    if _same_file(shutil.which("evals"), started):
        return "evals"
    if started.is_absolute():
        return shlex.quote(argv0)
    if cwd is None:
        return shlex.quote(argv0)
    return shlex.quote(os.path.relpath(Path.cwd() / started, cwd))


def command(*args: str | Path, cwd: Path | None = None) -> str:
    """A whole command line for the user to paste: the program, then each argument quoted for a POSIX shell."""
    return " ".join([program(cwd), *(shlex.quote(str(arg)) for arg in args)])
