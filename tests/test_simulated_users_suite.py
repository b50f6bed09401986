"""The shipped suites/simulated_users.yaml end to end: against the scripted loopback server playing agent, user
simulator and judge (a good agent passes every row, a bad one fails each row for its own reason), and offline
from its recording of a real small model playing all three roles."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.helpers import read_jsonl, run_cli
from tests.scripted_server import (
    Reply,
    ScriptedServer,
    call,
    is_judge,
    last_user,
    steps_since_user,
    text,
)

SUITE = "suites/simulated_users.yaml"
RECORDING = "suites/simulated_users.recording.jsonl"
STOP = "###STOP###"

Steps = list[dict[str, Any]]

# The good agent: the latest user message (a key found in it) -> one reply per agent step
GOOD_AGENT: dict[str, Steps] = {
    "my kettle broke": [text("Sorry about the kettle! What is your order number?")],
    "12345": [call("get_order", {"order_id": "12345"}), call("issue_refund", {"order_id": "12345", "amount": 40}),
              text("Done: I refunded $40 for the kettle of order 12345.")],
    "One of my orders arrived broken": [
        call("find_orders", {"email": "lee@example.com"}),
        text("I see order 30001, an electric kettle for $40. Shall I refund that one?")],
    "wrong one": [call("issue_refund", {"order_id": "30002", "amount": 25}),
                  text("Sorry! I refunded $25 for the toaster, order 30002.")],
    "where is my blender": [text("Let me check. What is your order number?")],
    "40001": [call("get_order", {"order_id": "40001"}), text("Order 40001, your blender, has shipped.")],
    "coffee grinder last week": [text("Happy to help. What is the order number?")],
    "order 50001": [call("get_order", {"order_id": "50001"}),
                    text("Order 50001 has shipped but is not delivered yet, so I cannot refund it now. Once it "
                         "arrives you can ask again for a refund.")],
    "what can I do": [text("Once the grinder is delivered, write to us and we refund the $35 in full.")],
    # the users' last words (before ###STOP###) are sent too, and answered
    "Thanks!": [text("You're welcome!")],
    "thank you": [text("You're welcome!")],
    "Bye": [text("Goodbye, and sorry for the wait.")],
}

# The good users: the sample (from the request's `user` field) and a key found in the agent's latest reply ->
# the user's next message
GOOD_USERS: dict[str, dict[str, str]] = {
    "ask-for-order-id": {"order number": "12345", "refunded $40": f"Thanks! {STOP}"},
    "corrects-the-agent": {"30001": "No, that's the wrong one: it's the toaster, order 30002.",
                           "refunded $25": f"Great, thank you. {STOP}"},
    "impatient-user": {"order number": "40001", "has shipped": STOP},
    "scripted-then-simulated": {"cannot refund it now": "OK. So what can I do instead?",
                                "refund the $35": f"Fine, I'll wait. Bye. {STOP}"},
}


def sample_of(body: dict[str, Any]) -> str | None:
    """The sample a user simulator request is for (its OpenAI `user` field), None for other requests."""
    tag = str(body.get("user") or "")
    return tag.split(":")[1] if tag.startswith("evals-sim:") else None


def verdict(passed: bool, turn: int | None = None, reason: str = "scripted verdict") -> dict[str, Any]:
    body: dict[str, Any] = {"reason": reason, "verdict": "pass" if passed else "fail"}
    if turn is not None:
        body["turn_of_success"] = turn
    return text(json.dumps(body))


def judge_prompt(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content") or "") for m in body.get("messages") or [])


Judge = Callable[[dict[str, Any]], Any]


def judge_by(goals: dict[str, tuple[bool, int | None]], bad_reply: str | None = None) -> Judge:
    """Goal-completion verdicts by a key found in the goal the prompt names; a reply judged fails when it holds
    `bad_reply`."""

    def judge(body: dict[str, Any]) -> Any:
        prompt = judge_prompt(body)
        if "turn_of_success" in prompt:
            for key, (passed, turn) in goals.items():
                if key in prompt:
                    return verdict(passed, turn if passed else None)
            return Reply({"error": {"message": "no goal scripted"}}, status=500)
        reply = prompt.rsplit("The agent's reply:", 1)[-1]
        return verdict(bad_reply is None or bad_reply not in reply)

    return judge


def script(agent: dict[str, Steps], users: dict[str, dict[str, str]], judge: Judge) -> Any:
    """The scripted server's answer to any request: agent, user simulator or judge."""

    def answer(path: str, body: dict[str, Any]) -> Any:
        if is_judge(body):
            return judge(body)
        sample = sample_of(body)
        latest = last_user(body)
        if sample is not None:
            for key, line in users.get(sample, {}).items():
                if key in latest:
                    return text(line)
            return Reply({"error": {"message": f"no user line for {sample}: {latest[:80]!r}"}}, status=400)
        for key, steps in agent.items():
            if key in latest:
                return steps[min(steps_since_user(body), len(steps) - 1)]
        return Reply({"error": {"message": f"no agent script for {latest[:80]!r}"}}, status=400)

    return answer


