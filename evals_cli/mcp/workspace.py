"""The folder one (sample, repeat) works in: made and filled from `environment.files` before the first turn,
read back into the world after the last, so `expected_state` and `final_state` grade what live tools really did
to real files."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

from evals_cli.environment.unread import note
from evals_cli.errors import WorkspaceTooLarge

SKIPPED_DIRS = {".git", "__pycache__", ".venv", "node_modules"}  # tool machinery, not the task's files
MAX_FILES = 2000
MAX_FILE_BYTES = 1024 * 1024
PREFIX = "evals-mcp-"
OWNER = ".evals-owner"  # in each run's root: "<pid> <host>" of the evals-cli that made it
_DECLARED: dict[Path, dict[str, str]] = {}  # the declared files over MAX_FILE_BYTES, by folder (see read_back)


def fill(folder: Path, files: dict[str, str]) -> None:
    """Write the declared files; a path that would leave the folder (`../x`, `/etc/x`) is refused."""
    root = folder.resolve()
    for name, text in files.items():
        target = (root / name).resolve()
        if root not in target.parents:
            raise ValueError(f"environment.files: '{name}' is outside the workspace; use a relative path")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        if len(text) * 4 > MAX_FILE_BYTES:  # may be over the bound as UTF-8: kept to recognise it unchanged
            _DECLARED.setdefault(root, {})[target.relative_to(root).as_posix()] = text


def read_back(folder: Path) -> dict[str, str]:
    """Every file under the folder, by its relative path with '/', as text (undecodable bytes replaced); a
    file over 1 MiB is stood in for by a note (environment/unread.py: final_state says n/a for what it
    touches), so a tool that wrote a huge file cannot blow up the results, unless it is a declared file left
    as declared: that one is its declared text (an `unchanged:` of a big file holds).

    Past MAX_FILES files the read-back stops with WorkspaceTooLarge (the sample is an error): a cut list would
    make every file after the cut look deleted, and a `deleted:` expectation pass on a file nobody touched."""
    found: dict[str, str] = {}
    declared = _DECLARED.get(folder.resolve(), {})
    for relative, path in _files(folder):
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            found[relative] = _unchanged(path, declared.get(relative), size) or note(size, MAX_FILE_BYTES)
        else:
            found[relative] = path.read_bytes().decode("utf-8", errors="replace")
        if len(found) > MAX_FILES:
            raise WorkspaceTooLarge(f"the workspace holds more than {MAX_FILES} files (the most evals-cli reads "
                                    "back), so its final state cannot be graded; keep the task's files under "
                                    f"{MAX_FILES}, or have the tools write the bulk outside the workspace (it skips "
                                    f"{', '.join(sorted(SKIPPED_DIRS))})")
    return found


def fingerprint(folder: Path) -> dict[str, tuple[int, int]] | None:
    """Each file under the folder (as `read_back` finds them) by its size and modification time, read from the
    file system's metadata only: what one call changed, for who-changed-what (dual control), without reading the
    files. None past MAX_FILES files (nothing is attributed; the read-back at the end says what is wrong)."""
    found: dict[str, tuple[int, int]] = {}
    for relative, path in _files(folder):
        try:
            stat = path.stat()
        except OSError:  # removed while walked
            continue
        found[relative] = (stat.st_size, stat.st_mtime_ns)
        if len(found) > MAX_FILES:
            return None
    return found


def _files(folder: Path) -> Iterator[tuple[str, Path]]:
    """The regular files under the folder (no symlink, no tool machinery: SKIPPED_DIRS), in a stable order, each
    with its relative path written with '/'."""
    for current, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        for name in sorted(names):
            path = Path(current) / name
            if path.is_symlink() or not path.is_file():
                continue
            yield path.relative_to(folder).as_posix(), path


def changed_between(before: dict[str, tuple[int, int]] | None, after: dict[str, tuple[int, int]] | None) -> list[str]:
    """The files written, made or removed between two fingerprints, sorted ([] when either is unknown)."""
    if before is None or after is None:
        return []
    return sorted(path for path in before.keys() | after.keys() if before.get(path) != after.get(path))


def _unchanged(path: Path, declared: str | None, size: int) -> str | None:
    """The declared text, when the file still holds exactly it (None: not declared, or changed)."""
    if declared is None:
        return None
    data = declared.encode("utf-8")
    if len(data) != size:
        return None
    return declared if path.read_bytes() == data else None


def folder_name(sample_id: str, repeat: int, number: int) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", sample_id)[:60] or "sample"
    return f"{number:05d}-{safe}-r{repeat}"


def remove(folder: Path) -> None:
    _DECLARED.pop(folder.resolve(), None)
    shutil.rmtree(folder, ignore_errors=True)


def new_root(prefix: str = PREFIX) -> Path:
    """The folder this run's workspaces go in, under the system's temporary folder, marked with its owner; the
    folders a killed run left behind (SIGKILL runs no cleanup) are removed first. Sandboxes keep theirs under a
    prefix of their own (evals_cli/sandbox/folders.py)."""
    base = Path(tempfile.gettempdir())
    clean_orphans(base, prefix)
    root = Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=base))
    (root / OWNER).write_text(f"{os.getpid()} {socket.gethostname()}\n", encoding="utf-8")
    return root


def clean_orphans(base: Path, prefix: str = PREFIX) -> list[Path]:
    """Remove the `evals-mcp-*` (`prefix`) roots under `base` whose owner is gone: made on this host (another container
    sharing the folder has its own process ids) by a process that no longer runs. A root without an owner
    mark, or whose owner may still run, is left alone."""
    removed = []
    with contextlib.suppress(OSError):
        for root in base.glob(f"{prefix}*"):
            owner = _owner(root)
            if owner is not None and owner[1] == socket.gethostname() and not _running(owner[0]):
                remove(root)
                removed.append(root)
    return removed


def _owner(root: Path) -> tuple[int, str] | None:
    try:
        pid, _, host = (root / OWNER).read_text(encoding="utf-8").strip().partition(" ")
        return int(pid), host
    except (OSError, ValueError):
        return None


def _running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True
