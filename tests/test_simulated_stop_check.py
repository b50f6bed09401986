"""A simulated user that does not end early (issue 44, item 9): a stop sent while the agent waits on the user
(it asked for the go-ahead, for a detail, or said nothing) is put back to the simulator once, with a note naming
what the agent waits for; a second stop is taken, and a stop after an answer that waits on nothing is taken at
once. The built-in prompt tells the user to stay until the goal is met or clearly cannot be.

The loopback server plays a refund desk that asks for the go-ahead before it acts, and a hasty user that stops at
that first confirmation, as small simulator models do; told the agent is waiting, it either answers (`[then:
yes]`) or stops again (`[then: stop]`). Everything goes through `evals run` and the real openai client."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from evals_cli.models.sample import Sample
from evals_cli.simulation.prompt import DEFAULT_TEMPLATE, render
from evals_cli.simulation.stop_check import awaits_user
from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, call, is_simulator, text

PUT_BACK = "[You ended the conversation, but the assistant's last message"
TOOLS = {"issue_refund": {"description": "Issue a refund", "parameters": {"order_id": "Order id"},
                          "returns": "refund ok"}}


def hasty_user(body: dict[str, Any]) -> Any:
    """Opens with the refund request, stops at the first confirmation question; put back, it does what its
    persona's [then: ...] tag says; once the refund is done it thanks and stops."""
    messages = body["messages"]
    system, last = messages[0]["content"], messages[-1]["content"]
    end = call("end_conversation", {}) if body.get("tools") else text("###STOP###")
    if last.startswith(PUT_BACK):
        return text("yes, go ahead") if "[then: yes]" in system else end
    if "Shall I" in last or not last.strip() or last == "[The assistant said nothing.]":
        return end
    if "refunded" in last:
        return text("thanks ###STOP###")
    return text("please refund order 12345")


def refund_desk(body: dict[str, Any]) -> Any:
    """Asks for the go-ahead, then refunds; `silent` in the request: answers with nothing."""
    messages = body["messages"]
    if messages[-1]["role"] == "tool":
        return text("Done: order 12345 is refunded.")
    last = messages[-1]["content"]
    if last == "yes, go ahead":
        return call("issue_refund", {"order_id": "12345"})
    if "silent" in messages[0]["content"]:
        return text("")
    match = re.search(r"\b(\d{5})\b", last)
    if match:
        return text(f"I found order {match.group(1)} ($40). Shall I refund it?")
    return text("You're welcome.")


def script(path: str, body: dict[str, Any]) -> Any:
    return hasty_user(body) if is_simulator(body) else refund_desk(body)


def suite(tmp: Path, server: ScriptedServer, then: str, stop: str = "token", prompt: str = "refund desk") -> Path:
    server.script = script
    row = {"id": "refund", "expected_tool_order": ["issue_refund"],
           "user": {"persona": f"Sam [then: {then}]", "goal": "get order 12345 refunded", "stop": stop,
                    "max_turns": 6}}
    return write_suite(tmp, [row], base_url=server.url, tools=TOOLS, graders={"order": {"kind": "tool_order"}},
                       target={"system_prompt": prompt}, gate={"kind": "weighted_average",
                                                               "aggregation": "avg_score", "op": "gte",
                                                               "value": 1.0})


def run(path: Path, out: Path) -> tuple[int, dict[str, Any], str]:
    result = run_cli("run", str(path), "-o", str(out), "-q")
    [line] = read_jsonl(out / "results.jsonl")
    return result.returncode, line, result.stdout + result.stderr


def simulator_calls(server: ScriptedServer) -> list[list[dict[str, Any]]]:
    return [r["body"]["messages"] for r in server.requests if is_simulator(r["body"])]


