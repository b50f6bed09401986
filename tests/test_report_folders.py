"""`evals report` on what a newcomer types: a folder of runs (`evals report results`) reports the newest run in it,
saying so; `--why full` on a run over several models prints every model's reasons whole (it was ignored)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import run_cli, set_started, write_suite
from tests.scripted_server import ScriptedServer, agent_script, text

ROWS = [{"id": "capital", "input": "capital of France?", "ground_truth": "Paris"},
        {"id": "sum", "input": "math: 2+2?", "ground_truth": "4"}]
GRADERS = {"answer": {"kind": "tool", "function": "contains"}}


def _run(server: ScriptedServer, tmp: Path, out: Path, answer: str, *extra: str) -> None:
    server.script = agent_script({"capital": [text("Paris")], "math": [text(answer)]})
    suite = write_suite(tmp, ROWS, base_url=server.url, graders=GRADERS)
    result = run_cli("run", str(suite), "-o", str(out), *extra)
    assert result.returncode in (0, 1), result.stdout + result.stderr


def test_report_of_a_folder_of_runs_reports_the_newest(server: ScriptedServer, tmp_path: Path) -> None:
    root = tmp_path / "results"
    _run(server, tmp_path, root / "b-old", "5")
    _run(server, tmp_path, root / "a-new", "4")
    set_started(root / "b-old", "2025-01-01T10:00:00+00:00")
    set_started(root / "a-new", "2025-01-02T10:00:00+00:00")
    shown = run_cli("report", str(root))
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert "reporting the newest, a-new" in " ".join(shown.stderr.split())
    assert "2 samples: 2 passed, 0 failed" in shown.stdout  # a-new's table, not b-old's (1 failed)
    empty = tmp_path / "empty"
    empty.mkdir()
    nothing = run_cli("report", str(empty))
    assert nothing.returncode == 2 and "Traceback" not in nothing.stderr


def test_why_full_prints_every_models_reasons(server: ScriptedServer, tmp_path: Path) -> None:
    out = tmp_path / "models"
    _run(server, tmp_path, out, "5", "--model", "a", "--model", "b")
    short = run_cli("report", str(out))
    full = run_cli("report", str(out), "--why", "full")
    assert full.returncode == 0, full.stdout + full.stderr
    assert "model a:" in full.stdout and "model b:" in full.stdout and "model a:" not in short.stdout
    assert full.stdout.count("did not pass, whole") == 2
