"""`scope: reply`: a grader grades each agent reply of a multi-turn conversation on its own, and passes when the
share of replies that passed reaches `min_share`; an errored reply is an error, never a zero."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from evals_cli import load_suite, run_suite
from evals_cli.runner import RunOptions
from tests.helpers import run_cli, write_suite
from tests.scripted_server import Reply, ScriptedServer, agent_script, call, judge_score, text

POLITE = "Rate how polite this reply is.\nReply: {{ submission }}\nUser said: {{ input }}"
ROWS = [{"id": "conv", "input": ["one: hi", "two: where is it?", "three: thanks"]}]
AGENT = {"one": [text("Hello! How can I help?")], "two": [text("Figure it out yourself.")],
         "three": [text("You are welcome, happy to help.")]}


def politeness(body: dict[str, Any]) -> Any:
    content = re.sub(r"</?data-[0-9a-f]{10}>", "", body["messages"][1]["content"])
    return judge_score(2 if "Figure it out" in content else 9, "scripted politeness")


def run(server: ScriptedServer, tmp_path: Path, grader: dict[str, Any], judge: Any = politeness,
        agent: dict[str, list[Any]] | None = None, rows: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    server.script = agent_script(agent or AGENT, judge=judge)
    (tmp_path / "polite.j2").write_text(POLITE)
    suite = write_suite(tmp_path, rows or ROWS, base_url=server.url, graders={"polite": grader},
                        gate={"value": 0.5})
    run_suite(load_suite(suite), RunOptions(output=tmp_path / "out"))
    return json.loads((tmp_path / "out" / "results.jsonl").read_text().splitlines()[0])


JUDGE = {"kind": "model_judge", "rubric": "polite.j2", "scope": "reply", "threshold": 0.7}


def test_each_reply_is_graded_on_its_own_and_the_score_is_the_share(server: ScriptedServer, tmp_path: Path) -> None:
    line = run(server, tmp_path, {**JUDGE, "min_share": 0.6})
    grade = line["grades"]["polite"]
    assert [t["score"] for t in grade["per_turn_grades"]] == [0.9, 0.2, 0.9]
    assert [t["submission"] for t in grade["per_turn_grades"]][1] == "Figure it out yourself."
    assert grade["score"] == pytest.approx(2 / 3)
    meta = grade["metadata"]
    assert (meta["turns_passed"], meta["turns_total"], meta["replies_failed"], meta["min_share"]) == (2, 3, [1], 0.6)
    assert "2/3 replies passed" in grade["rationale"] and "passed" in grade["rationale"].split(":")[-1]
    # the judge saw each reply with the user message it answered
    prompts = [re.sub(r"</?data-[0-9a-f]{10}>", "", r["body"]["messages"][1]["content"])
               for r in server.judge_requests()]
    assert any("Reply: Figure it out yourself.\nUser said: two: where is it?" in p for p in prompts)
    assert line["passed"] is True  # 2/3 >= 0.6
    # one grade, three judge calls: the judge's role counts the calls made, not the graders that made them
    assert line["roles"]["judge"]["calls"] == len(server.judge_requests()) == 3


def test_a_share_under_min_share_fails_the_sample(server: ScriptedServer, tmp_path: Path) -> None:
    """min_share 1 (the default): every reply must pass; one rude reply fails the sample whatever the weighted
    score (a reply-scoped grader is required by default)."""
    line = run(server, tmp_path, dict(JUDGE))
    grade = line["grades"]["polite"]
    assert grade["score"] == pytest.approx(2 / 3) and grade["metadata"]["min_share"] == 1.0
    assert "failed" in grade["rationale"]
    assert line["passed"] is False
    assert [f["grader"] for f in line["failed_by"]] == ["polite"]
    assert line["failed_by"][0]["threshold"] == 1.0


def test_exactly_at_min_share_passes(server: ScriptedServer, tmp_path: Path) -> None:
    line = run(server, tmp_path, {**JUDGE, "min_share": 2 / 3})
    assert line["passed"] is True


def test_an_errored_reply_is_an_error_not_a_zero(server: ScriptedServer, tmp_path: Path) -> None:
    def judge(body: dict[str, Any]) -> Any:
        if "Figure it out" in body["messages"][1]["content"]:
            return Reply({"error": {"message": "judge down"}}, status=400)
        return judge_score(9)

    line = run(server, tmp_path, {**JUDGE, "min_share": 0.5, "max_tokens": 50}, judge=judge)
    grade = line["grades"]["polite"]
    assert grade["score"] is None
    assert [t["score"] for t in grade["per_turn_grades"]] == [0.9, None, 0.9]
    assert "1 of 3 replies could not be graded" in grade["error"] and "reply 2" in grade["error"]
    assert line["passed"] is None and line["error"] is not None  # no verdict, never a pass on the others


def test_deterministic_graders_see_only_their_reply(server: ScriptedServer, tmp_path: Path) -> None:
    """tools_avoided per reply: the forbidden call in reply 2 fails reply 2 only, not the replies after it."""
    agent = {"one": [text("hi")], "two": [call("list_files", {"directory": "."}), text("done")],
             "three": [text("bye")]}
    rows = [dict(ROWS[0], forbidden_tools=["list_files"])]
    grader = {"kind": "tools_avoided", "scope": "reply", "min_share": 0.5}
    line = run(server, tmp_path, grader, agent=agent, rows=rows)
    grade = line["grades"]["polite"]
    assert [t["score"] for t in grade["per_turn_grades"]] == [1.0, 0.0, 1.0]
    assert grade["score"] == pytest.approx(2 / 3) and line["passed"] is True


def test_the_report_names_the_failing_replies(server: ScriptedServer, tmp_path: Path) -> None:
    run(server, tmp_path, dict(JUDGE))
    result = run_cli("report", str(tmp_path / "out"), "--html", str(tmp_path / "r.html"))
    assert "reply 2 0.20: scripted politeness" in result.stdout
    page = (tmp_path / "r.html").read_text()
    assert "reply 2" in page and "Figure it out yourself." in page and "min_share 1.0" in page


def test_min_share_needs_scope_reply(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, ROWS, graders={"polite": {"kind": "tools_avoided", "min_share": 0.5}})
    result = run_cli("validate", str(suite))
    assert result.returncode == 2
    assert "min_share" in result.stdout + result.stderr and "scope: reply" in result.stdout + result.stderr


def test_a_simulated_conversation_is_graded_reply_by_reply(server: ScriptedServer, tmp_path: Path) -> None:
    """Any multi-turn sample: here a simulated user (no scripted `input`), two agent replies."""
    from tests.test_goal_completion import REFUND_TOOL, serve, user_row

    def judge(body: dict[str, Any]) -> Any:
        return judge_score(3 if "order number" in body["messages"][1]["content"] else 9)

    server.script = serve(judge)
    (tmp_path / "polite.j2").write_text(POLITE)
    # the bare token: no last words, so two replies (last words would be sent and answered as a third)
    suite = write_suite(tmp_path, [user_row("sim", "my kettle broke | it's 12345 | ###STOP###")],
                        base_url=server.url, tools={"issue_refund": REFUND_TOOL},
                        graders={"polite": {**JUDGE, "min_share": 0.5}}, gate={"value": 0.5})
    run_suite(load_suite(suite), RunOptions(output=tmp_path / "out"))
    line = json.loads((tmp_path / "out" / "results.jsonl").read_text())
    grade = line["grades"]["polite"]
    assert [t["user_source"] for t in line["trajectory"]["turns"]] == ["simulated", "simulated"]
    assert [t["score"] for t in grade["per_turn_grades"]] == [0.3, 0.9]
    assert grade["score"] == 0.5 and line["passed"] is True
