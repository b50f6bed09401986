"""Issue 11 held out: the verdict rules exercised with other data than each item's own tests (per-turn samples
whose judge fails on one turn, ...). Each test here failed on main before its fix: a pass, a count or an exit
code that was false."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evals_cli.targets.common import answer_stop_reason
from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import Reply, ScriptedServer, agent_script, call, judge_score, text


def _judge_fails_on(marker: str) -> Any:
    """A judge that answers 10/10, except for a transcript holding `marker` (its endpoint fails: a timeout)."""

    def judge(body: dict[str, Any]) -> Any:
        if marker in json.dumps(body):
            return Reply({"error": {"message": "judge timed out"}}, status=500)
        return judge_score(10)

    return judge


def test_a_per_turn_judge_failing_on_one_turn_leaves_the_sample_incomplete(server: ScriptedServer,
                                                                         tmp_path: Path) -> None:
    """Item 12 on a per-turn sample: the grade was the mean of the turns that were graded, so a turn whose judge
    timed out (the turn that went wrong) vanished and the sample passed 1.00, exit 0, '0 errored'."""
    rows = [{"id": "conv", "input": ["first: host?", "second: port?"], "ground_truth": ["localhost", "5432"]},
            {"id": "fine", "input": ["first: host?", "again: host?"], "ground_truth": ["localhost", "localhost"]}]
    server.script = agent_script({"first": [text("localhost")], "second": [text("made-up port 80")],
                                  "again": [text("still localhost")]}, judge=_judge_fails_on("made-up port 80"))
    graders = {"quality": {"kind": "model_judge", "rubric": "builtin:task_completion", "scale": "1-10"}}
    suite = write_suite(tmp_path, rows, base_url=server.url, graders=graders,
                        judge={"base_url": server.url, "model": "judge", "api_key": "sk-test", "max_retries": 0})
    out = tmp_path / "out"
    result = run_cli("run", str(suite), "-o", str(out), "--max-error-rate", "0.5")
    lines = {line["sample_id"]: line for line in read_jsonl(out / "results.jsonl")}
    conv = lines["conv"]
    assert conv["passed"] is None and conv["score"] is None and conv["error"]["category"] == "judge"
    grade = conv["grades"]["quality"]
    assert grade["score"] is None and "1 of 2 turn(s) could not be graded" in grade["error"]
    assert [t["score"] for t in grade["per_turn_grades"]] == [1.0, None]  # the turns stay in the letta shape
    assert lines["fine"]["passed"] is True
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["passed"], summary["failed"], summary["errored"]) == (1, 0, 1)
    assert "1 passed, 0 failed, 1 errored" in result.stdout


def test_with_repeats_the_counts_line_counts_runs_not_samples(server: ScriptedServer, tmp_path: Path) -> None:
    """Item 7's counts with repeats: 3 samples run twice printed '6 samples: 6 passed' beside 'ran 3 of 6
    samples', two different numbers of samples for one run."""
    rows = [{"id": f"s{i}", "input": f"q{i}", "ground_truth": "4"} for i in range(6)]
    server.script = agent_script({f"q{i}": [text("4")] for i in range(6)})
    suite = write_suite(tmp_path, rows, base_url=server.url, graders={"answer": {"kind": "tool", "function": "contains"}})
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"), "--repeats", "2", "-n", "3")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "6 sample runs (3 samples × 2 repeats): 6 passed, 0 failed, 0 errored" in result.stdout
    assert "ran 3 of 6 samples: max samples (3) kept 3" in result.stdout
    report = run_cli("report", str(tmp_path / "out"))
    assert "6 sample runs (3 samples × 2 repeats): 6 passed" in report.stdout


