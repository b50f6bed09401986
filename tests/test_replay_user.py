"""`evals run --replay-user RUN`: the user messages of a finished simulated run are replayed against the current
agent while the conversation stays on the recorded path; where it leaves it, the simulator continues or the
sample is marked diverged (`--on-divergence`). The scripted server plays two (three) agent versions, chosen by
the model name, the user simulator and nothing else; the real openai client talks to it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, call, is_judge, is_simulator, text

REFUND_TOOL = {"description": "Issue a refund", "parameters": {"order_id": "Order id"}, "returns": "refund ok"}
ROW = {"id": "refund", "ground_truth": "refund",
       "user": {"persona": "Sam", "goal": "a refund for order 12345", "first_message": "my kettle broke"}}


class Desk:
    """Agent versions by model name: v1 asks for the order number; v2 words its first reply differently; v3
    matches v1 until it confirms the refund in other words. The simulator says `lines[n]` after n agent
    replies; tests change the lines between runs to show that a replayed user is the recorded one."""

    def __init__(self) -> None:
        self.lines = ["it's 12345", "thanks ###STOP###"]

    def __call__(self, path: str, body: dict[str, Any]) -> Any:
        if is_judge(body):
            return text('{"reason": "x", "score": 10}')
        messages = body["messages"]
        if is_simulator(body):
            replies = sum(1 for m in messages if m["role"] == "assistant") - 1  # the first is the opening
            return text(self.lines[min(max(replies, 0), len(self.lines) - 1)])
        version = body["model"]
        if messages[-1]["role"] == "tool":
            return text("Done, refunded." if version == "v3" else "Refund issued for order 12345.")
        last_user = messages[-1]["content"]
        match = re.search(r"\b(\d{5})\b", last_user)
        if match:
            return call("issue_refund", {"order_id": match.group(1)})
        if "thanks" in last_user or "thx" in last_user:  # the user's last words are sent and answered
            return text("Glad the refund helped.")
        return text("Which order is it?" if version == "v2" else "Sorry! What is your order number?")


def setup(tmp_path: Path, server: ScriptedServer) -> tuple[Desk, Path]:
    desk = Desk()
    server.script = desk
    suite = write_suite(tmp_path, [ROW], base_url=server.url, tools={"issue_refund": REFUND_TOOL},
                        graders={"answer": {"kind": "tool", "function": "contains"}}, gate={"value": 0.5})
    return desk, suite


def run(suite: Path, out: Path, *extra: str) -> tuple[int, dict[str, Any], str]:
    result = run_cli("run", str(suite), "-o", str(out), *extra)
    results = read_jsonl(out / "results.jsonl") if (out / "results.jsonl").exists() else [{}]
    return result.returncode, results[0], result.stdout + result.stderr


def simulator_calls(server: ScriptedServer) -> int:
    return sum(1 for r in server.requests if is_simulator(r["body"]))


@pytest.fixture
def recorded(tmp_path: Path, server: ScriptedServer) -> tuple[Desk, Path, Path]:
    """Run A: agent v1 against the simulated user; its conversation is the one replayed."""
    desk, suite = setup(tmp_path, server)
    code, result, _ = run(suite, tmp_path / "a", "--model", "v1")
    assert code == 0, result
    turns = result["trajectory"]["turns"]
    # the user's last words ("thanks", before ###STOP###) were sent and answered: they are the last turn
    assert [t["user"] for t in turns] == ["my kettle broke", "it's 12345", "thanks"]
    assert [t["user_source"] for t in turns] == ["scripted", "simulated", "simulated"]
    desk.lines = ["12345 is the order", "thx ###STOP###"]  # what the simulator would say now: never asked
    server.requests.clear()
    return desk, suite, tmp_path / "a"


def test_the_same_agent_replays_the_recorded_user_without_the_simulator(recorded: tuple[Desk, Path, Path],
                                                                        server: ScriptedServer,
                                                                        tmp_path: Path) -> None:
    _, suite, run_a = recorded
    code, result, output = run(suite, tmp_path / "b", "--model", "v1", "--replay-user", str(run_a))
    assert code == 0
    trajectory = result["trajectory"]
    assert [t["user"] for t in trajectory["turns"]] == ["my kettle broke", "it's 12345", "thanks"]
    assert [t["user_source"] for t in trajectory["turns"]] == ["replayed", "replayed", "replayed"]
    assert (trajectory["end_reason"], trajectory["closing_user"]) == ("user_done", None)
    assert simulator_calls(server) == 0
    assert "replay-user: all 1 conversations stayed on the recorded path" in output


def test_a_different_reply_diverges_and_the_simulator_continues(recorded: tuple[Desk, Path, Path],
                                                                 server: ScriptedServer, tmp_path: Path) -> None:
    _, suite, run_a = recorded
    code, result, output = run(suite, tmp_path / "b", "--model", "v2", "--replay-user", str(run_a),
                               "--export", f"html={tmp_path / 'b.html'}")
    trajectory = result["trajectory"]
    assert [t["user_source"] for t in trajectory["turns"]] == ["replayed", "simulated", "simulated"][:len(
        trajectory["turns"])]
    assert trajectory["turns"][0]["steps"][0]["content"] == "Which order is it?"
    assert trajectory["turns"][1]["user"] == "12345 is the order"  # the simulator's, not the recorded line
    assert simulator_calls(server) >= 1
    assert "left the recorded path: refund at turn 1" in output
    assert result["passed"] is True  # leaving the path is no failure: the conversation went on and was graded
    page = (tmp_path / "b.html").read_text()
    assert "left the recorded user's path at turn 1" in page and "user · replayed" in page


def test_divergence_later_in_the_conversation(recorded: tuple[Desk, Path, Path], server: ScriptedServer,
                                              tmp_path: Path) -> None:
    """v3 matches v1 in turn 1 and confirms the refund in other words in turn 2: the recorded user's 'thanks'
    answered a reply v3 did not give, so the simulator writes the last words instead (sent and answered)."""
    _, suite, run_a = recorded
    _, result, output = run(suite, tmp_path / "b", "--model", "v3", "--replay-user", str(run_a))
    trajectory = result["trajectory"]
    assert [t["user_source"] for t in trajectory["turns"]] == ["replayed", "replayed", "simulated"]
    assert trajectory["turns"][-1]["user"] == "thx" and trajectory["end_reason"] == "user_done"
    assert "left the recorded path: refund at turn 2" in output


def test_on_divergence_stop_marks_the_sample_diverged(recorded: tuple[Desk, Path, Path], server: ScriptedServer,
                                                      tmp_path: Path) -> None:
    _, suite, run_a = recorded
    _, result, output = run(suite, tmp_path / "b", "--model", "v2", "--replay-user", str(run_a),
                            "--on-divergence", "stop")
    trajectory = result["trajectory"]
    assert trajectory["end_reason"] == "diverged" and len(trajectory["turns"]) == 1
    assert simulator_calls(server) == 0
    grade = result["grades"]["answer"]
    assert grade["score"] is None and "left the recorded user's path at turn 1" in grade["error"]
    assert result["passed"] is None  # no verdict: neither a pass nor the agent's failure
    assert result["error"]["category"] == "diverged"  # not a judge's or a grader's error, said once
    summary = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert summary["grades_missing"] == 0 and summary["errors_by_category"] == {"diverged": 1}  # no grader error
    assert result["error"]["message"].count("left the recorded user's path") == 1
    assert "refund at turn 1 (stopped: diverged)" in output


def test_a_run_without_simulated_users_is_refused(tmp_path: Path, server: ScriptedServer) -> None:
    server.script = lambda path, body: text("refund done")
    plain = write_suite(tmp_path, [{"id": "p", "input": "refund?", "ground_truth": "refund"}], base_url=server.url,
                        graders={"answer": {"kind": "tool", "function": "contains"}}, gate={"value": 0.5})
    assert run_cli("run", str(plain), "-o", str(tmp_path / "plain")).returncode == 0
    _, suite = setup(tmp_path / "s" if (tmp_path / "s").mkdir() is None else tmp_path, server)
    result = run_cli("run", str(suite), "-o", str(tmp_path / "b"), "--replay-user", str(tmp_path / "plain"))
    assert result.returncode == 2
    assert "not a run with simulated users" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "b" / "results.jsonl").exists()


@pytest.mark.parametrize(("args", "words"), [
    (["--on-divergence", "stop"], "needs --replay-user"),
    (["--replay-user", "no-such-run"], "not found"),
    (["--replay-user", ".", "--on-divergence", "later"], "choose continue"),
])
def test_bad_options_exit_2(tmp_path: Path, server: ScriptedServer, args: list[str], words: str) -> None:
    _, suite = setup(tmp_path, server)
    result = run_cli("run", str(suite), "-o", str(tmp_path / "b"), *args, cwd=tmp_path)
    assert result.returncode == 2 and words in result.stderr
    assert server.requests == []
