"""The read-back of a workspace (mcp/workspace.py) against what a process still running in it can do: swap a
folder for a link out of it while it is walked, or make a folder unreadable so its files would look deleted."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from evals_cli.mcp import workspace
from tests.helpers import ROOT

SWAP = """
import os, sys
os.chdir(sys.argv[1])
while True:  # what a process left running in a sandbox can do: the folder, then a link out, over and over
    try:
        os.rename("real", "aside"); os.symlink(sys.argv[2], "real"); os.unlink("real"); os.rename("aside", "real")
    except OSError:
        pass
"""


@pytest.mark.slow
def test_a_folder_swapped_for_a_link_while_walked_never_leads_outside(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "shadow").write_text("root:SECRET\n", encoding="utf-8")
    folder = tmp_path / "ws"
    (folder / "real").mkdir(parents=True)
    (folder / "real" / "shadow").write_text("decoy\n", encoding="utf-8")
    swapper = subprocess.Popen([sys.executable, "-c", SWAP, str(folder), str(outside)])
    seen = set()
    try:
        for _ in range(30000):  # the window is narrow: a walk following paths leaks within ~10000
            seen.update(workspace.read_back(folder).values())  # a swap mid-walk is a passed-over entry, no error
    finally:
        swapper.kill()
        swapper.wait()
    assert "decoy\n" in seen  # the walk did see the folder between swaps
    assert "root:SECRET\n" not in seen


def test_a_link_or_a_fifo_in_the_workspace_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("host\n", encoding="utf-8")
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "a.txt").write_text("kept\n", encoding="utf-8")
    (folder / "link").symlink_to(tmp_path / "secret")
    (folder / "dirlink").symlink_to(tmp_path)
    os.mkfifo(folder / "pipe")  # opened without blocking, then passed over
    assert workspace.read_back(folder) == {"a.txt": "kept\n"}
    assert set(workspace.fingerprint(folder) or {}) == {"a.txt"}


UNREADABLE = """
import os, sys
from pathlib import Path
from evals_cli.mcp import workspace
folder = Path(sys.argv[1])
if os.geteuid() == 0:
    os.setgid(65534); os.setuid(65534)  # nobody: permissions hold for it, as for a non-root run
(folder / "sub").chmod(0o000) if sys.argv[2] == "dir" else (folder / "sub" / "b.txt").chmod(0o000)
try:
    print("read", sorted(workspace.read_back(folder)))
except Exception as exc:
    print("unreadable", exc)
print("fingerprint", workspace.fingerprint(folder))
"""


@pytest.mark.parametrize("what", ["dir", "file"])
def test_an_unreadable_folder_or_file_is_an_error_never_deleted_files(what: str) -> None:
    # a folder of its own under the system's temporary folder: pytest's tmp_path lies under a folder only its
    # owner may pass through, and the read-back runs as another user
    base = Path(tempfile.mkdtemp(prefix="evals-readback-"))
    try:
        _unreadable(base, what)
    finally:
        subprocess.run(["chmod", "-R", "u+rwx", str(base)], check=False)
        shutil.rmtree(base, ignore_errors=True)


def _unreadable(base: Path, what: str) -> None:
    folder = base / "ws"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.txt").write_text("a\n", encoding="utf-8")
    (folder / "sub" / "b.txt").write_text("b\n", encoding="utf-8")
    if os.geteuid() == 0:
        base.chmod(0o755)  # nobody passes through to the folder
        subprocess.run(["chown", "-R", "65534:65534", str(folder)], check=True)
    done = subprocess.run([sys.executable, "-c", UNREADABLE, str(folder), what], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert f"unreadable the workspace's '{'sub' if what == 'dir' else 'sub/b.txt'}' cannot be read" in done.stdout
    # the fingerprint reads metadata only: an unreadable file is still there; an unreadable folder is unknown
    assert ("fingerprint None" in done.stdout) == (what == "dir")