def test_a_tool_whose_cases_do_not_match_never_answers_a_silent_empty_string(server: ScriptedServer,
                                                                            tmp_path: Path) -> None:
    """Item 3 with a suite tool that has cases and no fallback: a call outside the cases was answered "" (no
    error, nothing configured), the answer the issue says a mocked tool must never give silently."""
    tools = {"read_file": {"description": "Read a file", "parameters": {"path": "File path"},
                           "cases": [{"when": {"path": ".env"}, "returns": "DB_HOST=localhost"}]}}
    rows = [{"id": "other", "input": "other file?", "ground_truth": "localhost"}]
    server.script = agent_script({"other": [call("read_file", {"path": "config.yaml"}), text("localhost")]})
    suite = write_suite(tmp_path, rows, base_url=server.url, tools=tools,
                        graders={"answer": {"kind": "tool", "function": "contains"}})
    assert run_cli("validate", str(suite)).returncode == 0  # cases are a configured return: the suite is valid
    run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    [line] = read_jsonl(tmp_path / "out" / "results.jsonl")
    [tool_call] = line["trajectory"]["turns"][0]["steps"][0]["tool_calls"]
    assert tool_call["is_error"] is True and "no mocked result for read_file" in tool_call["result"]


@pytest.mark.parametrize("answer", [
    'Let me check the forecast: {"name": "get_forecast", "arguments": {"city": "Paris"}}',
    '[TOOL_CALLS] [{"name": "get_forecast", "arguments": {"city": "Paris"}}]',
    '<|python_tag|>{"name": "get_forecast", "parameters": {"city": "Paris"}}',
])
def test_a_tool_call_written_as_text_in_other_model_formats_is_unparsed(answer: str) -> None:
    """Item 13 with other models' formats: prose and a call on one line (no newline before the JSON), Mistral's
    [TOOL_CALLS] and Llama's <|python_tag|> left as text all ended as `completed`: no tool ran, no mark."""
    assert answer_stop_reason(answer, {"get_forecast"}) == "unparsed_tool_call"
    assert answer_stop_reason('The example {"name": "get_forecast", "arguments": {}} is from the docs.',
                              {"get_forecast"}) == "completed"


def test_a_panel_judge_that_times_out_never_drops_the_strict_verdict(server: ScriptedServer, tmp_path: Path) -> None:
    """Item 12 with a judge panel: the strict judge (2/10) timed out, the lenient one (9/10) stayed, and the
    panel's mean became 0.9: a pass made by a timeout. Every configured verdict must be there, or the grade
    is missing and the sample incomplete."""

    def judge(body: dict[str, Any]) -> Any:
        if body["model"] == "strict":
            return Reply({"error": {"message": "timed out"}}, status=504)
        return judge_score(9)

    rows = [{"id": "guess", "input": "db host?", "ground_truth": "localhost"}]
    server.script = agent_script({"db host": [text("probably localhost")]}, judge=judge)
    spec = {"kind": "model_judge", "prompt": "Q: {{ input }}\nA: {{ submission }}",
            "panel": [{"model": "strict"}, {"model": "lenient"}]}
    suite = write_suite(tmp_path, rows, base_url=server.url, graders={"judge": spec},
                        judge={"base_url": server.url, "model": "strict", "api_key": "sk-test", "max_retries": 0})
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    [line] = read_jsonl(tmp_path / "out" / "results.jsonl")
    grade = line["grades"]["judge"]
    assert grade["score"] is None and "1 of 2 verdicts missing" in grade["error"]
    assert [v["judge"] for v in grade["metadata"]["verdicts"]] == ["lenient"]  # what came is kept
    assert line["passed"] is None and line["error"]["category"] == "judge"
    assert result.returncode == 3 and "Gate PASSED" not in result.stdout


