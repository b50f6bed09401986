"""Issue 24 item 2: an empty answer is not judged. A model_judge grade of an absent or empty answer (the loop
ended at max_steps, empty_answer or unparsed_tool_call, or the answer is blank) is a fail (score 0) with the
reason "no answer to judge", and the judge is never called: a small judge gave 10/10 to an empty submission. The
same for each empty reply of a `scope: reply` judge and each empty turn of a per-turn judge. And a gate that
passes while fewer than half the samples passed says so on its verdict line and in summary.json."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, call, completion, judge_score, text

RUBRIC = "Is this a helpful answer to the question?\nQuestion: {{ input }}\nAnswer: {{ submission }}"
JUDGE = {"kind": "model_judge", "prompt": RUBRIC, "scale": "1-10"}
CALL_AS_TEXT = '{"name": "read_file", "arguments": {"path": ".env"}}'


def _judge_only(server: ScriptedServer, tmp_path: Path, replies: list[Any], *, max_steps: int = 5,
                grader: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
    """A judge-only suite of one sample, the judge giving 10/10 to anything it is asked about."""
    server.script = agent_script({"question": replies}, judge=lambda body: judge_score(10, "perfect"))
    suite = write_suite(tmp_path, [{"id": "q", "input": "question: what is the db host?"}], base_url=server.url,
                        graders={"quality": grader or JUDGE}, target={"max_steps": max_steps})
    out = tmp_path / "out"
    result = run_cli("run", str(suite), "-o", str(out))
    [line] = read_jsonl(out / "results.jsonl")
    return result, line


@pytest.mark.parametrize("replies,max_steps,ending", [
    ([text("")], 5, "empty_answer"),
    ([text("  \n\t ")], 5, "empty_answer"),
    ([text(CALL_AS_TEXT)], 5, "unparsed_tool_call"),
    # cut off while still calling tools: the text of an intermediate step is no final answer
    ([completion("Let me look that up.", call("read_file", {"path": ".env"})["choices"][0]["message"]["tool_calls"])],
     2, "max_steps"),
], ids=["empty", "whitespace", "unparsed_tool_call", "max_steps"])
def test_no_answer_is_a_fail_and_the_judge_is_never_called(server: ScriptedServer, tmp_path: Path,
                                                         replies: list[Any], max_steps: int, ending: str) -> None:
    result, line = _judge_only(server, tmp_path, replies, max_steps=max_steps)
    assert line["trajectory"]["stop_reason"] == ending
    grade = line["grades"]["quality"]
    assert grade["score"] == 0.0 and grade["applicable"] is True and grade["error"] is None
    assert grade["rationale"].startswith("no answer to judge")
    assert server.judge_requests() == []  # the judge that would have said 10/10 was not asked
    assert line["passed"] is False and line["error"] is None
    assert result.returncode == 1, result.stdout  # the gate does not pass on nothing
    assert "Gate FAILED" in result.stdout and "0 passed, 1 failed" in result.stdout


def test_an_answer_is_still_judged(server: ScriptedServer, tmp_path: Path) -> None:
    result, line = _judge_only(server, tmp_path, [text("The host is localhost.")])
    assert line["grades"]["quality"]["score"] == 1.0 and len(server.judge_requests()) == 1
    assert result.returncode == 0


def test_a_rubric_that_never_reads_the_answer_is_still_asked(server: ScriptedServer, tmp_path: Path) -> None:
    # a judge of the conversation (as builtin:goal_completion is) has something to judge without a final answer
    _, line = _judge_only(server, tmp_path, [text("")],
                          grader={**JUDGE, "prompt": "Did the agent behave well?\n{{ trajectory }}"})
    assert len(server.judge_requests()) == 1 and line["grades"]["quality"]["score"] == 1.0


def _judged_replies(server: ScriptedServer) -> list[str]:
    return [re.sub(r"</?data-[0-9a-f]{10}>", "", r["body"]["messages"][1]["content"])
            for r in server.judge_requests()]


def test_an_empty_reply_of_a_reply_scoped_judge_fails_unjudged(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script({"one": [text("Hello! How can I help?")], "two": [text("")],
                                  "three": [text("You are welcome.")]}, judge=lambda body: judge_score(10))
    suite = write_suite(tmp_path, [{"id": "conv", "input": ["one: hi", "two: where is it?", "three: thanks"]}],
                        base_url=server.url, gate={"value": 0.5},
                        graders={"polite": {**JUDGE, "scope": "reply", "threshold": 0.7}})
    run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    [line] = read_jsonl(tmp_path / "out" / "results.jsonl")
    grade = line["grades"]["polite"]
    assert [t["score"] for t in grade["per_turn_grades"]] == [1.0, 0.0, 1.0]
    assert grade["per_turn_grades"][1]["rationale"].startswith("no answer to judge")
    assert grade["metadata"]["replies_failed"] == [1] and grade["score"] == pytest.approx(2 / 3)
    replies = _judged_replies(server)
    assert len(replies) == 2 and not any("where is it" in r for r in replies)  # reply 2 was never sent


def test_an_empty_turn_of_a_per_turn_judge_fails_unjudged(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script({"first": [text("")], "second": [text("It is 5432.")]},
                                 judge=lambda body: judge_score(10))
    suite = write_suite(tmp_path, [{"id": "conv", "input": ["first: db host?", "second: db port?"],
                                    "ground_truth": ["localhost", "5432"]}],
                        base_url=server.url, graders={"turns": JUDGE})
    run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    [line] = read_jsonl(tmp_path / "out" / "results.jsonl")
    grade = line["grades"]["turns"]
    assert [t["score"] for t in grade["per_turn_grades"]] == [0.0, 1.0]
    assert grade["per_turn_grades"][0]["rationale"].startswith("no answer to judge")
    assert grade["score"] == 0.5 and grade["metadata"]["turns_passed"] == 1
    replies = _judged_replies(server)
    assert len(replies) == 1 and "second: db port?" in replies[0]


def test_a_gate_passing_while_most_samples_failed_says_so(server: ScriptedServer, tmp_path: Path) -> None:
    # every answer is right; only one of three samples read the file: answer avg 1.0, order avg 1/3, weighted
    # 0.67 passes the run-level 0.5, while the per-sample rule (1.0) passes one sample of three
    rows = [{"id": f"s{i}", "input": f"s{i}: db host?", "ground_truth": "localhost", "expected_tool_order": ["read_file"]}
            for i in range(3)]
    server.script = agent_script({"s0": [call("read_file", {"path": ".env"}), text("localhost")],
                                  "s1": [text("localhost")], "s2": [text("localhost")]})
    suite = write_suite(tmp_path, rows, base_url=server.url,
                        graders={"answer": {"kind": "match", "function": "contains"}, "order": {"kind": "tool_order"}},
                        gate={"kind": "weighted_average", "aggregation": "avg_score", "op": "gte", "value": 0.5,
                              "pass_value": 1.0})
    out = tmp_path / "out"
    result = run_cli("run", str(suite), "-o", str(out))
    assert result.returncode == 0, result.stdout  # the gate passes, as its rule says...
    assert "3 samples: 1 passed, 2 failed" in result.stdout
    # ...and its verdict line does not hide that most samples failed
    assert "Gate PASSED (but only 1 of 3 samples passed): weighted avg_score" in result.stdout
    gate = json.loads((out / "summary.json").read_text())["gate"]
    assert gate["passed"] is True and gate["warning"] == "only 1 of 3 samples passed"
    assert gate["message"].startswith("Gate PASSED (but only 1 of 3 samples passed)")


def test_no_warning_when_half_or_more_passed(server: ScriptedServer, tmp_path: Path) -> None:
    rows = [{"id": f"s{i}", "input": f"s{i}: db host?", "ground_truth": "localhost"} for i in range(2)]
    server.script = agent_script({"s0": [text("localhost")], "s1": [text("no idea")]})
    suite = write_suite(tmp_path, rows, base_url=server.url, graders={"answer": {"kind": "match", "function": "contains"}},
                        gate={"value": 0.5, "pass_value": 1.0})
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    assert result.returncode == 0 and "Gate PASSED: weighted avg_score" in result.stdout
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["gate"]["warning"] is None
