"""A run that did not complete never reports a gate verdict, and every run says how much of the dataset it
covered. Interrupted (SIGTERM, a real subprocess: exit 130), aborted (too many errored samples, the spend cap:
exit 3) and killed runs show "Gate not evaluated" with `gate.passed: null` in the console, summary.json, JUnit
and `evals report`; a run over fewer rows than the dataset holds says "ran N of M samples" and why."""

from __future__ import annotations

import json
import re
import signal
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import process_program, read_jsonl, run_cli, wait_for_lines, write_suite
from tests.helpers import start_run as start
from tests.scripted_server import Reply, ScriptedServer, agent_script, text

N = 24
GRADERS = {"answer": {"kind": "tool", "function": "contains"}}


def rows(n: int = N) -> list[dict[str, Any]]:
    return [{"id": f"s{i:02d}", "input": f"question {i}", "ground_truth": "fine",
             "tags": ["even" if i % 2 == 0 else "odd"]} for i in range(n)]


def junit_props(path: Path) -> dict[str, str]:
    root = ET.parse(path).getroot()
    return {p.get("name", ""): p.get("value", "") for p in root.iter("property")}


def assert_no_verdict(text_out: str) -> None:
    assert "Gate PASSED" not in text_out and "Gate FAILED" not in text_out, text_out


# --- item 8: an interrupted run never reports a verdict ------------------------------------------------


