"""Issue 42 item 5: the start of a run reads the suite file once (runner/plan.py over suite/source.py), whatever
asks of it (its kind, the models it names, its full load, validate's checks). Counted with Python's audit hook
on `open`, in a process of its own (a hook cannot be removed, so it must not stay in the test process)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT

COUNTER = """
import os, sys
target = os.path.realpath(sys.argv[1])
opens = []
def hook(event, args):
    if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        if os.path.realpath(os.fsdecode(args[0])) == target:
            opens.append(1)
sys.addaudithook(hook)
from evals_cli.cli import app
try:
    app(args=sys.argv[2:], prog_name="evals")
except SystemExit as exc:
    code = exc.code
print("OPENS", len(opens), "EXIT", code, file=sys.stderr)
"""


def opens(suite: Path, *args: str, cwd: Path = ROOT) -> tuple[int, int]:
    """(times `suite` was opened, exit code) of `evals ARGS` in a fresh interpreter."""
    env = {"NO_COLOR": "1", "COLUMNS": "200", "PATH": "/usr/bin:/bin", "HOME": str(cwd)}
    done = subprocess.run([sys.executable, "-c", COUNTER, str(suite), *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=120)
    last = done.stderr.strip().splitlines()[-1].split()
    assert last[0] == "OPENS", done.stderr
    return int(last[1]), int(last[3])


def test_a_replayed_run_reads_its_suite_once(tmp_path: Path) -> None:
    suite = ROOT / "suites" / "demo.yaml"
    found, code = opens(suite, "run", str(suite), "--replay", str(ROOT / "suites" / "demo.recording.jsonl"),
                        "-o", str(tmp_path / "run"))
    assert code == 1 and (tmp_path / "run" / "summary.json").is_file()  # the demo's gate fails, as shipped
    assert found == 1


def test_a_resumed_run_and_validate_read_it_once(tmp_path: Path) -> None:
    suite = ROOT / "suites" / "demo.yaml"
    replay = str(ROOT / "suites" / "demo.recording.jsonl")
    opens(suite, "run", str(suite), "--replay", replay, "-o", str(tmp_path / "run"))
    summary = tmp_path / "run" / "summary.json"
    summary.unlink()  # an unfinished run: --resume reads run.json and continues
    found, code = opens(suite, "run", str(suite), "--replay", replay, "--resume", str(tmp_path / "run"))
    assert code == 1 and json.loads(summary.read_text())["total"] > 0
    assert found == 1
    assert opens(suite, "validate", str(suite)) == (1, 0)


@pytest.mark.parametrize("name", ["multi_agent.yaml", "multi_turn.yaml"])
def test_other_documents_are_read_once_by_validate(name: str) -> None:
    found, _ = opens(ROOT / "suites" / name, "validate", str(ROOT / "suites" / name))
    assert found == 1
