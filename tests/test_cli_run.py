"""`evals run` end to end: the real CLI in a subprocess against the scripted server."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import Reply, ScriptedServer, agent_script, call, judge_score, text

ROWS = [
    {"id": "host", "input": "db host?", "ground_truth": "localhost", "expected_tool_order": ["read_file"],
     "tags": ["tools"]},
    {"id": "math", "input": "math: 2+2?", "ground_truth": "4", "forbidden_tools": ["read_file", "list_files"],
     "tags": ["negative"]},
]
GOOD = {"host": [call("read_file", {"path": ".env"}), text("The host is localhost.")], "math": [text("4")]}
BAD = {"host": [text("I think it is db.internal")], "math": [call("read_file", {"path": "calc"}), text("5")]}


def test_gate_passes_exit_0_with_table_results_and_summary(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script(GOOD)
    suite = write_suite(tmp_path, ROWS, base_url=server.url)
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    assert "Gate PASSED" in result.stdout
    assert "host" in result.stdout and "read_file" in result.stdout and "✓" in result.stdout
    lines = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert sorted(r["sample_id"] for r in lines) == ["host", "math"]
    assert all(r["schema_version"] == 2 for r in lines)  # 2: letta-evals per-turn shape, n/a, failed_by
    host = next(r for r in lines if r["sample_id"] == "host")
    assert host["grades"]["order"]["score"] == 1.0 and host["passed"] is True
    assert host["trajectory"]["turns"][0]["steps"][0]["tool_calls"][0]["name"] == "read_file"
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["gate"]["passed"] is True and summary["exit_code"] == 0 and summary["total"] == 2


def test_gate_fails_exit_1_and_says_why(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script(BAD)
    suite = write_suite(tmp_path, ROWS, base_url=server.url)
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    assert result.returncode == 1, result.stderr
    assert "Gate FAILED" in result.stdout
    lines = {r["sample_id"]: r for r in read_jsonl(tmp_path / "out" / "results.jsonl")}
    assert lines["math"]["grades"]["avoided"]["score"] == 0.0
    assert "read_file" in lines["math"]["grades"]["avoided"]["rationale"]
    assert lines["host"]["grades"]["order"]["score"] == 0.0


def test_invalid_suite_exit_2_without_traceback(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, ROWS, concurency=3)
    result = run_cli("run", str(suite))
    assert result.returncode == 2
    assert "did you mean 'concurrency'" in result.stderr
    assert "suite.yaml:" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_invalid_dataset_row_exit_2_names_file_and_line(tmp_path: Path) -> None:
    rows = [*ROWS, {"id": "bad", "input": ["a", "b"], "ground_truth": ["x"]}]
    suite = write_suite(tmp_path, rows)
    result = run_cli("run", str(suite))
    assert result.returncode == 2
    assert "data.jsonl:3" in result.stderr and "bad" in result.stderr
    assert "Traceback" not in result.stderr


def test_unreachable_endpoint_exit_3_with_one_message(tmp_path: Path) -> None:
    rows = [{"id": f"s{i}", "input": "db host?", "ground_truth": "x"} for i in range(6)]
    suite = write_suite(tmp_path, rows, base_url="http://127.0.0.1:9/v1")
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    assert result.returncode == 3
    assert result.stderr.count("cannot reach agent endpoint") == 1
    assert "EVAL_AGENT_BASE_URL" in result.stderr
    assert "Traceback" not in result.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["status"] == "aborted" and summary["exit_code"] == 3


def test_model_not_found_is_fatal_once(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = lambda path, body: Reply({"error": {"message": "model 'nope' not found"}}, status=404)
    suite = write_suite(tmp_path, ROWS, base_url=server.url)
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    assert result.returncode == 3
    assert "404" in result.stderr and "model" in result.stderr
    assert len(server.requests) <= 2  # concurrency 2: no more samples scheduled after the first failure


def test_errored_samples_are_excluded_not_zero(server: ScriptedServer, tmp_path: Path) -> None:
    rows = [{"id": f"ok{i}", "input": f"math {i}", "ground_truth": "4"} for i in range(9)]
    rows.append({"id": "broken", "input": "explode", "ground_truth": "4"})
    server.script = agent_script({"math": [text("4")],
                                  "explode": [Reply({"error": {"message": "boom"}}, status=500)]})
    suite = write_suite(tmp_path, rows, base_url=server.url)
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    assert result.returncode == 0, result.stdout + result.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["errored"] == 1 and summary["errors_by_category"] == {"endpoint": 1}
    assert summary["graders"]["answer"]["avg_score"] == 1.0 and summary["graders"]["answer"]["count"] == 9
    broken = next(r for r in read_jsonl(tmp_path / "out" / "results.jsonl") if r["sample_id"] == "broken")
    assert broken["error"]["category"] == "endpoint" and broken["score"] is None and broken["grades"] == {}
    assert "error: endpoint" in result.stdout


def test_too_many_errors_exit_3(server: ScriptedServer, tmp_path: Path) -> None:
    rows = [{"id": "ok", "input": "math", "ground_truth": "4"}, {"id": "b1", "input": "explode", "ground_truth": "4"}]
    server.script = agent_script({"math": [text("4")], "explode": [Reply({"error": {"message": "x"}}, status=500)]})
    suite = write_suite(tmp_path, rows, base_url=server.url)
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    assert result.returncode == 3
    assert "--max-error-rate" in result.stderr
    assert run_cli("run", str(suite), "-o", str(tmp_path / "out2"), "--max-error-rate", "0.6").returncode == 0


def test_sample_tags_filter_and_max_samples(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script(GOOD)
    suite = write_suite(tmp_path, ROWS, base_url=server.url, sample_tags=["negative"])
    assert run_cli("run", str(suite), "-o", str(tmp_path / "a")).returncode == 0
    assert [r["sample_id"] for r in read_jsonl(tmp_path / "a" / "results.jsonl")] == ["math"]
    assert all("db host" not in json.dumps(r["body"]) for r in server.requests)
    assert run_cli("run", str(suite), "-o", str(tmp_path / "b"), "--tag", "tools").returncode == 0
    assert [r["sample_id"] for r in read_jsonl(tmp_path / "b" / "results.jsonl")] == ["host"]
    plain = write_suite(tmp_path, ROWS, base_url=server.url)
    assert run_cli("run", str(plain), "-o", str(tmp_path / "c"), "-n", "1").returncode in (0, 1)
    assert len(read_jsonl(tmp_path / "c" / "results.jsonl")) == 1


def test_per_turn_grading_end_to_end(server: ScriptedServer, tmp_path: Path) -> None:
    rows = [{"id": "conv", "input": ["first: host?", "second: port?", "third: user?"],
             "ground_truth": ["localhost", "5432", "admin"]}]
    server.script = agent_script({"first": [call("read_file", {"path": ".env"}), text("localhost")],
                                  "second": [text("5432")], "third": [text("root")]})
    suite = write_suite(tmp_path, rows, base_url=server.url,
                        graders={"answer": {"kind": "tool", "function": "contains"}})
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    assert result.returncode == 1
    [line] = read_jsonl(tmp_path / "out" / "results.jsonl")
    grade = line["grades"]["answer"]
    # schema 2: letta-evals' shape (per_turn_grades, 0-based turn, metadata.turns_passed/turns_total)
    assert grade["metadata"]["turns_passed"] == 2 and grade["metadata"]["turns_total"] == 3
    assert abs(grade["score"] - 2 / 3) < 1e-9
    assert [t["turn"] for t in grade["per_turn_grades"]] == [0, 1, 2]
    assert [t["score"] for t in grade["per_turn_grades"]] == [1.0, 1.0, 0.0]
    assert [t["submission"] for t in grade["per_turn_grades"]] == ["localhost", "5432", "root"]
    assert [t["ground_truth"] for t in grade["per_turn_grades"]] == ["localhost", "5432", "admin"]
    assert "0.67 (2/3)" in result.stdout


def test_judge_and_no_judge(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script(GOOD, judge=lambda body: judge_score(9, "correct"))
    (tmp_path / "rubric.j2").write_text("Q: {{ input }}\nA: {{ submission }}\nRef: {{ ground_truth }}")
    graders = {"answer": {"kind": "tool", "function": "contains"},
               "judge": {"kind": "model_judge", "rubric": "rubric.j2"}}
    suite = write_suite(tmp_path, ROWS, base_url=server.url, graders=graders,
                        gate={"weights": {"answer": 1, "judge": 1}})
    result = run_cli("run", str(suite), "-o", str(tmp_path / "with"))
    assert result.returncode == 0, result.stderr
    lines = read_jsonl(tmp_path / "with" / "results.jsonl")
    assert all(r["grades"]["judge"]["score"] == 0.9 for r in lines)
    assert len(server.judge_requests()) == 2
    assert "judge" in result.stdout and "tokens: agent" in result.stdout
    before = len(server.judge_requests())
    fast = run_cli("run", str(suite), "-o", str(tmp_path / "fast"), "--no-judge")
    assert fast.returncode == 0
    assert len(server.judge_requests()) == before
    assert all("judge" not in r["grades"] for r in read_jsonl(tmp_path / "fast" / "results.jsonl"))


def test_report_rerenders_a_finished_run(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script(GOOD)
    suite = write_suite(tmp_path, ROWS, base_url=server.url)
    run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    report = run_cli("report", str(tmp_path / "out" / "results.jsonl"))
    assert report.returncode == 0
    assert "Gate PASSED" in report.stdout and "host" in report.stdout and "math" in report.stdout


def test_report_of_a_killed_run_with_a_torn_line(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script(GOOD)
    suite = write_suite(tmp_path, ROWS, base_url=server.url)
    run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    (tmp_path / "out" / "summary.json").unlink()
    with (tmp_path / "out" / "results.jsonl").open("a") as fh:
        fh.write('{"sample_id": "torn", "traj')
    report = run_cli("report", str(tmp_path / "out"))
    assert report.returncode == 0
    assert "torn last line" in report.stderr and "host" in report.stdout


def test_quiet_prints_only_the_verdict(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script(GOOD)
    suite = write_suite(tmp_path, ROWS, base_url=server.url)
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"), "-q")
    assert result.returncode == 0
    assert result.stdout.strip().startswith("Gate PASSED") and "sample" not in result.stdout


def test_env_vars_configure_the_endpoint(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script(GOOD)
    suite = write_suite(tmp_path, ROWS, base_url="${EVAL_AGENT_BASE_URL:-http://127.0.0.1:9/v1}")
    text_ = suite.read_text().replace("model: scripted", "model: ${EVAL_AGENT_MODEL}")
    suite.write_text(text_)
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"),
                     env={"EVAL_AGENT_BASE_URL": server.url, "EVAL_AGENT_MODEL": "from-env"})
    assert result.returncode == 0, result.stderr
    assert server.requests[0]["body"]["model"] == "from-env"
    missing = run_cli("run", str(suite), env={"EVAL_AGENT_BASE_URL": server.url})
    assert missing.returncode == 2 and "EVAL_AGENT_MODEL is not set" in missing.stderr


def test_api_key_never_written_to_outputs(server: ScriptedServer, tmp_path: Path) -> None:
    sentinel = "sk-SENTINEL-4242"
    server.script = agent_script(GOOD)
    suite = write_suite(tmp_path, ROWS, base_url=server.url)
    suite.write_text(suite.read_text().replace("api_key: sk-test", "api_key: ${EVAL_AGENT_API_KEY}"))
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"), "--record", str(tmp_path / "rec.jsonl"),
                     env={"EVAL_AGENT_API_KEY": sentinel})
    assert result.returncode == 0
    assert server.requests[0]["headers"]["authorization"] == f"Bearer {sentinel}"
    for path in [*(tmp_path / "out").iterdir(), tmp_path / "rec.jsonl"]:
        assert sentinel not in path.read_text(), path
    assert sentinel not in result.stdout + result.stderr
