"""The walls between a sandbox and the host that evals-cli itself could breach: what it writes into or reads out
of a sandbox's folders, what it puts on the host's command lines, and who may speak through the bridge socket
(real bubblewrap; the podman cases are slow)."""

from __future__ import annotations

import asyncio
import os
import shutil
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
