"""Paths the editor may touch: inside `/workspace`, and only there, however the agent spells them or links them.

The editor works on the host's copy of the workspace (`Sandbox.workspace`), so a symlink the agent made inside
(`ln -s /etc/passwd x`, `ln -s ../.. up`) would reach the host if it were followed as the host follows it. Every
path is therefore walked one component at a time from the workspace's own directory descriptor, each directory
opened with O_NOFOLLOW and each link read and resolved as the sandbox would see it (`/workspace/...`), then
refused when it lands outside. A link swapped in between the check and the open fails the open (ELOOP) rather
than being followed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from evals_cli.sandbox.base import WORKSPACE

MAX_LINK_HOPS = 40  # as the kernel's own bound on links followed in one path


class PathRefused(Exception):
    """A path the editor will not touch; the message is what the agent reads as the tool's error."""


def inside_parts(path: str) -> list[str]:
    """The components of `path` under /workspace (relative paths are from /workspace); PathRefused outside."""
    if not path.strip():
        raise PathRefused("path is empty; give a path inside /workspace")
    if "\x00" in path:
        raise PathRefused("path holds a NUL character")
    normal = posixpath.normpath(posixpath.join(WORKSPACE, path))
    if normal == WORKSPACE:
        return []
    if not normal.startswith(WORKSPACE + "/"):
        raise PathRefused(f"{path} is outside {WORKSPACE}; the editor works only on files inside {WORKSPACE} "
                          "(a relative path is taken from there)")
    return normal[len(WORKSPACE) + 1:].split("/")


def shown(parts: list[str]) -> str:
    return posixpath.join(WORKSPACE, *parts)


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


@dataclass
class Located:
    """The last component of a path, in its opened parent directory: `name` is "" for /workspace itself."""

    parent: int  # a directory descriptor, closed by `close`
    name: str
    parts: list[str]

    @property
    def path(self) -> str:
        return shown(self.parts)

    def lstat(self) -> os.stat_result | None:
        try:
            return os.stat(self.name or ".", dir_fd=self.parent, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.parent)


class Workspace:
    """The host folder that is /workspace inside."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @contextlib.contextmanager
    def locate(self, path: str, *, make_parents: bool = False) -> Iterator[Located]:
        """The path with every link inside resolved (a link out of /workspace refused), its parent opened; the
        missing parent folders made when `make_parents`."""
        found = self._walk(inside_parts(path), make_parents)
        try:
            yield found
        finally:
            found.close()

    def _walk(self, parts: list[str], make_parents: bool) -> Located:
        for _ in range(MAX_LINK_HOPS + 1):
            fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
            found = _descend(fd, parts, make_parents)  # owns fd from here
            if isinstance(found, Located):
                return found
            parts = found
        raise PathRefused(f"{shown(parts)}: too many symbolic links")


def _descend(fd: int, parts: list[str], make_parents: bool) -> Located | list[str]:
    """Open each parent of `parts` in turn from `fd` (which this owns): the last one with the final name, or the
    new parts when a link was met (the walk starts again from the root with them)."""
    done: list[str] = []
    try:
        for index, name in enumerate(parts):
            info = _lstat(fd, name)
            if info is not None and stat.S_ISLNK(info.st_mode):
                target = os.readlink(name, dir_fd=fd)
                where = posixpath.join(shown(done), target)  # an absolute target is the sandbox's own path
                try:
                    rest = inside_parts(where)
                except PathRefused:
                    raise PathRefused(f"{shown(done + [name])} is a symbolic link to {target}, outside "
                                      f"{WORKSPACE}; the editor does not follow it") from None
                os.close(fd)
                return rest + parts[index + 1:]
            if index == len(parts) - 1:
                return Located(parent=fd, name=name, parts=parts)
            if info is None:
                if not make_parents:
                    raise PathRefused(f"{shown(done + [name])} does not exist")
                os.mkdir(name, dir_fd=fd)
            elif not stat.S_ISDIR(info.st_mode):
                raise PathRefused(f"{shown(done + [name])} is not a directory")
            child = _open_dir(fd, name, shown(done + [name]))
            os.close(fd)
            fd = child
            done.append(name)
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(fd)
        raise
    return Located(parent=fd, name="", parts=[])  # no parts: the root itself


def _lstat(fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _open_dir(parent: int, name: str, where: str) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise PathRefused(f"{where} changed while it was opened (now a link or a file); try again") from None
        raise


def read_file(found: Located, limit: int) -> bytes:
    """The file's bytes (at most `limit`: PathRefused past it)."""
    fd = _open_file(found, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise PathRefused(f"{found.path} is {size} bytes, more than the {limit} the editor shows; read a part "
                              "with view_range, or with bash (head, sed -n)")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def write_file(found: Located, data: bytes) -> None:
    fd = _open_file(found, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def _open_file(found: Located, flags: int) -> int:
    if not found.name:
        raise PathRefused(f"{WORKSPACE} is a directory")
    try:
        return os.open(found.name, flags | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o644, dir_fd=found.parent)
    except IsADirectoryError:
        raise PathRefused(f"{found.path} is a directory") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PathRefused(f"{found.path} changed into a link while it was opened; try again") from None
        raise PathRefused(f"{found.path}: {exc.strerror or type(exc).__name__}") from None


def listing(found: Located, depth: int = 2, limit: int = 500) -> list[str]:
    """Files and folders under a directory, `depth` levels deep, hidden ones and caches left out; links shown as
    such, never followed."""
    top = os.open(found.name or ".", _DIR_FLAGS, dir_fd=found.parent)
    out: list[str] = []
    _list_into(top, found.path, depth, out, limit)
    return out


def _list_into(fd: int, prefix: str, depth: int, out: list[str], limit: int) -> None:
    try:
        with os.scandir(fd) as entries:
            names = sorted((e.name, e.is_dir(follow_symlinks=False), e.is_symlink()) for e in entries)
        for name, is_dir, is_link in names:
            if name.startswith(".") or name == "__pycache__":
                continue
            if len(out) >= limit:
                out.append(f"... (more than {limit} entries; list a subfolder)")
                return
            path = posixpath.join(prefix, name)
            out.append(path + ("/" if is_dir else " -> (link)" if is_link else ""))
            if is_dir and depth > 1:
                with contextlib.suppress(OSError):
                    _list_into(os.open(name, _DIR_FLAGS, dir_fd=fd), path, depth - 1, out, limit)
    finally:
        os.close(fd)