def run_suite(server: ScriptedServer, tmp: Path, *extra: str) -> tuple[int, dict[str, dict[str, Any]], str]:
    out = tmp / "out"
    result = run_cli("run", SUITE, "-o", str(out), *extra, env={"EVAL_AGENT_BASE_URL": server.url})
    assert "Traceback" not in result.stderr, result.stderr
    lines = {r["sample_id"]: r for r in read_jsonl(out / "results.jsonl")}
    return result.returncode, lines, result.stdout + result.stderr


def users_said(line: dict[str, Any]) -> list[tuple[str | None, str | None]]:
    return [(t["user_source"], t["user"]) for t in line["trajectory"]["turns"]]


def failed_graders(line: dict[str, Any]) -> set[str]:
    """The graders that failed the sample on their own (required ones under their mark)."""
    return {f["grader"] for f in line["failed_by"] if f.get("grader")}


def low_grades(line: dict[str, Any]) -> set[str]:
    """Every grader that scored this sample 0 (required or not)."""
    return {name for name, grade in line["grades"].items() if grade["score"] == 0.0}


def test_the_suite_validates_offline() -> None:
    result = run_cli("validate", SUITE)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 samples" in result.stdout


GOOD_GOALS = {"order 12345": (True, 2), "toaster refunded": (True, 2), "blender": (True, 2),
              "order 50001": (True, 2)}


def test_a_good_agent_passes_every_row_and_the_users_end_the_conversations(server: ScriptedServer,
                                                                           tmp_path: Path) -> None:
    server.script = script(GOOD_AGENT, GOOD_USERS, judge_by(GOOD_GOALS))
    recording = tmp_path / "good.recording.jsonl"
    code, lines, output = run_suite(server, tmp_path, "--record", str(recording))
    assert code == 0, output
    assert set(lines) == {"ask-for-order-id", "corrects-the-agent", "impatient-user", "scripted-then-simulated"}
    for line in lines.values():
        assert line["error"] is None and line["passed"] is True, (line["sample_id"], line["failed_by"])
        assert line["trajectory"]["end_reason"] == "user_done"
    # `knows`: the order number came from the simulator once the agent asked for it
    assert users_said(lines["ask-for-order-id"]) == [("scripted", "my kettle broke, I want my money back"),
                                                     ("simulated", "12345"), ("simulated", "Thanks!")]
    assert lines["ask-for-order-id"]["trajectory"]["turns"][-1]["user"] == "Thanks!"  # last words: sent
    assert lines["ask-for-order-id"]["trajectory"]["turns"][-1]["steps"][-1]["content"] == "You're welcome!"
    # the correction reached the agent, which then refunded the toaster and left the kettle alone
    assert users_said(lines["corrects-the-agent"])[1] == (
        "simulated", "No, that's the wrong one: it's the toaster, order 30002.")
    # the hybrid: two scripted messages, then the simulator
    assert [s for s, _ in users_said(lines["scripted-then-simulated"])] == ["scripted", "scripted", "simulated",
                                                                            "simulated"]
    goal = lines["ask-for-order-id"]["grades"]["goal"]
    assert goal["score"] == 1.0 and goal["metadata"]["turn_of_success"] == 2
    replies = lines["ask-for-order-id"]["grades"]["replies"]
    assert replies["score"] == 1.0
    # the recording covers agent, simulator and judge: replayed with the server answering nothing, the same
    # conversations and verdicts
    server.script = lambda path, body: Reply({"error": {"message": "down"}}, status=500)
    server.requests.clear()
    code, replayed, output = run_suite(server, tmp_path / "replayed", "--replay", str(recording))
    assert code == 0, output
    assert server.requests == []
    for sample_id, line in lines.items():
        again = replayed[sample_id]
        assert users_said(again) == users_said(line) and again["passed"] is True
        assert {g: v["score"] for g, v in again["grades"].items()} == {g: v["score"] for g, v in line["grades"].items()}


