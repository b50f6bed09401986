"""The README's examples for `required`, `threshold`, `sample_pass`, `pass_rate` and the per-turn result shape
run as written (issue 11: "examples that run as written")."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from evals_cli.models.results import Grade
from tests.docs_pages import all_docs
from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, call, judge_score, text

README = all_docs()  # the README and the docs/ pages the examples moved to


def _block(lang: str, needle: str) -> str:
    blocks = re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)
    found = [b for b in blocks if needle in b]
    assert len(found) == 1, f"expected one ```{lang} block with {needle!r}, found {len(found)}"
    return found[0]


def test_the_graders_and_gate_examples_run_as_written(server: ScriptedServer, tmp_path: Path) -> None:
    graders: dict[str, Any] = yaml.safe_load(_block("yaml", "order:    {kind: tool_order, required: true"))["graders"]
    gate: dict[str, Any] = yaml.safe_load(_block("yaml", "sample_pass: weighted"))["gate"]
    rows = [
        {"id": "read", "input": "read: db host?", "ground_truth": "localhost", "expected_tool_order": ["read_file"]},
        {"id": "guess", "input": "guess: db host?", "ground_truth": "localhost", "expected_tool_order": ["read_file"]},
        {"id": "math", "input": "math: 2+2?", "ground_truth": "4", "forbidden_tools": ["read_file"]},
    ]
    server.script = agent_script({"read": [call("read_file", {"path": ".env"}), text("localhost")],
                                  "guess": [text("localhost")],
                                  "math": [call("read_file", {"path": "calc"}), text("4")]},
                                 judge=lambda body: judge_score(9))
    suite = write_suite(tmp_path, rows, base_url=server.url, graders=graders, gate=gate)
    assert run_cli("validate", str(suite)).returncode == 0
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    lines = {r["sample_id"]: r for r in read_jsonl(tmp_path / "out" / "results.jsonl")}
    assert lines["read"]["passed"] is True
    # guess: answer 1.0 (×2), order 0.0 (×1), avoided n/a (left out): weighted 0.67 < 0.7, and order is required
    assert [(f["rule"], f["grader"]) for f in lines["guess"]["failed_by"]] == [("required", "order"), ("weighted", None)]
    assert lines["guess"]["score"] == 2 / 3
    # math: answer 1.0 (×2), order n/a (left out), a forbidden read_file 0.0 (×1): 0.67, under 0.7 too
    assert [(f["rule"], f["grader"]) for f in lines["math"]["failed_by"]] == [("required", "avoided"), ("weighted", None)]
    assert result.returncode == 1
    assert "Gate FAILED: sample pass rate (1 of 3 samples passed) = 0.333 not ≥ 0.9" in result.stdout


def test_the_per_turn_result_example_is_a_grade() -> None:
    example = json.loads(_block("json", "per_turn_grades"))
    grade = Grade.model_validate(example)
    assert [t.turn for t in grade.per_turn_grades or []] == [0, 1, 2]
    assert (grade.turns_passed, grade.turns_total) == (2, 3)
    assert grade.model_dump(mode="json") == example  # the README shows exactly what a run writes
