"""`evals history` and `evals view` over a results folder of real runs (made by `evals run` against the scripted
loopback server): the runs newest first with what each proves, each suite's trend, a run in flight (no summary
yet) and one stopped before its end, and the viewer answering real HTTP GETs on 127.0.0.1."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from evals_cli.history import pages, scan_runs, trends
from evals_cli.history.server import HistoryServer
from tests.helpers import ROOT, run_cli, set_started, write_suite
from tests.scripted_server import ScriptedServer, agent_script, text

ROWS = [{"id": "capital", "input": "capital of France?", "ground_truth": "Paris"},
        {"id": "sum", "input": "math: 2+2?", "ground_truth": "4"}]
GRADERS = {"answer": {"kind": "tool", "function": "contains"}}
RIGHT = {"capital": [text("Paris")], "math": [text("4")]}
HALF = {"capital": [text("Paris")], "math": [text("5")]}
PRICING = {"scripted": {"input": 1.0, "output": 2.0}, "a": {"input": 1.0, "output": 2.0}}


def _run(server: ScriptedServer, tmp: Path, out: Path, script: dict[str, Any], *extra: str,
         rows: list[dict[str, Any]] = ROWS) -> None:
    server.script = agent_script(script)
    suite = write_suite(tmp, rows, base_url=server.url, graders=GRADERS, pricing=PRICING)
    result = run_cli("run", str(suite), "-o", str(out), *extra)
    assert result.returncode in (0, 1), result.stdout + result.stderr


@pytest.fixture
def results(tmp_path: Path, server: ScriptedServer) -> Path:
    """r1 (half right) then r2 (all right), a matrix run of two models, r3 in flight (no summary yet, written just
    now) and r0 stopped two hours ago without a summary."""
    root = tmp_path / "results"
    _run(server, tmp_path, root / "r1", HALF)
    _run(server, tmp_path, root / "r2", RIGHT)
    set_started(root / "r1", "2025-01-01T10:00:00+00:00")
    set_started(root / "r2", "2025-01-02T10:00:00+00:00")
    _run(server, tmp_path, root / "nested" / "m", RIGHT, "--model", "a", "--model", "b")
    for name in ("r3", "r0"):
        shutil.copytree(root / "r1", root / name)
        (root / name / "summary.json").unlink()
    lines = (root / "r3" / "results.jsonl").read_text().splitlines(keepends=True)
    (root / "r3" / "results.jsonl").write_text(lines[0])  # one sample finished so far
    old = time.time() - 2 * 3600
    for path in [root / "r0", *(root / "r0").iterdir()]:
        os.utime(path, (old, old))
    return root


def _row(stdout: str, run: str) -> str:
    [line] = [line for line in stdout.splitlines() if line.rstrip().endswith(f" {run}")]
    return line


def test_history_lists_runs_newest_first_with_their_trend(results: Path) -> None:
    result = run_cli("history", str(results))
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    runs = [line.split()[-1] for line in out.splitlines() if line.rstrip().split()[-1:] and
            line.rstrip().split()[-1] in ("r0", "r1", "r2", "r3", "nested/m")]
    assert runs[0] in ("r3", "nested/m") and runs[-2:] == ["r2", "r1"] and set(runs) == {"r0", "r1", "r2", "r3",
                                                                                          "nested/m"}
    r1, r2 = _row(out, "r1"), _row(out, "r2")
    assert "test-suite" in r1 and "scripted" in r1 and "50% (1/2)" in r1 and "FAILED" in r1
    assert "100% (2/2)" in r2 and "PASSED" in r2
    assert "2025-01-01" in r1 or "2024-12-31" in r1 or "2025-01-02" in r1  # shown in this machine's time zone
    assert "running" in _row(out, "r3") and "50% (1/1)" not in _row(out, "r3")
    assert "stopped" in _row(out, "r0")
    assert "a 100% · b 100%" in _row(out, "nested/m")
    [trend] = [line for line in out.splitlines() if line.strip().startswith("test-suite") and "pts" in line]
    assert "scripted" in trend and "50% → 100%" in trend and "+50 pts" in trend  # r0 and r3 are not in it
    assert "in flight: r3" in out


def test_history_as_json_and_as_a_library(results: Path) -> None:
    result = run_cli("history", str(results), "--json")
    assert result.returncode == 0, result.stderr
    runs = {r["run"]: r for r in json.loads(result.stdout)}
    assert runs["r1"]["pass_rate"] == 0.5 and runs["r1"]["gate"] == "FAILED" and runs["r1"]["exit_code"] == 1
    assert runs["r2"]["gate"] == "PASSED" and runs["r2"]["cost"] == pytest.approx(2 * (10 + 5 * 2) / 1e6)
    assert runs["r3"]["status"] == "running" and runs["r3"]["gate"] == "running" and runs["r3"]["total"] == 1
    assert runs["r3"]["exit_code"] is None and runs["r0"]["status"] == "stopped"
    assert runs["nested/m"]["kind"] == "models" and runs["nested/m"]["models"] == ["a", "b"]
    assert [m["model"] for m in runs["nested/m"]["per_model"]] == ["a", "b"]
    entries = scan_runs(results)
    series = {(t.suite, t.model): [p.run for p in t.points] for t in trends(entries)}
    assert series == {("test-suite", "scripted"): ["r1", "r2"], ("test-suite", "a"): ["nested/m/a"],
                      ("test-suite", "b"): ["nested/m/b"]}


def test_history_of_a_folder_that_is_not_there(tmp_path: Path) -> None:
    result = run_cli("history", str(tmp_path / "nowhere"))
    assert result.returncode == 2 and "no such folder" in result.stderr and "Traceback" not in result.stderr
    empty = run_cli("history", str(tmp_path))
    assert empty.returncode == 0 and "no runs under" in empty.stdout


def _get(url: str) -> tuple[int, str, dict[str, str]]:
    try:
        with urllib.request.urlopen(url, timeout=10) as reply:  # noqa: S310 (loopback)
            return reply.status, reply.read().decode(), dict(reply.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), dict(exc.headers)


def test_the_viewer_serves_the_history_and_every_report(results: Path) -> None:
    server = HistoryServer(results, 0, pages=pages).start()
    try:
        assert server.url.startswith("http://127.0.0.1:")
        status, page, headers = _get(server.url)
        assert status == 200 and headers["Content-Type"].startswith("text/html")
        assert '<meta http-equiv="refresh"' in page and "1 run in flight (r3)" in page  # r3 has no summary yet
        for run in ("r0", "r1", "r2", "r3", "nested/m"):
            assert f'href="/run/{run}/"' in page
        assert 'href="/run/nested/m/a/"' in page and "<svg" in page  # each model's report; the trend
        status, report, _ = _get(server.url + "run/r2/")
        assert status == 200 and "← all runs" in report and "capital" in report and "Gate PASSED" in report
        assert 'http-equiv="refresh"' not in report  # a finished run stays still
        status, flying, _ = _get(server.url + "run/r3/")
        assert status == 200 and 'http-equiv="refresh"' in flying and "In flight" in flying
        status, matrix, _ = _get(server.url + "run/nested/m/")
        assert status == 200 and "2 models side by side" in matrix and 'href="/run/nested/m/b/"' in matrix
        status, model, _ = _get(server.url + "run/nested/m/b/")
        assert status == 200 and "sum" in model
        status, listing, headers = _get(server.url + "runs.json")
        assert status == 200 and headers["Content-Type"] == "application/json"
        assert {r["run"] for r in json.loads(listing)} == {"r0", "r1", "r2", "r3", "nested/m"}
        for missing in ("run/nope/", "run/../../etc/passwd", "run/%2e%2e/", "elsewhere"):
            assert _get(server.url + missing)[0] == 404, missing
        # a run that ends shows at the next load: r3 gets its summary
        shutil.copy(results / "r1" / "summary.json", results / "r3" / "summary.json")
        assert "in flight" not in _get(server.url)[1]
    finally:
        server.shutdown()


def test_evals_view_serves_until_ctrl_c(results: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "evals_cli", "view", str(results), "--port", "0"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "NO_COLOR": "1"})
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "(Ctrl-C stops)" in line, line + (proc.stderr.read() if proc.poll() is not None else "")
        url = line.split(" at ")[1].split()[0]
        status, page, _ = _get(url)
        assert status == 200 and 'href="/run/r1/"' in page
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0 and "stopped" in out and "Traceback" not in err
    with pytest.raises(OSError):  # the port is closed
        urllib.request.urlopen(url, timeout=2)  # noqa: S310


def test_a_port_in_use_is_a_usage_error(results: Path) -> None:
    busy = HistoryServer(results, 0, pages=pages)
    try:
        port = busy.url.rsplit(":", 1)[1].strip("/")
        result = run_cli("view", str(results), "--port", port)
        assert result.returncode == 2 and f"--port {port}: already in use" in result.stderr
    finally:
        busy.httpd.server_close()


def test_a_merged_run_over_several_models_is_finished_and_keeps_its_endpoints(tmp_path: Path,
                                                                             server: ScriptedServer) -> None:
    """`evals merge` writes a matrix.json with no end time: it is a finished run all the same (its verdict is the
    merged one), and each model keeps the endpoint its shards ran on."""
    root = tmp_path / "results"
    rows = [{**row, "id": f"{row['id']}-{i}"} for i in range(6) for row in ROWS]  # both shards get samples
    for shard in ("1/2", "2/2"):
        _run(server, tmp_path, root / f"s{shard[0]}", RIGHT, "--model", f"a@{server.url}", "--model", "b",
             "--shard", shard, rows=rows)
    merged = run_cli("merge", str(root / "s1"), str(root / "s2"), "-o", str(root / "merged"))
    assert merged.returncode == 0, merged.stdout + merged.stderr
    matrix = json.loads((root / "merged" / "matrix.json").read_text())
    assert [(m["model"], m["base_url"]) for m in matrix["models"]] == [("a", server.url), ("b", server.url)]
    [entry] = [e for e in scan_runs(root) if e.rel == "merged"]
    assert (entry.status, entry.gate, entry.exit_code) == ("completed", "PASSED", 0)
    assert [(m.model, m.pass_rate) for m in entry.per_model] == [("a", 1.0), ("b", 1.0)]


def test_the_viewer_serves_nothing_outside_its_folder_nor_to_another_host(results: Path) -> None:
    """A matrix.json naming `../../outside` made the viewer serve a run outside the root, and any Host header was
    answered (a DNS-rebinding page could read every prompt and answer; found in review)."""
    import http.client

    outside = results.parent / "outside"
    shutil.copytree(results / "r2", outside)
    matrix_path = results / "nested" / "m" / "matrix.json"
    matrix = json.loads(matrix_path.read_text(encoding="utf-8"))
    matrix["models"][0]["folder"] = "../../../outside"
    matrix_path.write_text(json.dumps(matrix), encoding="utf-8")
    server = HistoryServer(results, 0, pages=pages).start()
    try:
        host, port = server.url.split("//")[1].rstrip("/").split(":")
        for path, headers, expected in [("/run/nested/m/../../../outside/", {}, 404),
                                        ("/runs.json", {"Host": f"attacker.example:{port}"}, 403),
                                        ("/runs.json", {"Host": f"localhost:{port}"}, 200)]:
            connection = http.client.HTTPConnection(host, int(port), timeout=10)
            connection.putrequest("GET", path, skip_host=bool(headers))
            for name, value in headers.items():
                connection.putheader(name, value)
            connection.endheaders()
            assert connection.getresponse().status == expected, (path, headers)
            connection.close()
    finally:
        server.shutdown()


def test_a_run_whose_summary_is_unreadable_is_not_in_flight(results: Path) -> None:
    (results / "r2" / "summary.json").write_text("[]", encoding="utf-8")
    [entry] = [e for e in scan_runs(results) if e.rel == "r2"]
    assert entry.status == "stopped" and not entry.in_flight and "summary.json is unreadable" in entry.detail
