"""Issue 35 item 5: a traced conversation cut off mid-call (an agent stopped by its own step cap while looping)
is graded with what was recorded, in a traces suite and in `evals analyze`: stop reason `cut_off`, trajectory
graders grade it (no_loops catches the loop), answer graders fail it with no answer and no judge is asked.

The looping traces were recorded by the real openai instrumentations (tests/fixtures/traces/record.py, `loop.*`):
the model asks for the same lookup at every step and the agent loop stops at its cap of 6 model calls."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from evals_cli.traces import read_traces
from tests.helpers import read_jsonl, run_cli
from tests.scripted_server import ScriptedServer, judge_score

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "traces"
LOOPS = ["loop.genai", "loop.openinference"]


@pytest.mark.parametrize("recording", LOOPS)
def test_a_looping_conversation_cut_off_mid_call_is_read_as_recorded(recording: str) -> None:
    traces = read_traces(FIXTURES / f"{recording}.otlp.jsonl")
    (conversation,) = traces.conversations
    assert conversation.complete and traces.problems == []
    trajectory = conversation.trajectory
    assert trajectory.stop_reason == "cut_off"
    assert [c.name for c in trajectory.tool_calls] == ["lookup_order"] * 6
    assert trajectory.turns[0].user == "Check order 42 again and again until it moves."
    assert conversation.notes == ["cut off mid-call: the last model reply asked for lookup_order and no model call "
                                  "followed (graded as recorded, stop reason cut_off: no final answer)"]


def _suite(tmp: Path, recording: str, judge_url: str) -> Path:
    shutil.copy(FIXTURES / f"{recording}.otlp.jsonl", tmp / "traces.jsonl")
    (tmp / "rubric.j2").write_text("Q: {{ input }}\nA: {{ submission }}\nDid it answer?\n", encoding="utf-8")
    (tmp / "rows.jsonl").write_text(json.dumps({"id": "loop-42", "ground_truth": "42"}) + "\n", encoding="utf-8")
    suite: dict[str, Any] = {
        "name": "looping", "dataset": "rows.jsonl", "target": {"kind": "traces", "path": "traces.jsonl"},
        "graders": {"loops": {"kind": "no_loops"}, "answer": {"kind": "match", "function": "contains"},
                    "judge": {"kind": "model_judge", "rubric": "rubric.j2", "base_url": judge_url, "model": "judge",
                              "api_key": "k"},
                    "stop": {"kind": "stop_behavior", "checks": ["max_steps"]}},
        "gate": {"kind": "weighted_average", "aggregation": "avg_score", "op": "gte", "value": 0.5},
    }
    (tmp / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    return tmp / "suite.yaml"


@pytest.mark.parametrize("recording", LOOPS)
def test_a_traces_suite_grades_the_cut_off_conversation(recording: str, tmp_path: Path,
                                                        server: ScriptedServer) -> None:
    server.script = lambda path, body: judge_score(10, "looks answered")  # would pass anything it were asked
    result = run_cli("run", str(_suite(tmp_path, recording, server.url)), "-o", str(tmp_path / "out"))
    (row,) = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert row["error"] is None and row["trajectory"]["stop_reason"] == "cut_off"
    grades = row["grades"]
    assert grades["loops"]["score"] == 0.0 and "lookup_order" in grades["loops"]["rationale"]  # the loop is caught
    assert grades["answer"]["score"] == 0.0 and grades["answer"]["rationale"].startswith("no answer: ")
    assert grades["judge"]["score"] == 0.0 and grades["judge"]["rationale"].startswith("no answer to judge")
    assert grades["stop"]["score"] == 0.0 and "cut_off" in grades["stop"]["rationale"]
    assert server.requests == []  # no judge was asked about an answer that was never given
    assert row["passed"] is False
    assert result.returncode == 1  # a verdict (the gate failed), not "run could not complete"
    assert "[cut_off]" in result.stdout
    # every view of the run says how it stopped: the HTML report and the summary's sample
    html = tmp_path / "report.html"
    assert run_cli("report", str(tmp_path / "out"), "--html", str(html)).returncode in (0, 1)
    assert "stopped: cut_off" in html.read_text(encoding="utf-8")


@pytest.mark.parametrize("recording", LOOPS)
def test_evals_analyze_keeps_the_cut_off_conversation_and_names_the_loop(recording: str, tmp_path: Path) -> None:
    result = run_cli("analyze", str(FIXTURES / f"{recording}.otlp.jsonl"), "-o", str(tmp_path / "run"),
                     "--no-judge", "--json")
    (session,) = json.loads(result.stdout)["sessions"]
    assert session["session_id"] == "loop-42"
    assert session["task_completion"] is False  # the user got no answer
    assert session["coordination"]["repeated_calls"] == ["turn 1 · support called lookup_order 6 times with the same "
                                                         "parameters"]
    assert any("repeats identical calls" in r for r in session["recommendations"])
    assert "1 of 1 traced conversations read" in result.stderr
    (written,) = read_jsonl(tmp_path / "run" / "traced_sessions.jsonl")
    assert written["turns"][-1]["final_response"] == ""
    # the HTML report says it was cut off, and pins the loop to its turn with its explanation
    html = tmp_path / "report.html"
    run_cli("report", str(tmp_path / "run"), "--html", str(html))
    page = html.read_text(encoding="utf-8")
    assert "cut off mid-call: the last model reply asked for lookup_order" in page
    assert 'data-kind="repeated call"' in page and "called lookup_order 6 times with the same parameters" in page
