"""The host side of envlaunch.py: an environment written to a 0600 file of the sandbox's host folder (never
mounted inside), and the argument vector that starts a program with it."""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Mapping
from pathlib import Path

LAUNCHER = Path(__file__).with_name("envlaunch.py")


def launch(folder: Path, env: Mapping[str, str], mode: str) -> list[str]:
    """The prefix that runs a program with `env` (`exact`: only it; `merge`: over the caller's own)."""
    for key, value in env.items():
        if "=" in key or "\0" in key or "\0" in value:
            raise ValueError(f"target.env: {key!r} cannot be passed as an environment variable")
    path = folder / f"env-{uuid.uuid4().hex}"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write("".join(f"{key}={value}\0" for key, value in env.items()).encode("utf-8"))
    return [sys.executable, "-I", "-S", str(LAUNCHER), str(path), mode, "--"]
