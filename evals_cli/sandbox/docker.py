"""`kind: docker`: an episode's machine as a container of a docker-CLI-compatible engine (docker, podman).

One container per episode, started from the suite's image (or the one built from `build:` once per run,
preflight.py) with no network by default, its cpus, memory and pids bounded, every capability dropped, no new
privileges, the episode's workspace bind-mounted at /workspace and its `run` folder at /run/evals (the sockets
that lead out, bridge.py). It idles on `sleep infinity` while commands run in it with `engine exec`; closing it
is `engine rm -f`, which kills everything inside. Each container carries the label `evals.owner=<pid> <host>`,
so the next run removes those a killed run left (`clean_orphans`). A command cut at its timeout is killed inside
with `kill -9 -1` from /bin/sh (every process but the container's first): the image needs a /bin/sh for that,
and `python3` for telemetry from inside."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

from evals_cli.mcp import workspace
from evals_cli.models.sandbox import DockerSandboxSpec
from evals_cli.sandbox.base import MAX_OUTPUT, WORKSPACE, ExecResult, SandboxUnavailable
from evals_cli.sandbox.bridge import Bridge, Vouch, pid_namespace
from evals_cli.sandbox.bwrap import BASE_ENV, FORWARD_INSIDE, FORWARD_SCRIPT, INSIDE_PORT, RUN_DIR
from evals_cli.sandbox.processes import run_bounded
from evals_cli.sandbox.secretenv import launch

LABEL = "evals.owner"
ENGINE_TIMEOUT = 120.0  # seconds one engine command (run, rm, inspect) may take
ENGINES = ("docker", "podman")
ENGINE_FAILED = 125  # what `docker exec` and `podman exec` exit with when the engine, not the command, failed


def find_engine(spec: DockerSandboxSpec) -> str | None:
    """The engine's program: the one the suite names, else docker, else podman (None: none on PATH)."""
    for name in ([spec.engine] if spec.engine else ENGINES):
        if name is not None and shutil.which(name):
            return name
    return None


def owner() -> str:
    return f"{os.getpid()} {socket.gethostname()}"


async def engine(argv: Sequence[str], timeout: float = ENGINE_TIMEOUT) -> ExecResult:
    """One engine command, bounded; a missing program is SandboxUnavailable."""
    try:
        return await run_bounded(argv, timeout=timeout, stdin=None, max_output=MAX_OUTPUT)
    except OSError as exc:
        raise SandboxUnavailable(f"sandbox docker: cannot run {argv[0]} ({exc.strerror or exc})") from None


