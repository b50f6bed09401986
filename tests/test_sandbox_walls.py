"""The walls between a sandbox and the host that evals-cli itself could breach: what it writes into or reads out
of a sandbox's folders, what it puts on the host's command lines, and who may speak through the bridge socket
(real bubblewrap; the podman cases are slow)."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import stat
from pathlib import Path

import pytest

from evals_cli.models.sandbox import BwrapSandboxSpec
from evals_cli.sandbox.bwrap import BwrapSandbox
from evals_cli.sandbox.folders import Folders

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")


async def _serve_nothing() -> tuple[asyncio.AbstractServer, int]:
    async def serve(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    return server, int(server.sockets[0].getsockname()[1])


@needs_bwrap
def test_a_planted_symlink_in_the_run_folder_cannot_make_reach_write_a_host_file(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("host data\n", encoding="utf-8")

    async def go() -> None:
        folders = Folders()
        box = BwrapSandbox(BwrapSandboxSpec(), folders.new("plant", 0))
        server, port = await _serve_nothing()
        try:
            # the link need not resolve inside: a host-side write into the run folder would follow it on the host
            planted = await box.exec(["ln", "-s", str(victim), "/run/evals/forward.py"], timeout=10)
            assert planted.exit_code != 0 and "Read-only" in planted.stderr
            assert not os.path.lexists(box.run_dir / "forward.py")
            await box.reach("127.0.0.1", port)
            ran = await box.exec(["sh", "-c", "echo hi; touch /run/evals/x /run/evals-forward.py 2>&1"], timeout=10)
            assert ran.stdout.startswith("hi") and ran.stdout.count("cannot touch") == 2  # the forwarder ran; both read-only
        finally:
            server.close()
            await box.close()
            folders.close()

    asyncio.run(go())
    assert victim.read_text(encoding="utf-8") == "host data\n"


ENGINE_ARGS = ["--runtime", "runc", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("podman") is None, reason="podman is not installed")
def test_what_an_agent_left_running_in_a_container_is_stopped_before_the_read_back() -> None:
    from evals_cli.models.sample import Sample
    from evals_cli.models.sandbox import DockerSandboxSpec
    from evals_cli.sandbox.factory import SandboxFactory
    from evals_cli.settings import child_environment
    from evals_cli.targets.agent_process import AgentProcess
    from tests.sandbox_image import test_image

    spec = DockerSandboxSpec.model_validate({"kind": "docker", "engine": "podman", "image": test_image("podman"),
                                             "engine_args": ENGINE_ARGS})
    script = "trap '' TERM HUP; (while true; do echo x >> /workspace/late.txt; sleep 0.05; done) & wait"

    async def go() -> None:
        factory = SandboxFactory(spec, Path.cwd())
        box = await factory.open(Sample(id="outlive", input="x"), 0)
        assert box is not None
        try:
            argv = box.wrap(["sh", "-c", script])
            agent = await AgentProcess.start(argv[0], argv[1:], str(box.workspace), child_environment())
            late = box.workspace / "late.txt"
            for _ in range(400):  # bounded: the loop has written
                if late.exists() and late.stat().st_size > 0:
                    break
                await asyncio.sleep(0.05)
            await agent.end(0.5)
            await box.stop_processes()
            size = late.stat().st_size
            listing = "import os; print([open(f'/proc/{p}/cmdline').read() for p in os.listdir('/proc') if p.isdigit()])"
            left = await box.exec(["python3", "-c", listing], timeout=30)
            assert left.ok and "while true" not in left.stdout and "sh\x00-c" not in left.stdout, left
            await asyncio.sleep(0.5)  # a writer every 0.05s would have written ten lines by now
            assert late.stat().st_size == size
        finally:
            await box.close()
            factory.close()

    asyncio.run(go())


@needs_bwrap
def test_only_the_sandbox_s_own_processes_speak_through_its_bridge() -> None:
    connected: list[tuple[str, int]] = []

    def forge(path: str) -> bytes:  # a process of this machine outside every sandbox (a kind-none agent)
        with socket.socket(socket.AF_UNIX) as sock:
            sock.connect(path)
            try:
                sock.sendall(b"GET / HTTP/1.0\r\n\r\n")
                return sock.recv(100)
            except OSError:  # reset or broken pipe: closed by the bridge
                return b""

    async def go() -> None:
        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(answer, "127.0.0.1", 0)
        port = int(server.sockets[0].getsockname()[1])
        folders = Folders()
        box = BwrapSandbox(BwrapSandboxSpec(), folders.new("forged", 0))
        try:
            url = await box.reach("127.0.0.1", port, on_connect=connected.append)
            sock_path = box.run_dir / "upstream.sock"
            assert stat.S_IMODE(os.stat(box.run_dir).st_mode) == 0o700
            assert await asyncio.to_thread(forge, str(sock_path)) == b""  # closed unread
            assert connected == [] and box._bridge is not None and box._bridge.refused == 1
            inside = await box.exec(["python3", "-c", f"import urllib.request as u; print(u.urlopen('{url}').read())"],
                                    timeout=30)
            assert inside.stdout.strip() == "b'ok'", inside
            assert len(connected) == 1 and box._bridge.refused == 1
        finally:
            server.close()
            await box.close()
            folders.close()

    asyncio.run(go())


def _cmdlines_with(token: bytes) -> list[str]:
    found = []
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                if token in fh.read():
                    found.append(name)
        except OSError:
            continue
    return found


@needs_bwrap
def test_a_secret_of_target_env_is_on_no_command_line_and_the_environment_is_exact() -> None:
    secret = "sk-live-" + os.urandom(8).hex()

    async def go() -> None:
        folders = Folders()
        box = BwrapSandbox(BwrapSandboxSpec(), folders.new("env", 0))
        try:
            argv = box.wrap(["sh", "-c", "env > /workspace/env.txt; sleep 30"], env={"OPENAI_API_KEY": secret})
            process = await asyncio.create_subprocess_exec(*argv, env={"PATH": os.environ["PATH"], "LEAK": "host"})
            written = box.workspace / "env.txt"
            for _ in range(400):  # bounded: the command inside is running
                if written.exists() and "OPENAI" in written.read_text(encoding="utf-8"):
                    break
                await asyncio.sleep(0.05)
            assert _cmdlines_with(secret.encode()) == []
            inside = dict(line.split("=", 1) for line in written.read_text(encoding="utf-8").splitlines())
            assert inside["OPENAI_API_KEY"] == secret and "LEAK" not in inside and inside["HOME"] == "/tmp"
            assert not list(box.folder.glob("env-*"))  # read and removed by the launcher
            process.kill()
            await process.wait()
        finally:
            await box.close()
            folders.close()

    asyncio.run(go())


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("podman") is None, reason="podman is not installed")
def test_a_container_create_cut_off_leaves_no_container_once_the_factory_closes() -> None:
    from evals_cli.models.sample import Sample
    from evals_cli.models.sandbox import DockerSandboxSpec
    from evals_cli.sandbox import docker
    from evals_cli.sandbox.factory import SandboxFactory
    from tests.sandbox_image import test_image

    spec = DockerSandboxSpec.model_validate({"kind": "docker", "engine": "podman", "image": test_image("podman"),
                                             "engine_args": ENGINE_ARGS})

    async def go() -> None:
        factory = SandboxFactory(spec, Path.cwd())
        for delay in (0.1, 0.15, 0.2, 0.25, 0.3):  # cut at points through `podman run`
            try:
                box = await asyncio.wait_for(factory.open(Sample(id="cut", input="x"), 0), delay)
            except TimeoutError:
                continue
            assert box is not None
            await box.close()
        factory.close()

    asyncio.run(go())
    left = docker.engine_sync(["podman", "ps", "-aq", "--filter", f"label={docker.LABEL}={docker.owner()}"])
    assert left.stdout.split() == []