@pytest.mark.slow  # a real process with signals or 20 MB of output: seconds; make test-slow runs it
def test_sigterm_run_reports_gate_not_evaluated_everywhere(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = lambda path, body: Reply(text("fine"), delay=0.3)  # every sample would pass the gate
    suite = write_suite(tmp_path, rows(), base_url=server.url, concurrency=2, graders=GRADERS)
    out, junit = tmp_path / "out", tmp_path / "junit.xml"
    proc = start(suite, out, "--grace", "5", "--junit", str(junit))
    wait_for_lines(out / "results.jsonl", 3)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    done = len(read_jsonl(out / "results.jsonl"))
    assert 3 <= done < N

    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "interrupted" and summary["exit_code"] == 130
    assert summary["gate"]["passed"] is None and summary["gate"]["metric"] is None
    assert summary["gate"]["message"] == f"Gate not evaluated: interrupted after {done} of {N} samples"
    assert "SIGTERM" in summary["abort_reason"] and f"--resume {out}" in summary["abort_reason"]
    cov = summary["coverage"]
    assert (cov["dataset_rows"], cov["selected"], cov["run"], cov["results"]) == (N, N, done, done)
    assert cov["reasons"] == [f"interrupted after {done} of {N}"]

    assert_no_verdict(stdout)
    assert f"Gate not evaluated: interrupted after {done} of {N} samples" in stdout
    assert f"ran {done} of {N} samples: interrupted after {done} of {N}" in stdout
    assert f"{process_program()} run {suite} --resume {out}" in stderr  # the command that finishes the run

    props = junit_props(junit)
    assert props["gate.passed"] == "null" and props["status"] == "interrupted"
    assert props["gate.message"].startswith("Gate not evaluated: interrupted after")

    report = run_cli("report", str(out))
    assert report.returncode == 0, report.stderr
    assert_no_verdict(report.stdout)
    assert f"Gate not evaluated: interrupted after {done} of {N} samples" in report.stdout
    assert f"ran {done} of {N} samples" in report.stdout


@pytest.mark.slow  # a real process with signals or 20 MB of output: seconds; make test-slow runs it
def test_report_on_a_killed_run_gives_no_verdict(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = lambda path, body: Reply(text("fine"), delay=0.2)
    suite = write_suite(tmp_path, rows(), base_url=server.url, concurrency=2, graders=GRADERS)
    out = tmp_path / "out"
    proc = start(suite, out)
    wait_for_lines(out / "results.jsonl", 3)
    proc.kill()
    proc.communicate(timeout=10)
    assert not (out / "summary.json").exists()
    report = run_cli("report", str(out))
    assert report.returncode == 0, report.stderr
    assert_no_verdict(report.stdout)
    assert "Gate not evaluated: interrupted after" in report.stdout
    assert "--resume" in report.stdout and "no summary.json" in report.stderr


def test_report_withholds_the_verdict_an_older_summary_wrote_for_an_incomplete_run(
        server: ScriptedServer, tmp_path: Path) -> None:
    """summary.json files written before this fix carry `gate.passed: true` for interrupted runs."""
    server.script = lambda path, body: text("fine")
    suite = write_suite(tmp_path, rows(4), base_url=server.url, graders=GRADERS)
    out = tmp_path / "out"
    assert run_cli("run", str(suite), "-o", str(out)).returncode == 0
    path = out / "summary.json"
    old = json.loads(path.read_text())
    assert old["gate"]["passed"] is True
    old.update(status="interrupted", exit_code=130, coverage=None)
    path.write_text(json.dumps(old))
    report = run_cli("report", str(out))
    assert_no_verdict(report.stdout)
    assert "Gate not evaluated: interrupted after 4 samples" in report.stdout


# --- item 11: a run that ends with exit 3 never reports a verdict ----------------------------------------


def test_errored_samples_past_the_rate_give_no_verdict(server: ScriptedServer, tmp_path: Path) -> None:
    def script(path: str, body: dict[str, Any]) -> Reply:
        if any(f"question {i}" in json.dumps(body) for i in (1, 2, 3)):
            return Reply({"error": {"message": "timed out upstream"}}, status=500)
        return Reply(text("fine"))

    server.script = script
    suite = write_suite(tmp_path, rows(5), base_url=server.url, graders=GRADERS,
                        gate={"kind": "weighted_average", "aggregation": "avg_score", "op": "gte", "value": 0.75})
    out, junit = tmp_path / "out", tmp_path / "junit.xml"
    result = run_cli("run", str(suite), "-o", str(out), "-c", "1", "--junit", str(junit))
    assert result.returncode == 3, result.stderr
    assert_no_verdict(result.stdout)  # the two survivors score 1.000 >= 0.75: that is not a verdict
    expected = "Gate not evaluated: run aborted after 5 of 5 samples (3/5 samples errored, more than --max-error-rate 0.2)"
    # the terminal says the cause on the abort line and does not repeat it on the gate line (issue 29 item 4)
    assert "Run aborted: 3/5 samples errored, more than --max-error-rate 0.2\n" \
        "Gate not evaluated: run aborted after 5 of 5 samples\n" in result.stdout
    assert "3/5 samples errored" in result.stderr
    assert f"to retry the errored samples: evals run {suite} --resume {out} --retry-errors" in result.stderr

    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "aborted" and summary["exit_code"] == 3
    assert summary["gate"]["passed"] is None and summary["gate"]["metric"] is None
    assert summary["gate"]["message"] == expected
    assert summary["coverage"]["run"] == summary["coverage"]["dataset_rows"] == 5  # all ran; errors count

    props = junit_props(junit)
    assert props["gate.passed"] == "null" and props["status"] == "aborted" and props["gate.message"] == expected

    report = run_cli("report", str(out))
    assert_no_verdict(report.stdout)
    assert "Gate not evaluated: run aborted after 5 of 5 samples\n" in report.stdout
    assert report.stdout.count("3/5 samples errored, more than --max-error-rate 0.2") == 1


def test_missing_grades_past_the_rate_give_no_verdict(server: ScriptedServer, tmp_path: Path) -> None:
    """A judge with weight 0 that never gives a verdict: every sample passes on `answer`, half the grades are
    missing; exit 3 and no verdict, not a pass on the grades that happened to exist."""
    data = [{"id": f"s{i}", "input": "db host?", "ground_truth": "localhost"} for i in range(4)]
    server.script = agent_script({"host": [text("localhost")]}, judge=lambda b: text("no idea"))
    suite = write_suite(tmp_path, data, base_url=server.url, graders={
        "answer": {"kind": "tool", "function": "contains"},
        "judge": {"kind": "model_judge", "prompt": "{{ submission }}"}},
        gate={"weights": {"answer": 1.0, "judge": 0.0}, "value": 0.5})
    out = tmp_path / "out"
    result = run_cli("run", str(suite), "-o", str(out))
    assert result.returncode == 3, result.stdout + result.stderr
    assert_no_verdict(result.stdout)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "aborted" and summary["gate"]["passed"] is None
    assert summary["gate"]["message"].startswith("Gate not evaluated: run aborted after 4 of 4 samples (4/8 grades "
                                                 "are missing")


def test_spend_cap_abort_gives_no_verdict_and_says_how_far_it_got(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = lambda path, body: text("fine")
    suite = write_suite(tmp_path, rows(), base_url=server.url, graders=GRADERS, concurrency=1,
                        pricing={"scripted": {"input": 2.0, "output": 4.0}}, max_cost=0.0001)
    out = tmp_path / "out"
    result = run_cli("run", str(suite), "-o", str(out))
    assert result.returncode == 3, result.stderr
    assert_no_verdict(result.stdout)
    summary = json.loads((out / "summary.json").read_text())
    done = summary["total"]
    assert 0 < done < N
    assert summary["status"] == "aborted" and summary["gate"]["passed"] is None
    assert summary["gate"]["message"].startswith(f"Gate not evaluated: run aborted after {done} of {N} samples "
                                                 "(spend cap max_cost")
    assert summary["coverage"]["reasons"] == [f"aborted after {done} of {N}"]
    assert f"ran {done} of {N} samples: aborted after {done} of {N}" in result.stdout


def test_merge_of_an_interrupted_shard_gives_no_verdict(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = lambda path, body: text("fine")
    suite = write_suite(tmp_path, rows(8), base_url=server.url, graders=GRADERS)
    a, b = tmp_path / "a", tmp_path / "b"
    assert run_cli("run", str(suite), "-o", str(a), "--shard", "1/2").returncode == 0
    assert run_cli("run", str(suite), "-o", str(b), "--shard", "2/2").returncode == 0
    summary_b = json.loads((b / "summary.json").read_text())
    summary_b.update(status="interrupted", exit_code=130)  # as if shard 2 had been stopped
    (b / "summary.json").write_text(json.dumps(summary_b))
    merged = run_cli("merge", str(a), str(b), "-o", str(tmp_path / "m"))
    assert merged.returncode == 3, merged.stderr
    assert_no_verdict(merged.stdout)
    summary = json.loads((tmp_path / "m" / "summary.json").read_text())
    assert summary["status"] == "aborted" and summary["gate"]["passed"] is None
    assert str(b) in summary["abort_reason"] and "interrupted" in summary["abort_reason"]


# --- item 7 (run level): "N of M samples" and why ------------------------------------------------------


def test_full_run_has_full_coverage_and_no_partial_line(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = lambda path, body: text("fine")
    suite = write_suite(tmp_path, rows(6), base_url=server.url, graders=GRADERS)
    out = tmp_path / "out"
    result = run_cli("run", str(suite), "-o", str(out))
    assert result.returncode == 0, result.stderr
    cov = json.loads((out / "summary.json").read_text())["coverage"]
    assert (cov["dataset_rows"], cov["selected"], cov["run"], cov["reasons"]) == (6, 6, 6, [])
    assert "ran " not in result.stdout and "Gate PASSED" in result.stdout


def test_max_samples_tag_and_shard_say_n_of_m_and_why(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = lambda path, body: text("fine")
    suite = write_suite(tmp_path, rows(), base_url=server.url, graders=GRADERS)

    out = tmp_path / "n"
    result = run_cli("run", str(suite), "-o", str(out), "-n", "5")
    assert result.returncode == 0, result.stderr
    assert f"ran 5 of {N} samples: max samples (5) kept 5" in result.stdout
    cov = json.loads((out / "summary.json").read_text())["coverage"]
    assert (cov["dataset_rows"], cov["limited"], cov["selected"], cov["run"]) == (N, 5, 5, 5)

    out = tmp_path / "tag"
    result = run_cli("run", str(suite), "-o", str(out), "--tag", "odd", "-n", "4")
    assert result.returncode == 0, result.stderr
    assert f"ran 4 of {N} samples: tag filter (odd) kept {N // 2}; max samples (4) kept 4" in result.stdout
    cov = json.loads((out / "summary.json").read_text())["coverage"]
    assert (cov["tagged"], cov["limited"], cov["run"], cov["tags"]) == (N // 2, 4, 4, ["odd"])

    out = tmp_path / "shard"
    result = run_cli("run", str(suite), "-o", str(out), "--shard", "1/3", "-n", "12")
    assert result.returncode == 0, result.stderr
    summary = json.loads((out / "summary.json").read_text())
    cov = summary["coverage"]
    ran = len(read_jsonl(out / "results.jsonl"))
    # -n picks the first 12 rows, the shard runs its part of them: the plan and the run agree
    assert cov["selected"] == cov["run"] == summary["total"] == ran and ran < 12
    assert re.search(rf"ran {ran} of {N} samples: max samples \(12\) kept 12; shard 1/3 holds {ran}", result.stdout)


def test_repeats_count_samples_once(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = lambda path, body: text("fine")
    suite = write_suite(tmp_path, rows(6), base_url=server.url, graders=GRADERS)
    out = tmp_path / "out"
    result = run_cli("run", str(suite), "-o", str(out), "-n", "2", "--repeats", "3")
    assert result.returncode == 0, result.stderr
    cov = json.loads((out / "summary.json").read_text())["coverage"]
    assert (cov["run"], cov["results"], cov["expected_results"]) == (2, 6, 6)
    assert "ran 2 of 6 samples: max samples (2) kept 2" in result.stdout
