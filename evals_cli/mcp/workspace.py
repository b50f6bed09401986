"""The folder one (sample, repeat) works in: made and filled from `environment.files` before the first turn,
read back into the world after the last, so `expected_state` and `final_state` grade what live tools really did
to real files."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import socket
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from evals_cli.environment.unread import note
from evals_cli.errors import WorkspaceTooLarge, WorkspaceUnreadable

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
    for relative, parent, name in _files(folder):
        data = _read(parent, name, relative, declared.get(relative))
        if data is not None:
            found[relative] = data
        if len(found) > MAX_FILES:
            raise WorkspaceTooLarge(f"the workspace holds more than {MAX_FILES} files (the most evals-cli reads "
                                    "back), so its final state cannot be graded; keep the task's files under "
                                    f"{MAX_FILES}, or have the tools write the bulk outside the workspace (it skips "
                                    f"{', '.join(sorted(SKIPPED_DIRS))})")
    return found


def _read(parent: int, name: str, relative: str, declared: str | None) -> str | None:
    """One file's text, opened without following a link and read only when it is a regular file (None: a link,
    a fifo, a device, or gone), so nothing swapped in while the folder is walked leads outside it."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=parent)
    except OSError as exc:
        _absent_or_unreadable(exc, relative)
        return None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):  # a folder swapped in since the listing is walked at the next read-back
        os.close(fd)
        return None
    size = info.st_size
    with os.fdopen(fd, "rb") as fh:
        if size > MAX_FILE_BYTES:
            return _unchanged(fh, declared, size) or note(size, MAX_FILE_BYTES)
        return fh.read(MAX_FILE_BYTES + 1).decode("utf-8", errors="replace")


def _absent_or_unreadable(exc: OSError, relative: str) -> None:
    """None for what is not a file of the folder (a link: ELOOP, gone: ENOENT, a link where a folder was:
    ENOTDIR); WorkspaceUnreadable for what is there but cannot be read, since an unread file would look deleted."""
    if exc.errno in (errno.ELOOP, errno.ENOENT, errno.ENOTDIR):
        return None
    raise WorkspaceUnreadable(f"the workspace's '{relative}' cannot be read ({exc.strerror or exc}), so its final "
                              "state cannot be graded; keep the task's files readable by evals-cli (no chmod 000)")


def fingerprint(folder: Path) -> dict[str, tuple[int, int]] | None:
    """Each file under the folder (as `read_back` finds them) by its size and modification time, read from the
    file system's metadata only: what one call changed, for who-changed-what (dual control), without reading the
    files. None past MAX_FILES files (nothing is attributed; the read-back at the end says what is wrong)."""
    found: dict[str, tuple[int, int]] = {}
    try:
        for relative, parent, name in _files(folder):
            try:
                info = os.stat(name, dir_fd=parent, follow_symlinks=False)
            except OSError:  # removed while walked
                continue
            if stat.S_ISREG(info.st_mode):
                found[relative] = (info.st_size, info.st_mtime_ns)
            if len(found) > MAX_FILES:
                return None
    except WorkspaceUnreadable:
        return None
    return found


def _files(folder: Path) -> Iterator[tuple[str, int, str]]:
    """The entries under the folder that are not folders (no tool machinery: SKIPPED_DIRS), in a stable order,
    each with its relative path written with '/', the open folder holding it and its name there (valid until the
    next one). Every folder is opened without following a link, from its parent's open descriptor: a folder a
    process swaps for a link while it is walked is never entered. A folder that cannot be read is
    WorkspaceUnreadable (its files would look deleted)."""
    try:
        top = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        _absent_or_unreadable(exc, ".")
        return
    yield from _walk(top, "")


def _walk(fd: int, prefix: str) -> Iterator[tuple[str, int, str]]:
    try:
        try:
            with os.scandir(fd) as listed:
                entries = sorted((e.name, e.is_dir(follow_symlinks=False)) for e in listed)
        except OSError as exc:
            _absent_or_unreadable(exc, prefix.rstrip("/") or ".")
            return
        for name, is_dir in entries:
            if not is_dir:
                yield prefix + name, fd, name
            elif name not in SKIPPED_DIRS:
                try:
                    child = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
                except OSError as exc:
                    _absent_or_unreadable(exc, prefix + name)
                    continue
                yield from _walk(child, f"{prefix}{name}/")
    finally:
        os.close(fd)


def changed_between(before: dict[str, tuple[int, int]] | None, after: dict[str, tuple[int, int]] | None) -> list[str]:
    """The files written, made or removed between two fingerprints, sorted ([] when either is unknown)."""
    if before is None or after is None:
        return []
    return sorted(path for path in before.keys() | after.keys() if before.get(path) != after.get(path))


def _unchanged(fh: BinaryIO, declared: str | None, size: int) -> str | None:
    """The declared text, when the file still holds exactly it (None: not declared, or changed)."""
    if declared is None:
        return None
    data = declared.encode("utf-8")
    if len(data) != size:
        return None
    return declared if fh.read(size + 1) == data else None


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
            if owner is not None and owner[1] == socket.gethostname() and not running(owner[0]):
                remove(root)
                removed.append(root)
    return removed


def _owner(root: Path) -> tuple[int, str] | None:
    try:
        pid, _, host = (root / OWNER).read_text(encoding="utf-8").strip().partition(" ")
        return int(pid), host
    except (OSError, ValueError):
        return None


def running(pid: int) -> bool:
    """Whether the process `pid` of this machine is alive (the maker named by an owner mark, sandboxes' too)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True