class DockerSandbox:
    """One episode's container; `create` starts it."""

    kind = "docker"

    def __init__(self, spec: DockerSandboxSpec, folder: Path, program: str, image: str) -> None:
        self.spec, self.folder, self.program, self.image = spec, folder, program, image
        self.workspace = folder / "workspace"
        self.run_dir = folder / "run"
        self.name = f"evals-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        self._bridge: Bridge | None = None
        self._namespace: int | None = None  # the container's pid namespace (what the bridge lets connect)
        self._started = False

    @classmethod
    async def create(cls, spec: DockerSandboxSpec, folder: Path, program: str, image: str) -> DockerSandbox:
        box = cls(spec, folder, program, image)
        box.workspace.mkdir(parents=True, mode=0o777)
        box.workspace.chmod(0o777)  # the container's user, whoever the image makes it, writes there
        # the bridge's socket: entered by the container's root (this user, or root mapped to it) only, unless the
        # suite names another user; who connects is checked either way (bridge.py)
        box.run_dir.mkdir(mode=0o700 if spec.user is None else 0o711)
        try:
            started = await engine(box.run_args())
        except BaseException:  # cancelled (a sample's timeout, a stop) while the engine may have made it
            box._started = True
            await asyncio.shield(box.close())
            raise
        if not started.ok:
            await box.close()
            said = (started.stderr or started.stdout).strip()[-600:]
            raise SandboxUnavailable(f"sandbox docker: {program} could not start a container of {image!r}: {said}")
        box._started = True
        return box

    def run_args(self) -> list[str]:
        spec = self.spec
        args = [self.program, "run", "-d", "--rm", "--name", self.name, "--label", f"{LABEL}={owner()}",
                "--network", spec.network, "--pids-limit", str(spec.pids), "--cap-drop", "ALL",
                "--security-opt", "no-new-privileges", "--ulimit", f"fsize={spec.max_file_mb * 2**20}",
                "-v", f"{self.workspace}:{WORKSPACE}:rw", "-v", f"{self.run_dir}:{RUN_DIR}:ro",
                "-v", f"{FORWARD_SCRIPT}:{FORWARD_INSIDE}:ro", "-w", WORKSPACE]
        if spec.cpus is not None:
            args += ["--cpus", f"{spec.cpus:g}"]
        if spec.memory is not None:
            args += ["--memory", spec.memory]
        if spec.user is not None:
            args += ["--user", spec.user]
        return [*args, *spec.engine_args, "--entrypoint", "sleep", self.image, "infinity"]

    def own(self) -> None:
        """Make the filled workspace writable by whatever user the container runs as."""
        for current, dirs, files in os.walk(self.workspace):
            for name in dirs:
                os.chmod(os.path.join(current, name), 0o777)
            for name in files:
                os.chmod(os.path.join(current, name), 0o666)

    async def reach(self, host: str, port: int, on_connect: Vouch | None = None,
                    on_close: Vouch | None = None) -> str:
        if self._bridge is None:
            self._namespace = await self._pid_namespace()
            self._bridge = Bridge(self.run_dir / "upstream.sock", host, port, on_connect, on_close,
                                  allow=self._is_inside)
            await self._bridge.open(0o600 if self.spec.user is None else 0o666)
        return f"http://127.0.0.1:{INSIDE_PORT}"

    async def _pid_namespace(self) -> int | None:
        found = await engine([self.program, "inspect", "--format", "{{.State.Pid}}", self.name], timeout=60)
        pid = found.stdout.strip()
        return pid_namespace(int(pid)) if found.ok and pid.isdigit() else None

    def _is_inside(self, pid: int, uid: int) -> bool:
        """A process in the container's pid namespace: no process of this machine speaks through the bridge."""
        return self._namespace is not None and pid_namespace(pid) == self._namespace

    def wrap(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: str = WORKSPACE) -> list[str]:
        given = {**BASE_ENV, **(env or {})}
        # `-e KEY` takes the value from the client's environment, handed over by a file: none on a command line
        args = [*launch(self.folder, given, "merge"), self.program, "exec", "-i", "-w", cwd]
        for key in given:
            args += ["-e", key]
        forward = []
        if self._bridge is not None:
            forward = ["python3", "-I", "-S", FORWARD_INSIDE, str(INSIDE_PORT), f"{RUN_DIR}/upstream.sock",
                       "--"]
        return [*args, self.name, *forward, *argv]

    async def exec(self, argv: Sequence[str], *, timeout: float, stdin: bytes | None = None,
                   env: Mapping[str, str] | None = None, cwd: str = WORKSPACE,
                   max_output: int = MAX_OUTPUT) -> ExecResult:
        async def kill_inside() -> None:  # `engine exec` killed leaves its command running in the container
            await engine([self.program, "exec", self.name, "/bin/sh", "-c", "kill -9 -1"], timeout=10)

        try:
            done = await run_bounded(self.wrap(argv, env=env, cwd=cwd), timeout=timeout, stdin=stdin,
                                     max_output=max_output, on_timeout=kill_inside)
        except OSError as exc:
            raise SandboxUnavailable(f"sandbox docker: cannot run {self.program} ({exc.strerror or exc})") from None
        if done.exit_code == ENGINE_FAILED and done.stderr.lstrip().startswith("Error"):
            # the engine's own failure (the container gone, the engine down): the command never ran
            raise SandboxUnavailable(f"sandbox docker: {self.program} exec failed: {done.stderr.strip()[:500]}")
        return done

    async def stop_processes(self) -> None:
        """Every process in the container but its first (`sleep infinity`) killed: what the agent left in the
        background would otherwise go on writing (or swapping links) while the workspace is read back."""
        if self._started:
            await engine([self.program, "exec", self.name, "/bin/sh", "-c", "kill -9 -1"], timeout=30)

    async def close(self) -> None:
        if self._bridge is not None:
            await self._bridge.close()
            self._bridge = None
        if self._started:
            self._started = False
            await asyncio.shield(engine([self.program, "rm", "-f", "-t", "0", self.name]))
        workspace.remove(self.folder)


def engine_sync(argv: Sequence[str], timeout: float = ENGINE_TIMEOUT) -> subprocess.CompletedProcess[str]:
    """One engine command at a run's start (preflight.py), bounded; OSError when the program cannot be run."""
    try:
        return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(list(argv), 124, "", f"no answer within {timeout:g}s")


def image_exists(program: str, image: str) -> bool:
    return engine_sync([program, "image", "inspect", image], timeout=60).returncode == 0


def build_image(program: str, context: Path, tag: str) -> subprocess.CompletedProcess[str]:
    """`engine build` of a Dockerfile folder (what `build:` names), tagged `tag`."""
    return engine_sync([program, "build", "-t", tag, str(context)], timeout=1800)


def clean_orphans(program: str) -> list[str]:
    """Remove the containers a killed run left: labelled by an evals-cli of this host whose process is gone."""
    listed = engine_sync([program, "ps", "-a", "--filter", f"label={LABEL}", "--format",
                          '{{.ID}} {{index .Labels "' + LABEL + '"}}'], timeout=60)
    if listed.returncode != 0:
        return []
    gone = []
    host = socket.gethostname()
    for line in listed.stdout.splitlines():
        cid, _, mark = line.strip().partition(" ")
        pid, _, made_on = mark.partition(" ")
        if made_on == host and pid.isdigit() and not workspace.running(int(pid)):
            gone.append(cid)
    if gone:
        engine_sync([program, "rm", "-f", "-t", "0", *gone], timeout=120)
    return gone


def remove_mine(program: str) -> list[str]:
    """Remove the containers this process made that are still there (bounded: the engine may hang)."""
    listed = engine_sync([program, "ps", "-a", "-q", "--filter", f"label={LABEL}={owner()}"], timeout=60)
    left = listed.stdout.split() if listed.returncode == 0 else []
    if left:
        engine_sync([program, "rm", "-f", "-t", "0", *left], timeout=120)
    return left