# The bad agent: guesses the amount, refunds the wrong order before asking, asks twice for the order number,
# refunds an order that is not delivered
BAD_AGENT: dict[str, Steps] = {
    "my kettle broke": [call("issue_refund", {"order_id": "12345", "amount": 50}),
                        text("I refunded $50 for your kettle, order 12345.")],
    "One of my orders arrived broken": [call("find_orders", {"email": "lee@example.com"}),
                                        call("issue_refund", {"order_id": "30001", "amount": 40}),
                                        text("I refunded $40 for order 30001, the electric kettle.")],
    "wrong one": [call("issue_refund", {"order_id": "30002", "amount": 25}),
                  text("Then I refunded $25 for the toaster too.")],
    "where is my blender": [text("Let me check. What is your order number?")],
    "40001": [text("Could you tell me your order number again?")],
    "coffee grinder last week": [text("Happy to help. What is the order number?")],
    "order 50001": [call("get_order", {"order_id": "50001"}), call("issue_refund", {"order_id": "50001", "amount": 35}),
                    text("Done, I refunded $35 for order 50001.")],
    "Really": [text("Yes, it is refunded.")],
    "ok thanks": [text("You're welcome.")],
    "forget it": [text("Sorry about that.")],
}
BAD_USERS: dict[str, dict[str, str]] = {
    "ask-for-order-id": {"refunded $50": f"ok thanks {STOP}"},
    "corrects-the-agent": {"30001": "No, that's the wrong one: it's the toaster, order 30002.",
                           "toaster too": STOP},
    "impatient-user": {"order number again": f"I already told you that, forget it {STOP}",
                       "order number": "40001"},
    # never satisfied: the conversation runs to max_turns (4: two scripted messages, two simulated)
    "scripted-then-simulated": {"refunded": "Really? Even though it has not arrived?"},
}
BAD_GOALS = {"order 12345": (False, None), "toaster refunded": (False, None), "blender": (False, None),
             "order 50001": (True, 2)}


