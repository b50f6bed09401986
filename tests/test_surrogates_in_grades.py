"""A lone UTF-16 surrogate can reach a grade from outside the agent (a judge's reason, a custom grader's
rationale). It cannot be encoded as UTF-8, so writing the results line used to fail and the sample vanished from
the results; it is now replaced by U+FFFD and every sample keeps its line (issue 11, item 7)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, judge_score, text


def test_a_judge_reason_with_a_lone_surrogate_keeps_its_sample(server: ScriptedServer, tmp_path: Path) -> None:
    rows = [{"id": f"s{i}", "input": "db host?", "ground_truth": "localhost"} for i in range(3)]
    server.script = agent_script({"host": [text("localhost")]}, judge=lambda body: judge_score(9, "fine \ud800 work"))
    suite = write_suite(tmp_path, rows, base_url=server.url, graders={
        "answer": {"kind": "tool", "function": "contains"},
        "judge": {"kind": "model_judge", "prompt": "{{ submission }}"}})
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    assert result.returncode == 0, result.stdout + result.stderr
    lines = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert sorted(line["sample_id"] for line in lines) == ["s0", "s1", "s2"]
    assert all(line["grades"]["judge"]["rationale"] == "fine \ufffd work" for line in lines)
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["passed"] == 3
