"""`kind: bwrap`: an episode's machine made of bubblewrap namespaces over this machine's own system.

Inside: /usr (and the /bin, /lib, /sbin that point into it), /etc and the suite's `ro_paths`, read-only; a fresh
/workspace (the host folder the world is filled into and read back from), writable and the working directory; a
private /tmp, /proc and /dev; the socket that leads out and its forwarder script, read-only; nothing else of the
host (no home, no host /tmp, no run folders, no other file of evals-cli). Every namespace is new (user, pid, ipc,
uts, cgroup, and the network unless `network: true`: then only a private loopback), the environment is exactly
the given one (envlaunch.py: no value on a command line), and each command's whole tree is killed with it (a pid
namespace ends with its first process; `--die-with-parent` ends it with evals-cli).

The process limit: RLIMIT_NPROC, set inside the new user namespace by prlimit, counts the processes of the
sandbox's user in that namespace only. The kernel does not apply it to root (uid 0 on the host), so when
evals-cli runs as root (CI) each sandbox runs as a user id of its own (setpriv), never shared with another
sandbox or any real user, owning its workspace; that is also what keeps a root-run sandbox from reading the host
files only root may read. The same RLIMIT_FSIZE bounds each file written (a command writing without end stops
at `max_file_mb`)."""

from __future__ import annotations

import os
import random
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path

from evals_cli.mcp import workspace
from evals_cli.models.sandbox import BwrapSandboxSpec
from evals_cli.sandbox.base import MAX_OUTPUT, WORKSPACE, ExecResult, SandboxUnavailable
from evals_cli.sandbox.bridge import Bridge, Vouch, pid_namespace
from evals_cli.sandbox.processes import run_bounded
from evals_cli.sandbox.secretenv import launch

RUN_DIR = "/run/evals"  # inside, read-only: the socket that leads out (bridge.py)
FORWARD_SCRIPT = Path(__file__).with_name("forward.py")
FORWARD_INSIDE = "/run/evals-forward.py"  # inside, read-only: the package's own forwarder, mounted as it is
INSIDE_PORT = 4318  # the loopback port inside that leads to the host's service (OTLP's usual port)
UID_RANGE = (1_600_000_000, 2_000_000_000)  # user ids no real account has: one per sandbox when run as root
SYSTEM_LINKS = ("bin", "lib", "lib32", "lib64", "libx32", "sbin")
BASE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin", "HOME": "/tmp",
            "TMPDIR": "/tmp", "LANG": "C.UTF-8", "USER": "sandbox"}


def programs(as_root: bool) -> list[tuple[str, str]]:
    """The host programs this kind needs, each with the Debian package holding it."""
    needed = [("bwrap", "bubblewrap"), ("prlimit", "util-linux")]
    return needed + ([("setpriv", "util-linux")] if as_root else [])


def system_mounts() -> list[str]:
    """The read-only system every bwrap sandbox sees: /usr and /etc, and the top-level links into /usr."""
    args = ["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]
    for name in SYSTEM_LINKS:
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), f"/{name}"]
        elif path.is_dir():
            args += ["--ro-bind", str(path), f"/{name}"]
    return args


