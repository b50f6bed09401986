"""`evals view` on what a newcomer has: a run in flight shows as running (its samples so far, no resume advice)
with the weights the suite gives; the default folder given as a relative path serves every model page of a
many-models run (it answered 500: the root was compared unresolved); a results.jsonl that is a symlink to a file
outside the folder is not served (the docs promise only runs under DIR are)."""

from __future__ import annotations

import os
import re
import shutil
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from evals_cli.history import pages
from evals_cli.history.server import HistoryServer
from tests.helpers import run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, text

ROWS = [{"id": "capital", "input": "capital of France?", "ground_truth": "Paris"},
        {"id": "sum", "input": "math: 2+2?", "ground_truth": "4"}]
GRADERS = {"answer": {"kind": "tool", "function": "contains"}, "order": {"kind": "tool_order"}}
WEIGHTED = {"kind": "weighted_average", "aggregation": "avg_score", "op": "gte", "value": 0.5,
            "weights": {"answer": 3, "order": 1}}


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as reply:  # noqa: S310 (loopback)
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _run(server: ScriptedServer, tmp: Path, out: Path, *extra: str) -> None:
    server.script = agent_script({"capital": [text("Paris")], "math": [text("4")]})
    suite = write_suite(tmp, ROWS, base_url=server.url, graders=GRADERS, gate=WEIGHTED)
    result = run_cli("run", str(suite), "-o", str(out), *extra)
    assert result.returncode in (0, 1), result.stdout + result.stderr


def test_a_run_in_flight_is_shown_running_with_the_suites_weights(server: ScriptedServer, tmp_path: Path) -> None:
    root = tmp_path / "results"
    _run(server, tmp_path, root / "live")
    (root / "live" / "summary.json").unlink()  # its files written just now, no summary yet: in flight
    lines = (root / "live" / "results.jsonl").read_text().splitlines(keepends=True)
    (root / "live" / "results.jsonl").write_text(lines[0])
    viewer = HistoryServer(root, 0, pages=pages).start()
    try:
        status, page = _get(viewer.url + "run/live/")
    finally:
        viewer.shutdown()
    assert status == 200
    assert "status running" in page and "1 sample finished so far" in page
    assert "interrupted" not in page and "--resume" not in page and "resume a stopped run" not in page
    weights = dict(re.findall(r"<tr><td>(answer|order)</td>.*?<td class=\"num\">([\d.—]+)</td></tr>", page, flags=re.S))
    assert weights == {"answer": "3", "order": "1"}


def test_the_default_folder_serves_every_model_page_and_no_symlink_out(server: ScriptedServer, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "results"
    _run(server, tmp_path, root / "m", "--model", "a", "--model", "b")
    _run(server, tmp_path, tmp_path / "secret")
    (root / "leak").mkdir()
    os.symlink(tmp_path / "secret" / "results.jsonl", root / "leak" / "results.jsonl")
    shutil.copy(tmp_path / "secret" / "run.json", root / "leak" / "run.json")
    monkeypatch.chdir(tmp_path)
    viewer = HistoryServer(Path("results"), 0, pages=pages).start()  # as `evals view` gives its default
    try:
        for model in ("a", "b"):
            status, page = _get(viewer.url + f"run/m/{model}/")
            assert status == 200, page
        status, runs = _get(viewer.url + "runs.json")
        leak_status, _ = _get(viewer.url + "run/leak/")
    finally:
        viewer.shutdown()
    assert '"leak"' not in runs and leak_status == 404


def test_history_and_viewer_mark_replayed_cached_and_no_judge_runs(server: ScriptedServer, tmp_path: Path) -> None:
    import json

    root = tmp_path / "results"
    recording, cache = tmp_path / "rec.jsonl", tmp_path / "cache.jsonl"
    _run(server, tmp_path, root / "live", "--record", str(recording))
    _run(server, tmp_path, root / "replayed", "--replay", str(recording))
    _run(server, tmp_path, root / "cache-fill", "--cache", str(cache))
    _run(server, tmp_path, root / "cached", "--cache", str(cache))
    _run(server, tmp_path, root / "nojudge", "--no-judge")
    shown = run_cli("history", str(root), "--json")
    assert shown.returncode == 0, shown.stderr
    marks = {r["run"]: r["marks"] for r in json.loads(shown.stdout)}
    assert marks["live"] == [] and marks["cache-fill"] == []  # a cache that answered nothing: every answer live
    assert marks["replayed"] == ["replayed from rec.jsonl"]
    assert marks["cached"] == ["cached: 2 of 2 requests from cache.jsonl"]
    assert marks["nojudge"] == ["no judge (--no-judge)"]
    text = " ".join(run_cli("history", str(root)).stdout.split())
    assert "(replayed from rec.jsonl)" in text and "(no judge (--no-judge))" in text
    viewer = HistoryServer(root, 0, pages=pages).start()
    try:
        _, page = _get(viewer.url + "run/replayed/")
        _, index = _get(viewer.url)
    finally:
        viewer.shutdown()
    assert "Not a live run: replayed from rec.jsonl." in page
    assert "(replayed from rec.jsonl)" in index


def test_a_run_over_several_models_in_flight_is_shown_running(server: ScriptedServer, tmp_path: Path) -> None:
    import json

    root = tmp_path / "results"
    _run(server, tmp_path, root / "m", "--model", "a", "--model", "b")
    (root / "m" / "b" / "summary.json").unlink()  # b still going: matrix.json as written at the start
    matrix = json.loads((root / "m" / "matrix.json").read_text())
    matrix.update(status="interrupted", finished_at="", exit_code=130, gate=None)
    for model in matrix["models"]:
        model.update(status=None, exit_code=None, gate=None)
    (root / "m" / "matrix.json").write_text(json.dumps(matrix))
    viewer = HistoryServer(root, 0, pages=pages).start()
    try:
        status, page = _get(viewer.url + "run/m/")
        b_status, b_page = _get(viewer.url + "run/m/b/")
    finally:
        viewer.shutdown()
    assert status == 200 and "status running" in page and "interrupted" not in page
    assert b_status == 200 and "status running" in b_page and "--resume" not in b_page
