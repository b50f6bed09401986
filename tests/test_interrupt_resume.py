"""A real `evals run` subprocess interrupted with SIGINT or killed with SIGKILL mid-run keeps every finished
sample; `--resume` completes the run without duplicates and refuses a changed suite or dataset."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from tests.helpers import read_jsonl, run_cli, wait_for_lines, write_suite
from tests.helpers import start_run as start
from tests.scripted_server import Reply, ScriptedServer, agent_script, text

N = 24


def slow_agent(delay: float):  # type: ignore[no-untyped-def]
    return lambda path, body: Reply(text("fine"), delay=delay)


def rows() -> list[dict]:
    return [{"id": f"s{i:02d}", "input": f"question {i}", "ground_truth": "fine"} for i in range(N)]


def suite_for(tmp_path: Path, server: ScriptedServer) -> Path:
    return write_suite(tmp_path, rows(), base_url=server.url, concurrency=2,
                       graders={"answer": {"kind": "tool", "function": "contains"}})


@pytest.mark.slow  # a real process with signals or 20 MB of output: seconds; make test-slow runs it
def test_sigint_stops_scheduling_writes_summary_and_exits_130(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = slow_agent(0.3)
    out = tmp_path / "out"
    proc = start(suite_for(tmp_path, server), out, "--grace", "5")
    wait_for_lines(out / "results.jsonl", 3)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=20)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    lines = read_jsonl(out / "results.jsonl")
    ids = [r["sample_id"] for r in lines]
    assert 3 <= len(ids) < N and len(set(ids)) == len(ids)
    assert all(r["error"] is None for r in lines)  # in-flight samples finished within the grace period
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "interrupted" and summary["total"] == len(lines) and summary["exit_code"] == 130


@pytest.mark.slow  # a real process with signals or 20 MB of output: seconds; make test-slow runs it
def test_second_sigint_exits_at_once(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script({"question 0": [text("fine")], "question 1": [text("fine")]},
                                 default=Reply(text("fine"), delay=8))
    out = tmp_path / "out"
    proc = start(suite_for(tmp_path, server), out, "--grace", "30")
    wait_for_lines(out / "results.jsonl", 2)
    time.sleep(0.3)  # the next two samples are now in flight, each waiting 8 s
    proc.send_signal(signal.SIGINT)
    time.sleep(0.2)
    began = time.monotonic()
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=20)
    assert time.monotonic() - began < 3
    assert proc.returncode == 130
    lines = read_jsonl(out / "results.jsonl")
    assert sorted(r["sample_id"] for r in lines) == ["s00", "s01"]
    assert json.loads((out / "summary.json").read_text())["status"] == "interrupted"


@pytest.mark.slow  # a real process with signals or 20 MB of output: seconds; make test-slow runs it
def test_sigkill_then_resume_completes_without_duplicates(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = slow_agent(0.2)
    out = tmp_path / "out"
    suite = suite_for(tmp_path, server)
    proc = start(suite, out)
    wait_for_lines(out / "results.jsonl", 4)
    proc.kill()
    proc.communicate(timeout=10)
    raw = (out / "results.jsonl").read_text().splitlines()
    finished = []
    for i, line in enumerate(raw):
        try:
            finished.append(json.loads(line)["sample_id"])
        except ValueError:
            assert i == len(raw) - 1  # only the last line may be torn
    assert not (out / "summary.json").exists()
    server.script = slow_agent(0.0)
    before = len(server.requests)
    resumed = run_cli("run", str(suite), "--resume", str(out))
    assert resumed.returncode == 0, resumed.stderr
    lines = read_jsonl(out / "results.jsonl")
    assert sorted(r["sample_id"] for r in lines) == [f"s{i:02d}" for i in range(N)]
    assert len(server.requests) - before == N - len(finished)  # finished samples were not run again
    summary = json.loads((out / "summary.json").read_text())
    assert summary["total"] == N and summary["passed"] == N


def test_resume_repairs_a_torn_last_line(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = slow_agent(0.0)
    out = tmp_path / "out"
    suite = suite_for(tmp_path, server)
    assert run_cli("run", str(suite), "-o", str(out)).returncode == 0
    results = out / "results.jsonl"  # as if killed while writing its sixth line: five whole lines, one torn
    results.write_text("".join(results.read_text().splitlines(keepends=True)[:5]) + '{"sample_id": "s05", "trajec')
    (out / "summary.json").unlink()
    resumed = run_cli("run", str(suite), "--resume", str(out / "results.jsonl"))
    assert resumed.returncode == 0
    assert "torn last line removed" in resumed.stderr
    lines = read_jsonl(out / "results.jsonl")  # parses: the torn line is gone
    assert sorted(r["sample_id"] for r in lines) == [f"s{i:02d}" for i in range(N)]


def test_resume_reruns_errors_only_with_retry_errors(server: ScriptedServer, tmp_path: Path) -> None:
    broken = {"on": True}

    def script(path: str, body: dict) -> Reply:
        if broken["on"] and "question 3" in json.dumps(body):
            return Reply({"error": {"message": "down"}}, status=500)
        return Reply(text("fine"))

    server.script = script
    out = tmp_path / "out"
    suite = write_suite(tmp_path, rows()[:6], base_url=server.url, target={"max_retries": 0},
                        graders={"answer": {"kind": "tool", "function": "contains"}})
    assert run_cli("run", str(suite), "-o", str(out)).returncode == 0  # 1/6 errored: within 0.2
    broken["on"] = False
    again = run_cli("run", str(suite), "--resume", str(out))
    assert again.returncode == 0
    lines = read_jsonl(out / "results.jsonl")
    assert len(lines) == 6 and next(r for r in lines if r["sample_id"] == "s03")["error"] is not None
    retried = run_cli("run", str(suite), "--resume", str(out), "--retry-errors")
    assert retried.returncode == 0
    lines = read_jsonl(out / "results.jsonl")
    assert sorted(r["sample_id"] for r in lines) == [f"s{i:02d}" for i in range(6)]
    assert all(r["error"] is None for r in lines)
    assert json.loads((out / "summary.json").read_text())["errored"] == 0


@pytest.mark.parametrize("change", ["suite", "dataset"])
def test_resume_refuses_a_changed_suite_or_dataset(server: ScriptedServer, tmp_path: Path, change: str) -> None:
    server.script = slow_agent(0.0)
    out = tmp_path / "out"
    suite = suite_for(tmp_path, server)
    assert run_cli("run", str(suite), "-o", str(out), "-n", "2").returncode == 0
    if change == "suite":
        suite.write_text(suite.read_text().replace("function: contains", "function: exact_match"))
    else:
        with (tmp_path / "data.jsonl").open("a") as fh:
            fh.write(json.dumps({"id": "new", "input": "new"}) + "\n")
    result = run_cli("run", str(suite), "--resume", str(out))
    assert result.returncode == 2
    assert f"the {change} changed" in result.stderr and "Traceback" not in result.stderr


def test_resume_ignores_settings_that_do_not_change_results(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = slow_agent(0.0)
    out = tmp_path / "out"
    suite = suite_for(tmp_path, server)
    assert run_cli("run", str(suite), "-o", str(out), "-n", "2").returncode == 0
    suite.write_text(suite.read_text().replace("concurrency: 2", "concurrency: 5").replace("timeout: 10", "timeout: 30"))
    assert run_cli("run", str(suite), "--resume", str(out)).returncode == 0