@pytest.mark.parametrize("stop", ["token", "tool"])
def test_a_stop_at_the_first_confirmation_is_put_back_and_the_task_gets_done(tmp_path: Path,
                                                                             server: ScriptedServer,
                                                                             stop: str) -> None:
    code, line, output = run(suite(tmp_path, server, "yes", stop), tmp_path / "out")
    trajectory = line["trajectory"]
    assert [t["user"] for t in trajectory["turns"]] == ["please refund order 12345", "yes, go ahead", "thanks"]
    assert [c["name"] for t in trajectory["turns"] for s in t["steps"] for c in s["tool_calls"]] == ["issue_refund"]
    assert trajectory["end_reason"] == "user_done"
    # opening, the stop at "Shall I refund it?" and its answer once put back, the thanks: the last stop (after
    # "Done: ... refunded.", which waits on nothing) was taken at once
    assert trajectory["user_calls"] == 4
    put_back = simulator_calls(server)[2]
    assert put_back[-1]["content"].startswith(PUT_BACK) and "asks you something" in put_back[-1]["content"]
    again = "end_conversation tool again" if stop == "tool" else "###STOP### again"
    assert again in put_back[-1]["content"]
    assert put_back[-2]["role"] == "assistant"  # what it said (the stop) is in the conversation it is asked about
    assert code == 0 and line["passed"] is True, output


def test_a_second_stop_is_taken(tmp_path: Path, server: ScriptedServer) -> None:
    code, line, output = run(suite(tmp_path, server, "stop"), tmp_path / "out")
    trajectory = line["trajectory"]
    assert [t["user"] for t in trajectory["turns"]] == ["please refund order 12345"]
    assert trajectory["end_reason"] == "user_done" and trajectory["user_calls"] == 3  # opening, stop, stop again
    assert len(server.agent_requests()) - len(simulator_calls(server)) == 1  # the agent was asked nothing more
    assert line["passed"] is False and code == 1, output  # it gave up: the refund was never made


def test_a_stop_after_an_empty_reply_is_put_back(tmp_path: Path, server: ScriptedServer) -> None:
    _, line, _ = run(suite(tmp_path, server, "stop", prompt="silent refund desk"), tmp_path / "out")
    assert line["trajectory"]["user_calls"] == 3
    assert "said nothing" in simulator_calls(server)[2][-1]["content"]


def test_what_waits_on_the_user() -> None:
    waiting = ["Shall I refund it?", "Please provide your user id.", "Let me know the new seat.", "",
               "Would you like me to go ahead", "Kindly confirm the amount."]
    done = ["Done: order 12345 is refunded.", "Your seat is now 3C.", "You're welcome.",
            "I cannot cancel a basic economy reservation."]
    assert all(awaits_user(reply) for reply in waiting)
    assert not any(awaits_user(reply) for reply in done)


def test_the_built_in_prompt_says_when_the_conversation_is_over() -> None:
    sample = Sample.model_validate({"id": "s", "user": {"goal": "get a refund"}})
    assert sample.user is not None
    prompt = render(DEFAULT_TEMPLATE, sample, sample.user)
    assert "until your goal is met or clearly cannot be met" in prompt
    assert "Only when your goal is met or clearly cannot be met, reply with ###STOP###" in prompt



def test_an_attackers_stop_is_taken_at_once(tmp_path: Path, server: ScriptedServer) -> None:
    path = suite(tmp_path, server, "yes")
    data = path.parent / "data.jsonl"
    data.write_text(data.read_text().replace('"persona": "Sam [then: yes]"', '"kind": "attacker"'))
    _, line, output = run(path, tmp_path / "out")
    assert line["trajectory"]["user_calls"] == 2, output  # its template says when an attack is over
    assert not any(m[-1]["content"].startswith(PUT_BACK) for m in simulator_calls(server))


def test_a_suites_own_prompt_has_its_stops_taken_as_they_come(tmp_path: Path, server: ScriptedServer) -> None:
    (tmp_path / "user.j2").write_text("You are {{ persona }}. Want: {{ goal }}. End with {{ stop_token }} "
                                      "whenever you like.\n")
    path = suite(tmp_path, server, "yes")
    path.write_text(path.read_text() + "user_simulator:\n  system_prompt_file: user.j2\n")
    code, line, output = run(path, tmp_path / "out")
    assert line["trajectory"]["user_calls"] == 2, output  # its prompt says when it ends: not put back
    assert [t["user"] for t in line["trajectory"]["turns"]] == ["please refund order 12345"]
    assert line["passed"] is False and code == 1