def test_a_sample_that_fails_a_required_grader_stays_failed_when_its_judge_times_out(server: ScriptedServer,
                                                                                    tmp_path: Path) -> None:
    """Items 1 and 12 together: 2 of 10 samples call the forbidden tool and their judge times out. They were
    counted as incomplete (errored, 20%: within --max-error-rate), so they left pass_rate's count and the
    averages: 'sample pass rate (8 of 8) = 1.000 ≥ 0.9', Gate PASSED, exit 0, tools_avoided avg 1.00. A sample
    that fails whatever the missing grade says is failed."""
    rows = [{"id": f"s{i}", "input": f"q{i} sum?", "ground_truth": "4", "forbidden_tools": ["read_file"]}
            for i in range(10)]
    replies = {f"q{i} sum?": [call("read_file", {"path": ".env"}), text("4 (read)")] if i >= 8 else [text("4")]
               for i in range(10)}
    server.script = agent_script(replies, judge=_judge_fails_on("4 (read)"))
    graders = {"answer": {"kind": "tool", "function": "contains"}, "avoided": {"kind": "tools_avoided"},
               "quality": {"kind": "model_judge", "rubric": "builtin:task_completion", "scale": "1-10"}}
    gate = {"kind": "weighted_average", "aggregation": "pass_rate", "op": "gte", "value": 0.9, "pass_value": 0.7}
    suite = write_suite(tmp_path, rows, base_url=server.url, graders=graders, gate=gate,
                        judge={"base_url": server.url, "model": "judge", "api_key": "sk-test", "max_retries": 0})
    out = tmp_path / "out"
    result = run_cli("run", str(suite), "-o", str(out))
    lines = {line["sample_id"]: line for line in read_jsonl(out / "results.jsonl")}
    for sample in ("s8", "s9"):
        assert lines[sample]["passed"] is False and lines[sample]["error"] is None
        assert [(f["rule"], f["grader"]) for f in lines[sample]["failed_by"]] == [("required", "avoided")]
        assert lines[sample]["grades"]["quality"]["score"] is None  # the missing grade stays missing
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["passed"], summary["failed"], summary["errored"]) == (8, 2, 0)
    assert summary["graders"]["avoided"]["avg_score"] == 0.8
    assert summary["gate"]["passed"] is False and result.returncode == 1
    assert "sample pass rate (8 of 10 samples passed) = 0.800 not ≥ 0.9" in result.stdout


def test_no_judge_with_a_gate_weighing_only_the_judge_cannot_decide(server: ScriptedServer, tmp_path: Path) -> None:
    """--no-judge with `weights: {quality: 1}`: the gate fell back to equal weights over the graders the suite
    gave no weight and printed 'Gate PASSED: weighted avg_score (answer×1)', exit 0, a verdict the suite never
    defined. Like a simple gate on a skipped judge, it cannot decide (exit 3)."""
    rows = [{"id": "host", "input": "db host?", "ground_truth": "localhost"}]
    server.script = agent_script({"db host": [text("localhost")]})
    graders = {"answer": {"kind": "tool", "function": "contains"},
               "quality": {"kind": "model_judge", "rubric": "builtin:task_completion"}}
    gate = {"kind": "weighted_average", "weights": {"quality": 1}, "aggregation": "avg_score", "op": "gte", "value": 0.8}
    suite = write_suite(tmp_path, rows, base_url=server.url, graders=graders, gate=gate)
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"), "--no-judge")
    assert result.returncode == 3 and "Gate PASSED" not in result.stdout
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["gate"]["passed"] is None
    assert "none of the graders its weights name ran (quality)" in summary["gate"]["message"]


def test_report_on_a_killed_run_with_repeats_counts_runs(server: ScriptedServer, tmp_path: Path) -> None:
    """`evals report` on a run killed before its summary (repeats: 2): '6 samples: 6 passed' and 'interrupted
    after 6 samples' for 3 samples run twice, and no pass@k though the table showed 2/2."""
    rows = [{"id": f"s{i}", "input": f"q{i}", "ground_truth": "4"} for i in range(3)]
    server.script = agent_script({f"q{i}": [text("4")] for i in range(3)})
    suite = write_suite(tmp_path, rows, base_url=server.url, repeats=2,
                        graders={"answer": {"kind": "tool", "function": "contains"}})
    out = tmp_path / "out"
    assert run_cli("run", str(suite), "-o", str(out)).returncode == 0
    (out / "summary.json").unlink()  # killed before the summary was written
    report = run_cli("report", str(out))
    assert "6 sample runs: 6 passed, 0 failed, 0 errored" in report.stdout
    assert "reliability over 2 repeats: pass@2 1.00" in report.stdout
    assert "Gate not evaluated: interrupted after 6 sample runs" in report.stdout
