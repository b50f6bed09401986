"""`evals validate` lists every problem at once, with file, line and field, and never calls a model."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import run_cli, write_suite

ROWS = [{"id": "a", "input": "hi", "ground_truth": "x"}]


def test_valid_suite_reports_counts(tmp_path: Path) -> None:
    result = run_cli("validate", str(write_suite(tmp_path, ROWS)))
    assert result.returncode == 0 and "ok: 1 samples, 3 graders" in result.stdout


def test_all_problems_listed_at_once(tmp_path: Path) -> None:
    rows = [
        {"id": "ok", "input": "fine"},
        {"id": "typo", "input": "x", "groud_truth": "y"},
        {"id": "turns", "input": ["a", "b"], "ground_truth": ["only one"]},
    ]
    suite = write_suite(tmp_path, rows, graders={
        "answer": {"kind": "tool", "function": "containz"},
        "judge": {"kind": "model_judge", "rubric": "missing.j2"},
        "pick": {"kind": "tool", "function": "contains", "extractor": "pattern", "extractor_config": {"pattern": "("}},
    })
    (tmp_path / "data.jsonl").write_text((tmp_path / "data.jsonl").read_text() + "{not json\n")
    result = run_cli("validate", str(suite))
    assert result.returncode == 2
    err = result.stderr
    assert "Traceback" not in err
    assert "unknown function 'containz'" in err
    assert "missing.j2" in err
    assert "not a valid regex" in err and "graders.pick" in err
    assert "data.jsonl:2" in err and "did you mean 'ground_truth'" in err
    assert "data.jsonl:3" in err and "'turns'" in err
    assert "data.jsonl:4" in err and "invalid JSON" in err


def test_rubric_variables_checked_against_every_sample(tmp_path: Path) -> None:
    (tmp_path / "r.j2").write_text("{{ input }} {{ audience }}")
    rows = [{"id": "has", "input": "x", "rubric_vars": {"audience": "devs"}}, {"id": "lacks", "input": "y"}]
    suite = write_suite(tmp_path, rows, graders={"j": {"kind": "model_judge", "rubric": "r.j2"}})
    result = run_cli("validate", str(suite))
    assert result.returncode == 2
    assert "'audience' is undefined" in result.stderr and "lacks" in result.stderr and "has," not in result.stderr


def test_rubric_syntax_error_names_the_line(tmp_path: Path) -> None:
    (tmp_path / "r.j2").write_text("line one\n{{ input }\n")
    suite = write_suite(tmp_path, ROWS, graders={"j": {"kind": "model_judge", "rubric": "r.j2"}})
    result = run_cli("validate", str(suite))
    assert result.returncode == 2 and "line 2" in result.stderr and "r.j2" in result.stderr


def test_validate_makes_no_network_call(tmp_path: Path) -> None:
    # the endpoint is unroutable: validate must not notice, because it never calls it
    suite = write_suite(tmp_path, ROWS, base_url="http://127.0.0.1:9/v1")
    assert run_cli("validate", str(suite)).returncode == 0


def test_custom_grader_runs_from_the_suite_folder(tmp_path: Path, server) -> None:  # type: ignore[no-untyped-def]
    from tests.scripted_server import agent_script, text

    (tmp_path / "my_graders.py").write_text(
        "from evals_cli import grader, Grade\n"
        "@grader\n"
        "def shouty(sample, submission):\n"
        "    return Grade(score=1.0 if submission.isupper() else 0.0, rationale='caps check')\n"
        "@grader\n"
        "def used_tools(sample, submission, trajectory):\n"
        "    return len(trajectory.tool_calls) == 0\n")
    server.script = agent_script({"hi": [text("HELLO")]})
    suite = write_suite(tmp_path, ROWS, base_url=server.url, graders={
        "caps": {"kind": "tool", "function": "my_graders.py:shouty"},
        "no_tools": {"kind": "tool", "function": "my_graders.py:used_tools"}})
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    line = json.loads((tmp_path / "out" / "results.jsonl").read_text())
    assert line["grades"]["caps"] == {**line["grades"]["caps"], "score": 1.0, "rationale": "caps check"}
    assert line["grades"]["no_tools"]["score"] == 1.0


def test_custom_grader_with_bad_signature_is_exit_2(tmp_path: Path) -> None:
    (tmp_path / "g.py").write_text("from evals_cli import grader\n@grader\ndef bad(submission):\n    return 1\n")
    suite = write_suite(tmp_path, ROWS, graders={"g": {"kind": "tool", "function": "g.py:bad"}})
    result = run_cli("validate", str(suite))
    assert result.returncode == 2 and "expected parameters (sample, submission)" in result.stderr