class BwrapSandbox:
    """One episode's bubblewrap machine; its host folder holds `workspace` and `run` (what leads out)."""

    kind = "bwrap"

    def __init__(self, spec: BwrapSandboxSpec, folder: Path) -> None:
        self.spec = spec
        self.folder = folder
        self.workspace = folder / "workspace"
        self.run_dir = folder / "run"
        self.tmp = folder / "tmp"  # the episode's /tmp: private to it, kept from one command to the next
        self.uid: int | None = random.randrange(*UID_RANGE) if os.geteuid() == 0 else None
        self._bridge: Bridge | None = None
        self._mounts = system_mounts()
        for path in spec.ro_paths:
            self._mounts += ["--ro-bind", path, path]
        for made in (self.workspace, self.run_dir, self.tmp):
            made.mkdir(parents=True, mode=0o700)
        os.chmod(folder, 0o711)  # the sandbox's own user passes through to its folders, and sees no other
        if self.uid is not None:
            for made in (self.workspace, self.run_dir, self.tmp):
                os.chown(made, self.uid, self.uid)

    def own(self) -> None:
        """Hand the workspace's files (filled by evals-cli) to the sandbox's user, so commands inside may change
        them; called after the world is filled in."""
        if self.uid is None:
            return
        for current, dirs, files in os.walk(self.workspace):
            for name in [*dirs, *files]:
                os.lchown(os.path.join(current, name), self.uid, self.uid)

    async def reach(self, host: str, port: int, on_connect: Vouch | None = None,
                    on_close: Vouch | None = None) -> str:
        """Make `host:port` (a loopback service of this machine) reachable inside as `http://127.0.0.1:PORT` for the
        processes `wrap` starts from now on, through a Unix socket (bridge.py, forward.py); the URL inside."""
        if self._bridge is None:  # the socket is made by this process in a folder the sandbox sees read-only
            self._bridge = Bridge(self.run_dir / "upstream.sock", host, port, on_connect, on_close,
                                  allow=self._is_inside, owner=self.uid)
            await self._bridge.open()
        return f"http://127.0.0.1:{INSIDE_PORT}"

    def _is_inside(self, pid: int, uid: int) -> bool:
        """A process of this sandbox: its user's (a root run's own uid), in a pid namespace not evals-cli's (every
        command inside has a new one), so neither another user nor a process of this machine (a kind-none agent)
        speaks through the bridge."""
        own = self.uid if self.uid is not None else os.getuid()
        return uid == own and pid_namespace(pid) not in (None, pid_namespace(os.getpid()))

    def wrap(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: str = WORKSPACE) -> list[str]:
        spec = self.spec
        entry = []
        if self.uid is not None:
            entry = ["setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups", "--"]
        args = [*entry, "bwrap", "--unshare-all", *(["--share-net"] if spec.network else []), "--die-with-parent",
                "--new-session", *self._mounts, "--proc", "/proc", "--dev", "/dev", "--bind", str(self.tmp), "/tmp",
                "--bind", str(self.workspace), WORKSPACE, "--ro-bind", str(self.run_dir), RUN_DIR,
                "--ro-bind", str(FORWARD_SCRIPT), FORWARD_INSIDE, "--chdir", cwd]
        # exactly this environment, handed over by a file rather than --setenv: no value on a command line
        args = [*launch(self.folder, {**BASE_ENV, **(env or {})}, "exact"), *args]
        limits = ["prlimit", f"--nproc={spec.pids}:{spec.pids}",
                  f"--fsize={spec.max_file_mb * 2**20}:{spec.max_file_mb * 2**20}", "--"]
        forward = []
        if self._bridge is not None:
            forward = ["python3", "-I", "-S", FORWARD_INSIDE, str(INSIDE_PORT), f"{RUN_DIR}/upstream.sock",
                       "--"]
        return [*args, "--", *limits, *forward, *argv]

    async def exec(self, argv: Sequence[str], *, timeout: float, stdin: bytes | None = None,
                   env: Mapping[str, str] | None = None, cwd: str = WORKSPACE,
                   max_output: int = MAX_OUTPUT) -> ExecResult:
        try:
            done = await run_bounded(self.wrap(argv, env=env, cwd=cwd), timeout=timeout, stdin=stdin,
                                     max_output=max_output)
        except OSError as exc:
            raise SandboxUnavailable(f"sandbox bwrap: cannot start bubblewrap ({exc.strerror or exc}); install the "
                                     "bubblewrap package, or set sandbox: {kind: none}") from None
        if done.exit_code == 1 and done.stderr.startswith("bwrap: ") and not done.stdout:
            # bubblewrap itself failed (a mount, a namespace): the command never ran, so its exit code says nothing
            raise SandboxUnavailable(f"sandbox bwrap: {done.stderr.strip()[:500]}")
        return done

    async def stop_processes(self) -> None:
        """Each command's pid namespace ends with its first process, so what an ended agent left inside is already
        dead; a root run's sandbox user is killed too, for the instant between the two."""
        if self.uid is not None:
            kill_user(self.uid)

    async def close(self) -> None:
        if self._bridge is not None:
            await self._bridge.close()
            self._bridge = None
        if self.uid is not None:
            kill_user(self.uid)
        workspace.remove(self.folder)


def kill_user(uid: int) -> None:
    """SIGKILL every process of `uid` (a sandbox's own user: nothing else runs as it)."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if os.stat(f"/proc/{name}").st_uid == uid:
                os.kill(int(name), signal.SIGKILL)
        except OSError:
            continue
