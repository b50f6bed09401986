"""Which open episode a connection to the OTLP receiver came from, asked of the kernel (Linux): the client's socket
of the connection, found by its two loopback ports, and the process holding it among the processes below each
episode's root process (a command agent's reaper, targets/reaper.py: as a child subreaper it keeps every process
the agent starts below it).

The binding needs nothing of the agent and holds no secret: any OpenTelemetry SDK exporting to
OTEL_EXPORTER_OTLP_ENDPOINT works, and what decides is the kernel's record of which process holds which socket,
which another process cannot write. An exporter waits for the receiver's answer with its socket open, so looking
its socket up when its request is read races nothing. Lookups, per connection:

- the client socket's inode: one sock_diag netlink query for the connection's exact address pair (about 0.1 ms);
  /proc/net/tcp and tcp6 where netlink is refused (milliseconds: the kernel walks its whole connection table);
- its holder: first the processes that held an episode's sockets before (the exporter is usually the same
  process), each confirmed by its ancestry up to the episode's root (/proc/<pid>/stat), so a reused pid never
  counts; else every process below the roots, from one pass over /proc/*/stat, their /proc/<pid>/fd links read.

An episode is `expect`ed before its process starts and `started` with the root's pid once it has one: a connection
whose holder is not found while an episode is still starting waits (PENDING_S at most) and is looked up again.
"""

from __future__ import annotations

import functools
import os
import socket
import struct
import sys
import threading
import time
from collections.abc import Iterable, Mapping

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST = 1
NLMSG_ERROR = 2
NO_COOKIE = 0xFFFFFFFF
ALL_STATES = 0xFFFFFFFF
INODE_AT = 16 + 68  # the netlink header, then inet_diag_msg's fields before idiag_inode
PENDING_S = 10.0  # how long a connection waits for the episodes still starting before it is nobody's
KNOWN_PER_EPISODE = 8  # processes remembered per episode as its senders
MAX_DEPTH = 4096  # ancestors walked at most (a cycle cannot happen; a bound all the same)


@functools.cache
def available() -> bool:
    """Whether connections can be bound to episodes here: Linux, where a loopback connection of this process's own
    is found by its ports and its socket among this process's file descriptors (a kernel or container that hides
    either leaves the receiver telling spans apart by tag)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        with socket.create_server(("127.0.0.1", 0)) as server, \
                socket.create_connection(server.getsockname()[:2], timeout=1.0) as client:
            inode = client_inode(client.getsockname()[:2], server.getsockname()[:2])
            return inode == os.fstat(client.fileno()).st_ino and holds(os.getpid(), f"socket:[{inode}]") \
                and _parent(os.getpid()) == os.getppid()
    except OSError:
        return False


def client_inode(client: tuple[str, int], server: tuple[str, int]) -> int | None:
    """The inode of the socket at the client's end of the loopback connection client → server (None: no such
    socket is open any more)."""
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            inode = _diag_inode(family, client, server)
        except OSError:
            return _table_inode(client, server)
        if inode:
            return inode
    return None


def _address(family: int, host: str) -> bytes:
    """An address as inet_diag_sockid holds it (16 bytes; an IPv4 one as IPv4-mapped for an AF_INET6 socket)."""
    if family == socket.AF_INET:
        return socket.inet_aton(host) + bytes(12)
    return socket.inet_pton(socket.AF_INET6, host if ":" in host else f"::ffff:{host}")


def _diag_inode(family: int, client: tuple[str, int], server: tuple[str, int]) -> int | None:
    """One exact sock_diag lookup (the socket whose local end is `client` and remote end `server`); OSError when
    netlink is refused."""
    sockid = (struct.pack(">HH", client[1], server[1]) + _address(family, client[0]) + _address(family, server[0])
              + struct.pack("=III", 0, NO_COOKIE, NO_COOKIE))
    request = struct.pack("=BBBBI", family, socket.IPPROTO_TCP, 0, 0, ALL_STATES) + sockid
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG) as link:
        link.settimeout(1.0)
        link.send(struct.pack("=IHHII", 16 + len(request), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST, 1, 0) + request)
        reply = link.recv(8192)
    kind = struct.unpack_from("=H", reply, 4)[0]
    if kind == NLMSG_ERROR:
        code = -struct.unpack_from("=i", reply, 16)[0]
        if code == 2:  # ENOENT: no such socket in this family
            return None
        raise OSError(code, os.strerror(code))
    if kind != SOCK_DIAG_BY_FAMILY or len(reply) < INODE_AT + 4:
        raise OSError(f"sock_diag answered with message type {kind}")
    return int(struct.unpack_from("=I", reply, INODE_AT)[0]) or None


def _hex(family: int, host: str) -> str:
    """An address as /proc/net/tcp{,6} prints it: its 32-bit words in the machine's byte order, in hex."""
    raw = _address(family, host)[:4 if family == socket.AF_INET else 16]
    return "".join(f"{word:08X}" for word in struct.unpack(f"={len(raw) // 4}I", raw))


def _table_inode(client: tuple[str, int], server: tuple[str, int]) -> int | None:
    """The same lookup in /proc/net/tcp and tcp6 (where sock_diag is refused)."""
    for family, table in ((socket.AF_INET, "/proc/net/tcp"), (socket.AF_INET6, "/proc/net/tcp6")):
        key = f"{_hex(family, client[0])}:{client[1]:04X} {_hex(family, server[0])}:{server[1]:04X}"
        try:
            with open(table, encoding="ascii") as fh:
                lines = [line for line in fh if key in line]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[1] == key.split()[0] and fields[9].isdigit() and int(fields[9]):
                return int(fields[9])
    return None


