"""`make demo` ends on a red `Gate FAILED` by design; a newcomer must read, in the same terminal, that this is the
intended outcome and why, and the target must still fail when the demo itself is broken (exit 2 or 3)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def _demo(tmp_path: Path, evals: str) -> subprocess.CompletedProcess[str]:
    # -o: the venv's install stamp is taken as done (the tests run inside an installed environment)
    return subprocess.run(["make", "-s", "--no-print-directory", "-o", ".venv/.installed", "demo",
                           f"EVALS={evals}", f"DEMO_OUT={tmp_path / 'out'}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_the_demo_says_its_gate_fails_on_purpose(tmp_path: Path) -> None:
    done = _demo(tmp_path, f"{sys.executable} -m evals_cli")
    assert done.returncode == 0, done.stderr
    assert "Gate FAILED" in done.stdout
    note = done.stdout.split("Gate FAILED", 1)[1]
    assert "intended outcome" in note and "tool_order" in note and "exit 1" in note
    assert (tmp_path / "out" / "results.jsonl").is_file()


def test_a_broken_demo_still_fails_the_target_without_the_note(tmp_path: Path) -> None:
    broken = tmp_path / "evals"
    broken.write_text("#!/bin/sh\necho 'error: broken' >&2\nexit 2\n", encoding="utf-8")
    broken.chmod(0o755)
    done = _demo(tmp_path, str(broken))
    assert done.returncode != 0
    assert "intended outcome" not in done.stdout
