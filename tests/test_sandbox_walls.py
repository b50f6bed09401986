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
