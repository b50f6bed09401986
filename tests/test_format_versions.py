"""Files a newer evals-cli wrote are refused, not misread: every reader of results.jsonl, summary.json, run.json,
matrix.json and recordings stops with exit 2, naming the file, the version it found and the newest it reads.
Files without a version (written before it was recorded) keep being read."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, text

ROWS = [{"id": "capital", "input": "capital of France?", "ground_truth": "Paris"},
        {"id": "sum", "input": "2+2?", "ground_truth": "4"}]
GRADERS = {"answer": {"kind": "tool", "function": "contains"}}


def _bump_json(path: Path) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    data["schema_version"] = 99
    path.write_text(json.dumps(data), encoding="utf-8")


def _bump_lines(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["schema_version"] = 99
    path.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n", encoding="utf-8")


def _assert_refused(done: Any, file: Path, newest: int) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert str(file) in done.stderr
    assert f"schema_version 99; this evals-cli reads up to {newest}" in done.stderr
    assert "newer evals-cli" in done.stderr and "upgrade" in done.stderr


@pytest.fixture
def run(server: ScriptedServer, tmp_path: Path) -> tuple[Path, Path, Path]:
    server.script = agent_script({"capital": [text("Paris")], "2+2": [text("4")]})
    suite = write_suite(tmp_path, ROWS, base_url=server.url, graders=GRADERS)
    out, recording = tmp_path / "run", tmp_path / "rec.jsonl"
    done = run_cli("run", str(suite), "-o", str(out), "--record", str(recording))
    assert done.returncode == 0, done.stdout + done.stderr
    return suite, out, recording


@pytest.mark.parametrize(("name", "bump", "newest", "command"), [
    ("results.jsonl", _bump_lines, 2, lambda s, o, r: ("report", str(o))),
    ("summary.json", _bump_json, 2, lambda s, o, r: ("report", str(o))),
    ("run.json", _bump_json, 1, lambda s, o, r: ("run", str(s), "--resume", str(o))),
    ("results.jsonl", _bump_lines, 2, lambda s, o, r: ("run", str(s), "--rerun-failed", str(o), "-o",
                                                       str(o.parent / "rerun"))),
    ("summary.json", _bump_json, 2, lambda s, o, r: ("run", str(s), "--rerun-failed", str(o), "-o",
                                                      str(o.parent / "rerun"))),
    ("rec.jsonl", _bump_lines, 1, lambda s, o, r: ("run", str(s), "-o", str(o.parent / "again"), "--replay", str(r))),
])
def test_a_newer_file_is_refused(run: tuple[Path, Path, Path], name: str, bump: Callable[[Path], None], newest: int,
                                 command: Callable[[Path, Path, Path], tuple[str, ...]]) -> None:
    suite, out, recording = run
    file = recording if name == "rec.jsonl" else out / name
    before = run_cli(*command(suite, out, recording))
    assert before.returncode in (0, 1), before.stdout + before.stderr  # the same command reads today's file
    bump(file)
    _assert_refused(run_cli(*command(suite, out, recording)), file, newest)


def test_a_newer_matrix_is_refused(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script({"capital": [text("Paris")], "2+2": [text("4")]})
    suite = write_suite(tmp_path, ROWS, base_url=server.url, graders=GRADERS)
    out = tmp_path / "models"
    done = run_cli("run", str(suite), "-o", str(out), "--model", "a", "--model", "b")
    assert done.returncode == 0, done.stdout + done.stderr
    assert run_cli("report", str(out)).returncode == 0
    _bump_json(out / "matrix.json")
    _assert_refused(run_cli("report", str(out)), out / "matrix.json", 2)


def test_files_without_a_version_are_still_read(run: tuple[Path, Path, Path]) -> None:
    """Recordings and run manifests written before they carried a version are version 1."""
    suite, out, recording = run
    for path in (recording,):
        lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        assert all(line.pop("schema_version") == 1 for line in lines)
        path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    manifest = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert manifest.pop("schema_version") == 1
    (out / "run.json").write_text(json.dumps(manifest), encoding="utf-8")
    assert run_cli("run", str(suite), "-o", str(out.parent / "again"), "--replay", str(recording)).returncode == 0
    resumed = run_cli("run", str(suite), "--resume", str(out))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
