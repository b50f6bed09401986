"""`make help` lists every target of the Makefile with what it does (the `##` comment above it): a newcomer's first
question of a Makefile, which had no answer."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from tests.helpers import ROOT


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_help_lists_every_target_with_its_description() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = re.findall(r"^([a-z][a-z0-9-]*):(?!=)", makefile, flags=re.M)
    assert {"help", "test", "docs", "demo", "lint"} <= set(targets)
    shown = subprocess.run(["make", "-s", "--no-print-directory", "help"], cwd=ROOT, capture_output=True, text=True,
                           timeout=60)
    assert shown.returncode == 0, shown.stderr
    described = dict(line.split(None, 1) for line in shown.stdout.splitlines() if len(line.split(None, 1)) == 2)
    assert sorted(described) == sorted(targets)
    assert described["record-demo"].startswith("Re-record the demo")  # each target's own comment, not a neighbour's
