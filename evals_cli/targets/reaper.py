"""The reaper of one command-agent episode: a tiny process that starts the agent and, when the agent exits (or evals
stops the episode), kills and reaps everything the agent started, then exits with the agent's exit code.

evals runs it as `python -I -S reaper.py STATUS_FD PARENT_PID GRACE -- PROGRAM ARGS...` (a standalone script: it
imports the standard library only, never evals_cli, so it starts in a few milliseconds). It

- makes itself a child subreaper (Linux `prctl(PR_SET_CHILD_SUBREAPER)`): a process the agent starts and leaves
  behind, even one that changed its session or process group (`setsid`, a double fork), is re-parented to the
  reaper, not to init, so the reaper finds every descendant and can wait for it;
- asks for SIGTERM when evals dies (`PR_SET_PDEATHSIG`), so a killed or crashed evals still ends the episode;
- starts the agent with stdin, stdout and stderr inherited (evals' pipes), and reports on STATUS_FD whether the
  program could be executed: the fd is closed with nothing written when it could, and carries the errno when not;
- when the agent exits: SIGKILL to every process left below it, reaped until waitpid says there is no child
  (ECHILD), within a bound; on SIGTERM from evals (or its death): SIGTERM to the whole tree, up to GRACE seconds
  for the agent to exit, then the same SIGKILL sweep. Only then does the reaper exit, with the agent's exit code
  (128 + the signal for an agent killed by one), so the episode ends only after the whole tree is gone.

Why a subreaper rather than a PID namespace: it works unprivileged, with no extra tool (no bwrap, no unshare); a
PID namespace, the other way to have every descendant die with one process, needs root or unprivileged user
namespaces, which many CI runners and containers disable. Without prctl (an old or non-Linux kernel, or a sandbox
that refuses it) the reaper still kills what it can find: the processes below it and those still in its session
(evals starts it as a session leader); one that left both and was orphaned escapes, as with a process-group kill.
"""

from __future__ import annotations

import errno
import os
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
else:
    try:  # the C module signal.py wraps: without signal.py's enums the reaper starts 5 ms sooner
        import _signal as signal
    except ImportError:
        import signal

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
WAITED = {signal.SIGCHLD, *STOP_SIGNALS}
SWEEP_BOUND = 5.0  # seconds the SIGKILL sweep may take (a process stuck in the kernel cannot be waited for forever)


def _prctl(option: int, value: int) -> bool:
    """One prctl call; False where there is none (not Linux, no libc symbol) or it is refused."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(option, value, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _exec(program: list[str], status_fd: int) -> None:
    """In the forked child: the signals as a freshly started program expects them, then the agent itself. Python
    ignores SIGPIPE and SIGXFSZ at start; an agent gets them back at their defaults, as subprocess gives them."""
    try:
        for sig in (signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        os.execvp(program[0], program)
    except OSError as exc:
        os.write(status_fd, str(exc.errno or errno.ENOEXEC).encode())
    finally:
        os._exit(127)


def _tree(me: int, own_session: bool) -> list[int]:
    """Every live process below `me` (by parent pid) or, when `me` leads a session, in it: read from /proc."""
    children: dict[int, list[int]] = {}
    found: set[int] = set()
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue  # gone meanwhile
        fields = stat[stat.rfind(b")") + 2:].split()  # the name may hold spaces and parentheses
        if len(fields) < 4 or fields[0] in (b"Z", b"X"):
            continue  # a zombie is dead already: reaped below, never killed
        pid, ppid, session = int(name), int(fields[1]), int(fields[3])
        children.setdefault(ppid, []).append(pid)
        if own_session and session == me and pid != me:
            found.add(pid)
    todo, below = [me], {me}
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in below:
                below.add(child)
                todo.append(child)
    return sorted((found | below) - {me})


def _signal_all(sig: int, me: int, own_session: bool) -> None:
    for pid in _tree(me, own_session):
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            continue


class Reaper:
    """The agent's process and what is known of its end."""

    def __init__(self, agent: int, subreaper: bool) -> None:
        self.agent = agent
        self.subreaper = subreaper
        self.me = os.getpid()
        self.own_session = os.getsid(0) == self.me
        self.code: int | None = None  # the agent's exit code, once reaped

    def reap(self) -> bool:
        """Every exited child collected; True when no child is left (ECHILD)."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return True
            if pid == 0:
                return False
            if pid == self.agent:
                code = os.waitstatus_to_exitcode(status)
                self.code = code if code >= 0 else 128 - code

    def supervise(self, grace: float) -> None:
        """Until the agent exits, or a stop signal's grace is over (SIGTERM sent to the whole tree meanwhile)."""
        stop_at: float | None = None
        while self.code is None:
            timeout = 3600.0 if stop_at is None else stop_at - time.monotonic()
            if timeout <= 0:
                return
            info = signal.sigtimedwait(WAITED, timeout)
            if info is None:
                continue
            if info.si_signo == signal.SIGCHLD:
                self.reap()
            elif stop_at is None:
                stop_at = time.monotonic() + grace
                _signal_all(signal.SIGTERM, self.me, self.own_session)

    def sweep(self) -> None:
        """SIGKILL to whatever is left, reaped until none is, within SWEEP_BOUND; orphans re-parent here meanwhile,
        and a process forked during the sweep is found at the next pass."""
        deadline = time.monotonic() + SWEEP_BOUND
        while True:
            if self.reap() and self.subreaper:
                return  # no child left: with a subreaper, no descendant is left either
            left = _tree(self.me, self.own_session)
            if not left and self.reap():
                return
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    continue
            if time.monotonic() > deadline:
                return
            signal.sigtimedwait({signal.SIGCHLD}, 0.05)  # woken by a child's exit; the bound re-scans for orphans


def main(argv: list[str]) -> int:
    if len(argv) < 5 or argv[3] != "--":
        print("usage: reaper.py STATUS_FD PARENT_PID GRACE -- PROGRAM [ARGS...]", file=sys.stderr)
        return 2
    status_fd, parent, grace, program = int(argv[0]), int(argv[1]), float(argv[2]), argv[4:]
    os.set_inheritable(status_fd, False)
    for sig in WAITED:
        signal.signal(sig, signal.SIG_DFL)  # an inherited SIG_IGN for SIGCHLD would reap children unseen
    signal.pthread_sigmask(signal.SIG_BLOCK, WAITED)  # received with sigtimedwait, never by a handler
    subreaper = _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # evals died before the death signal was asked for
        return 128 + signal.SIGTERM
    try:
        agent = os.fork()
    except OSError as exc:  # no process left to start (EAGAIN, ENOMEM): said as a failed start
        os.write(status_fd, str(exc.errno or errno.EAGAIN).encode())
        return 127
    if agent == 0:
        _exec(program, status_fd)
    os.close(status_fd)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)  # the agent's stdin is its own: evals' end of input (and a dead agent's EPIPE) reach it
    os.close(devnull)
    reaper = Reaper(agent, subreaper)
    reaper.supervise(grace)
    reaper.sweep()
    return reaper.code if reaper.code is not None else 128 + signal.SIGKILL


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