def _parent(pid: int) -> int | None:
    """The pid's parent (None: the process is gone or a zombie, which holds no socket)."""
    try:  # os.open and os.read: a third cheaper than a file object, and a cold lookup reads every process's
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
        try:
            stat = os.read(fd, 4096)
        finally:
            os.close(fd)
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2:].split()  # the name may hold spaces and parentheses
    return int(fields[1]) if len(fields) > 1 and fields[0] not in (b"Z", b"X") else None


def _root_of(pid: int, roots: Mapping[int, str]) -> str | None:
    """The episode whose root `pid` is, or is below (its ancestors read now), else None."""
    for _ in range(MAX_DEPTH):
        if pid in roots:
            return roots[pid]
        parent = _parent(pid)
        if parent is None or parent <= 1:
            return None
        pid = parent
    return None


def holds(pid: int, link: str) -> bool:
    """Whether the process has an open file descriptor on `link` (socket:[inode])."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == link:
                return True
        except OSError:
            continue
    return False


def below(roots: Iterable[int]) -> list[int]:
    """Every live process at or below the roots, from one pass over /proc/*/stat."""
    children: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:  # /proc gone from under a running receiver: the roots alone
        names = []
    for name in names:
        if name.isdigit():
            parent = _parent(int(name))
            if parent is not None:
                children.setdefault(parent, []).append(int(name))
    todo, seen = list(roots), set(roots)
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in seen:
                seen.add(child)
                todo.append(child)
    return sorted(seen)


def holder(link: str) -> str:
    """Who holds `link` on this machine, for a message: `pid N (name)` or that none is found (a scan of every
    process: used only for the few refusals kept as text)."""
    try:
        names = os.listdir("/proc")
    except OSError:
        names = []
    for name in names:
        if name.isdigit() and holds(int(name), link):
            try:
                with open(f"/proc/{name}/comm", encoding="utf-8", errors="replace") as fh:
                    return f"pid {name} ({fh.read().strip()})"
            except OSError:
                return f"pid {name}"
    return "a process this user cannot see"


class EpisodeRoots:
    """The episodes open at one receiver, each with its root process once started; thread-safe."""

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self._roots: dict[str, list[int]] = {}  # each open episode's roots (none yet: still starting)
        self._senders: dict[str, list[int]] = {}  # the processes that sent each episode's connections so far
        self.waiting = 0  # connections not placed yet, waiting for episodes still starting

    def expect(self, tag: str) -> None:
        """An episode about to start its process: connections not yet placed wait for it (`owner`)."""
        with self.changed:
            self._roots[tag] = []

    def started(self, tag: str, pid: int) -> None:
        """A root of the episode's processes: it and all below it are the episode's. An episode may have several
        (a sandbox whose processes run below a monitor of their own, not below the process evals started, adds
        that one's pid)."""
        with self.changed:
            roots = self._roots.setdefault(tag, [])
            if pid not in roots:
                roots.append(pid)
            self.changed.notify_all()

    def ended(self, tag: str) -> None:
        """The episode's processes are gone (or never started): no connection is its any more."""
        with self.changed:
            self._roots.pop(tag, None)
            self._senders.pop(tag, None)
            self.changed.notify_all()

    def open_tags(self) -> set[str]:
        with self.changed:
            return set(self._roots)

    def owner(self, link: str, wait_s: float = PENDING_S) -> str | None:
        """The episode one of whose processes holds `link` (socket:[inode]), or None: no process of an open
        episode holds it, once the episodes still starting have started (wait_s at most)."""
        deadline = time.monotonic() + wait_s
        while True:
            with self.changed:
                roots = {pid: tag for tag, pids in self._roots.items() for pid in pids}
                pending = {tag for tag, pids in self._roots.items() if not pids}
                senders = {tag: list(pids) for tag, pids in self._senders.items()}
            found = self._find(link, roots, senders)
            if found is not None or not pending or not self._started(pending, deadline):
                return found

    def _started(self, pending: set[str], deadline: float) -> bool:
        """Until each of the episodes `pending` has its root or is gone; False when the deadline came first."""
        with self.changed:
            self.waiting += 1
            self.changed.notify_all()
            try:
                return self.changed.wait_for(lambda: all(self._roots.get(t, [0]) for t in pending),
                                             deadline - time.monotonic())
            finally:
                self.waiting -= 1

    def _find(self, link: str, roots: dict[int, str], senders: dict[str, list[int]]) -> str | None:
        for pids in senders.values():
            for pid in pids:
                if holds(pid, link):
                    return _root_of(pid, roots)  # the ancestry decides (a pid reused meanwhile is not the sender)
        for pid in below(roots):
            if holds(pid, link):
                tag = _root_of(pid, roots)
                if tag is not None:
                    self._remember(tag, pid)
                return tag
        return None

    def _remember(self, tag: str, pid: int) -> None:
        with self.changed:
            if tag in self._roots:
                known = self._senders.setdefault(tag, [])
                if pid not in known:
                    known.insert(0, pid)
                    del known[KNOWN_PER_EPISODE:]
