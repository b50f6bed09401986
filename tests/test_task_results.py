"""TaskResult JSONL export: the shape the Agent Framework lab tools read, one record per sample."""

from __future__ import annotations

import json
from pathlib import Path

from evals_cli.exporters import task_result, write_task_results
from evals_cli.output.files import read_results
from tests.run_factory import make_result, scripted_run, tool_call
from tests.scripted_server import ScriptedServer

KEYS = {"task_id", "task", "prediction", "evaluation", "runtime_seconds", "error"}


def test_a_graded_sample_has_every_field_from_the_run() -> None:
    calls = [tool_call("read_file", {"path": ".env"}), tool_call("list_files"), tool_call("read_file", {"path": "b"})]
    result = make_result("host", {"answer": 1.0, "order": 0.5}, passed=True, answer="It is localhost.",
                         user="Which host?", calls=calls, latency=1.25)
    record = task_result(result)
    assert set(record) == KEYS
    assert record["task_id"] == "host"
    assert record["task"] == {"task_id": "host", "question": "Which host?"}
    assert record["prediction"] == {"prediction": "It is localhost."}
    evaluation = record["evaluation"]
    assert evaluation["is_correct"] is True and evaluation["score"] == 0.75
    assert evaluation["details"] == {
        "scores": {"answer": 1.0, "order": 0.5},
        "tools_used": ["read_file", "list_files"],
        "tool_call_order": ["read_file", "list_files", "read_file"],
        "steps": 2,
    }
    assert record["runtime_seconds"] == 1.25 and record["error"] is None


def test_a_failed_sample_is_incorrect_but_keeps_its_score() -> None:
    record = task_result(make_result("math", {"answer": 0.0, "avoided": 1.0}, passed=False))
    assert record["evaluation"]["is_correct"] is False
    assert record["evaluation"]["score"] == 0.5
    assert "error" not in record["evaluation"]["details"]


def test_an_errored_sample_has_no_score_and_says_why() -> None:
    result = make_result("broken", {}, error=("endpoint", "HTTP 500 from the agent endpoint"))
    record = task_result(result)
    assert record["evaluation"]["is_correct"] is False
    assert record["evaluation"]["score"] is None  # not judged: never 0
    assert record["evaluation"]["details"]["error"] == "endpoint: HTTP 500 from the agent endpoint"
    assert record["error"] == "endpoint: HTTP 500 from the agent endpoint"
    assert record["evaluation"]["details"]["scores"] == {}


def test_an_ungraded_sample_is_not_correct() -> None:
    record = task_result(make_result("judge-down", {"judge": None}))
    assert record["evaluation"]["is_correct"] is False
    assert record["evaluation"]["score"] is None
    assert record["evaluation"]["details"]["scores"] == {"judge": None}


def test_repeats_get_unique_task_ids_and_share_the_task() -> None:
    first, second = (task_result(make_result("s1", {"a": 1.0}, repeat=r)) for r in (0, 2))
    assert (first["task_id"], second["task_id"]) == ("s1", "s1#2")
    assert first["task"]["task_id"] == second["task"]["task_id"] == "s1"


def test_write_task_results_one_json_line_per_sample(tmp_path: Path) -> None:
    results = [make_result("a", {"g": 1.0}, answer="héllo ✓"), make_result("b", {}, error=("timeout", "slow"))]
    path = tmp_path / "nested" / "tasks.jsonl"
    assert write_task_results(iter(results), path) == 2
    lines = path.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["task_id"] for line in lines] == ["a", "b"]
    assert "héllo ✓" in lines[0]  # unicode kept readable, not \\u-escaped


def test_export_of_a_real_cli_run(server: ScriptedServer, tmp_path: Path) -> None:
    run = scripted_run(server, tmp_path)
    out = tmp_path / "tasks.jsonl"
    assert write_task_results(read_results(run), out) == 5
    records = {r["task_id"]: r for r in map(json.loads, out.read_text(encoding="utf-8").splitlines())}
    assert set(records) == {"host", "math", "conv", "xss", "broken"}
    host = records["host"]
    assert host["evaluation"]["is_correct"] is True
    assert host["evaluation"]["details"]["tool_call_order"] == ["read_file"]
    assert host["evaluation"]["details"]["steps"] == 2
    assert host["prediction"]["prediction"] == "The host is localhost."
    assert records["math"]["evaluation"]["is_correct"] is False
    assert records["math"]["evaluation"]["details"]["scores"]["avoided"] == 0.0
    assert records["conv"]["task"]["question"] == "first: host?\nsecond: port?\nthird: user?"
    assert records["conv"]["evaluation"]["details"]["steps"] == 4
    broken = records["broken"]
    assert broken["evaluation"]["score"] is None and broken["evaluation"]["details"]["error"].startswith("endpoint: ")


def test_a_grader_with_nothing_to_check_has_no_score() -> None:
    """Issue 24 item 1: an n/a grade's conventional 1.0 is not exported as a score a consumer would average."""
    from evals_cli.models.results import Grade

    result = make_result("math", {"answer": 0.0}, passed=False)
    result.grades["order"] = Grade.not_applicable("no expected tool order: nothing to check")
    details = task_result(result)["evaluation"]["details"]
    assert details["scores"] == {"answer": 0.0} and details["not_applicable"] == ["order"]