def test_a_bad_agent_fails_each_row_for_its_own_reason(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = script(BAD_AGENT, BAD_USERS, judge_by(BAD_GOALS, bad_reply="order number again"))
    code, lines, output = run_suite(server, tmp_path)
    assert code == 1, output
    assert all(line["error"] is None and line["passed"] is False for line in lines.values())
    # a guessed amount: the refund's arguments and the order it left say so
    guess = lines["ask-for-order-id"]
    assert failed_graders(guess) == {"calls", "final_state"} and low_grades(guess) == {"calls", "final_state", "goal"}
    assert "refunded_amount is 50, expected 40" in guess["grades"]["final_state"]["rationale"]
    # the user corrected the agent, which then refunded the right order too: the call the row expects was made,
    # but the kettle the agent refunded first is still refunded
    corrected = lines["corrects-the-agent"]
    assert corrected["grades"]["calls"]["score"] == 1.0
    assert failed_graders(corrected) == {"final_state"} and low_grades(corrected) == {"final_state", "goal"}
    assert "orders/30001" in corrected["grades"]["final_state"]["rationale"]
    assert users_said(corrected)[1][0] == "simulated" and corrected["trajectory"]["end_reason"] == "user_done"
    # asked twice for the order number: the impatient user gave up; the reply asking again failed its own grade
    impatient = lines["impatient-user"]
    assert impatient["trajectory"]["end_reason"] == "user_done"
    assert impatient["trajectory"]["turns"][-1]["user"] == "I already told you that, forget it"  # sent, answered
    assert impatient["grades"]["replies"]["score"] == 2 / 3  # 2 of 3 replies passed: under min_share 0.75
    assert failed_graders(impatient) == {"replies", "calls"} and low_grades(impatient) == {"goal", "calls"}
    assert impatient["grades"]["goal"]["metadata"]["goal_met"] is False
    # a refund of an order not yet delivered: forbidden, and the state shows it; the user never stopped
    hybrid = lines["scripted-then-simulated"]
    assert failed_graders(hybrid) == low_grades(hybrid) == {"forbidden_tools", "final_state"}
    assert hybrid["trajectory"]["end_reason"] == "max_turns"
    assert [s for s, _ in users_said(hybrid)] == ["scripted", "scripted", "simulated", "simulated"]


def test_a_user_simulator_out_of_character_errors_its_sample_and_scores_nothing(server: ScriptedServer,
                                                                                tmp_path: Path) -> None:
    # the simulator answers as the assistant would, and again when told it broke character
    users = {**GOOD_USERS, "impatient-user": {"order number": "How can I help you today?",
                                              "not a user's message": "How can I help you today?"}}
    server.script = script(GOOD_AGENT, users, judge_by(GOOD_GOALS))
    code, lines, output = run_suite(server, tmp_path)
    impatient = lines["impatient-user"]
    assert impatient["passed"] is not True and impatient["error"] is not None, impatient
    assert impatient["error"]["category"] == "user_simulator"
    assert "broke character twice" in impatient["error"]["message"]
    assert impatient["trajectory"]["end_reason"] == "user_error"
    # asked once more, saying what was wrong, then given up
    asked = [r["body"] for r in server.requests if sample_of(r["body"]) == "impatient-user"]
    assert len(asked) == 2 and "not a user's message" in last_user(asked[1])
    assert not impatient["grades"] or all(g["score"] is None for g in impatient["grades"].values())
    assert all(lines[i]["passed"] for i in ("ask-for-order-id", "corrects-the-agent", "scripted-then-simulated"))
    assert code != 0, output


def test_the_real_model_recording_replays_offline_with_its_verdicts(tmp_path: Path) -> None:
    # agent, user simulator and judge all fall back to a closed port: every answer must come from the recording
    result = run_cli("run", SUITE, "--replay", RECORDING, "-o", str(tmp_path / "out"),
                     env={"EVAL_AGENT_BASE_URL": "http://127.0.0.1:9/v1"})
    assert result.returncode == 1, result.stdout + result.stderr
    lines = {r["sample_id"]: r for r in read_jsonl(tmp_path / "out" / "results.jsonl")}
    assert len(lines) == 4 and all(r["error"] is None and r["passed"] is False for r in lines.values())
    assert "4 samples: 0 passed, 4 failed, 0 errored" in result.stdout
    # Qwen2.5-Coder-1.5B as the agent (README, "Simulated users"): it never looks an order up, so the required
    # tool_args grade fails every row
    assert all(r["grades"]["calls"]["score"] == 0.0 and "calls" in failed_graders(r) for r in lines.values())
    # knows: the agent asked for the order id and the simulated user gave it; then the agent refused without
    # looking it up ("not delivered yet", which is false) and the user stopped
    asked = lines["ask-for-order-id"]
    assert users_said(asked) == [("scripted", "my kettle broke, I want my money back"), ("simulated", "12345")]
    assert asked["trajectory"]["turns"][0]["steps"][0]["content"] == "To refund your money, please provide the order ID."
    assert asked["trajectory"]["end_reason"] == "user_done" and asked["trajectory"]["closing_user"] is None
    assert "orders/12345: status is 'delivered', expected 'refunded'" in asked["grades"]["final_state"]["rationale"]
    # the agent refunded an order id it made up (the tool said not found); the user corrected it with 30002, then
    # the simulator echoed the agent's own words until max_turns
    corrected = lines["corrects-the-agent"]
    [refund] = corrected["trajectory"]["turns"][0]["steps"][0]["tool_calls"]
    assert (refund["name"], refund["arguments"]["order_id"]) == ("issue_refund", "1234567890")
    assert refund["is_error"] is True and "not found" in refund["result"]
    said = users_said(corrected)
    assert [s for s, _ in said] == ["scripted", "simulated", "simulated", "simulated"]
    assert "30002" in (said[1][1] or "") and corrected["trajectory"]["end_reason"] == "max_turns"
    assert said[2][1] == corrected["trajectory"]["turns"][1]["steps"][-1]["content"]  # the echo, as recorded
    # the impatient user stopped at once when the agent said it could not help
    impatient = lines["impatient-user"]
    assert users_said(impatient) == [("scripted", "where is my blender??")]
    assert impatient["trajectory"]["end_reason"] == "user_done"
    assert impatient["grades"]["goal"]["score"] == 0.0 and impatient["grades"]["final_state"]["score"] == 1.0
    # the hybrid: two scripted messages, then the simulator asked what else it could do and said goodbye; its
    # last words were sent and the agent answered them (the model's own reply, recorded with them); the judge
    # called the goal met at turn 2, but no lookup was made: the required calls grade fails the sample
    hybrid = lines["scripted-then-simulated"]
    assert [s for s, _ in users_said(hybrid)] == ["scripted", "scripted", "simulated", "simulated"]
    assert hybrid["trajectory"]["end_reason"] == "user_done" and hybrid["trajectory"]["closing_user"] is None
    last = hybrid["trajectory"]["turns"][-1]
    assert last["user"] == "Thank you. I'll return it to you as soon as possible."
    assert last["steps"][-1]["content"] == "You're welcome! We'll get your coffee grinder back to you as soon as possible."
    goal = hybrid["grades"]["goal"]
    assert goal["score"] == 1.0 and goal["metadata"]["goal_met"] is True and goal["metadata"]["turn_of_success"] == 2
    assert failed_graders(hybrid) == {"calls"}
    # the small judge passed every reply; the goal judge failed the three other conversations
    assert all(r["grades"]["replies"]["score"] == 1.0 for r in lines.values())
    assert [lines[i]["grades"]["goal"]["score"] for i in ("ask-for-order-id", "corrects-the-agent",
                                                         "impatient-user")] == [0.0, 0.0, 0.0]
    # the simulator's calls came from the recording too, counted as its own
    assert all(r["trajectory"]["user_calls"] >= 1 and r["trajectory"]["user_usage"]["prompt_tokens"] > 0
               for r in lines.values())


def test_the_recorded_users_held_constant_against_another_agent(server: ScriptedServer, tmp_path: Path) -> None:
    # the real model's conversations, replayed offline into a run folder: the users to hold constant
    recorded = tmp_path / "recorded"
    first = run_cli("run", SUITE, "--replay", RECORDING, "-o", str(recorded),
                    env={"EVAL_AGENT_BASE_URL": "http://127.0.0.1:9/v1"})
    assert first.returncode == 1, first.stdout + first.stderr
    # another agent (the scripted good one) answers the recorded users' opening differently: each conversation
    # leaves the recorded path at turn 1 and, with --on-divergence stop, ends there without asking the simulator
    server.script = script(GOOD_AGENT, GOOD_USERS, judge_by(GOOD_GOALS))
    code, lines, output = run_suite(server, tmp_path, "--replay-user", str(recorded), "--on-divergence", "stop")
    assert not [r for r in server.requests if sample_of(r["body"])], "the user simulator was asked"
    for line in lines.values():  # cut short: no verdict either way, and the run says why
        assert line["passed"] is None and "left the recorded user's path at turn 1" in line["error"]["message"]
        assert line["trajectory"]["end_reason"] == "diverged"
        assert line["trajectory"]["diverged_at"] == 1
    assert [s for s, _ in users_said(lines["scripted-then-simulated"])] == ["replayed"]
    # with the default (continue), the simulator takes over where the path was left, and the good agent passes
    server.requests.clear()
    code, lines, output = run_suite(server, tmp_path / "continued", "--replay-user", str(recorded))
    assert code == 0, output
    assert users_said(lines["ask-for-order-id"]) == [("replayed", "my kettle broke, I want my money back"),
                                                     ("simulated", "12345"), ("simulated", "Thanks!")]
    assert all(r["passed"] and r["trajectory"]["end_reason"] == "user_done" for r in lines.values())
