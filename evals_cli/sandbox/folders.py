"""Where a run's sandboxes keep their host folders: one root per run under the system's temporary folder, marked
with its owner as MCP workspaces are (mcp/workspace.py: OWNER), so the next run removes what a killed run left."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

from evals_cli.mcp import workspace

PREFIX = "evals-sandbox-"


class Folders:
    """The run's root (made at the first sandbox) and one numbered folder per episode in it."""

    def __init__(self) -> None:
        self._root: Path | None = None
        self._numbers = itertools.count(1)

    def new(self, sample_id: str, repeat: int) -> Path:
        if self._root is None:
            self._root = workspace.new_root(PREFIX)
            self._root.chmod(0o711)  # a sandbox's own user passes through to its folder, and lists none
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", sample_id)[:60] or "sample"
        return self._root / f"{next(self._numbers):05d}-{safe}-r{repeat}"

    def close(self) -> None:
        if self._root is not None:
            workspace.remove(self._root)
            self._root = None


def clean_orphans() -> list[Path]:
    """The sandbox roots of runs that are gone (killed), removed."""
    import tempfile

    return workspace.clean_orphans(Path(tempfile.gettempdir()), PREFIX)
