"""Judge-based session metrics against the scripted OpenAI-compatible server (the real openai client over
loopback; no SDK mocks): one question per call, combined with the deterministic parts, failures left null."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evals_cli.analyze import analyze_command
from evals_cli.runner.run import run_sessions
from evals_cli.sessions.options import SessionsOptions
from evals_cli.sessions.outcome import SessionsOutcome
from evals_cli.sessions.spec import RecordedSessionsTarget
from evals_cli.sessions.suite import SessionsSuiteSpec
from tests.scripted_server import Reply, ScriptedServer, is_judge, judge_score, text

ROOT = Path(__file__).resolve().parent.parent
LINES = {json.loads(x)["id"]: x for x in (ROOT / "datasets" / "multi_agent_sessions.jsonl").read_text().splitlines()}
HEADER = re.compile(r"Metric: (\w+)\nSession: ([\w-]+)(?:, turn (\d+))?(?:, agent (\w+))?")
Answer = Callable[[str, str, int | None, str | None], Any]


def reply(metric: str, value: Any, reason: str = "scripted") -> dict[str, Any]:
    if metric == "turn":
        return text(json.dumps({"reason": reason, "choice": value}))
    if metric == "task_completion":
        return text(json.dumps({"reason": reason, "verdict": value}))
    return judge_score(value, reason)


def judge(answer: Answer) -> Callable[[str, dict[str, Any]], Any]:
    def script(path: str, body: dict[str, Any]) -> Any:
        if not is_judge(body):
            return Reply({"error": {"message": "only judge calls expected"}}, status=500)
        found = HEADER.search(body["messages"][1]["content"])
        assert found is not None, body["messages"][1]["content"][:200]
        metric, session, turn, agent = found.groups()
        value = answer(metric, session, int(turn) if turn else None, agent)
        return value if isinstance(value, Reply | dict) else reply(metric, value)

    return script


def header(request: dict[str, Any]) -> tuple[str, ...]:
    found = HEADER.search(request["body"]["messages"][1]["content"])
    assert found is not None
    return found.groups()


def sessions_file(tmp_path: Path, *ids: str) -> Path:
    path = tmp_path / "sessions.jsonl"
    path.write_text("".join(LINES[i] + "\n" for i in ids), encoding="utf-8")
    return path


def run(server: ScriptedServer, tmp_path: Path, *ids: str, target: dict[str, Any] | None = None,
        **options: Any) -> SessionsOutcome:
    suite = SessionsSuiteSpec(name="t", dataset=str(sessions_file(tmp_path, *ids)),
                              target=RecordedSessionsTarget.model_validate(target or {}))
    settings = {"output": tmp_path / "out", "judge_model": "scripted", "judge_base_url": server.url,
                "judge_api_key": "sk-test", "max_retries": 0, "timeout": 10, **options}
    return run_sessions(suite, SessionsOptions(**settings))


FIXED = {"tool_use": 8, "reasoning": 6, "handoff": 10, "response_quality": 7, "turn": "good", "coordination": 9,
         "intent_drift": 8, "task_completion": "pass"}


def test_each_metric_is_one_fenced_question_and_combines_with_the_deterministic_part(server: ScriptedServer,
                                                                                     tmp_path: Path) -> None:
    server.script = judge(lambda metric, *_: FIXED[metric])
    outcome = run(server, tmp_path, "refund-clean")
    [a] = outcome.analyses
    asked = sorted(header(r)[0] + (f"/{header(r)[3]}" if header(r)[3] else "") + (f"/t{header(r)[2]}" if header(r)[2]
                   else "") for r in server.judge_requests())
    assert asked == sorted(["reasoning/planner/t1", "handoff/planner/t1", "response_quality/planner/t1",
                            "tool_use/executor/t1", "reasoning/executor/t1", "response_quality/executor/t1",
                            "response_quality/planner/t2", "turn/t1", "turn/t2", "coordination", "intent_drift",
                            "task_completion"])  # tool use not asked for the tool-less planner, nor handoff for the last
    planner, executor = a.turn_results[0].interactions
    assert (planner.reasoning_score, planner.handoff_score, planner.response_quality) == (0.6, 1.0, 0.7)
    assert planner.score == pytest.approx((0.25 * 0.6 + 0.20 * 1.0 + 0.20 * 0.7) / 0.65, abs=1e-6)
    assert executor.tool_use_score == pytest.approx(0.9)  # mean of deterministic 1.0 and judged 0.8
    assert executor.score == pytest.approx((0.35 * 0.9 + 0.25 * 0.6 + 0.20 * 0.7) / 0.80, abs=1e-6)
    assert a.coordination.judge_score == 0.9 and a.coordination_score == pytest.approx(0.95)
    assert a.intent_drift_score == pytest.approx(0.2)  # asked as focus 8/10, inverted
    assert (a.task_completion, a.task_completion_source) == (True, "judge")
    assert a.overall_score == pytest.approx(0.30 * 1 + 0.25 * 0.9 + 0.20 * 0.95 + 0.15 * 0.6 + 0.10 * 0.8)
    assert [t.confidence for t in a.turn_results] == [0.9, 0.9]
    assert (a.judge.model, a.judge.calls, a.judge.errors, a.judge.prompt_tokens) == ("scripted", 12, [], 120)
    for request in server.judge_requests():
        body = request["body"]
        user = body["messages"][1]["content"]
        nonce = user.split(">", 1)[0].removeprefix("<data-")
        assert len(nonce) == 10 and user.rstrip().endswith(f"</data-{nonce}>")
        assert f"<data-{nonce}>" in body["messages"][0]["content"] and body["temperature"] == 0
        key = {"turn": "choice", "task_completion": "verdict"}.get(header(request)[0], "score")
        assert body["response_format"]["json_schema"]["schema"]["required"] == ["reason", key]
        instruction = {"choice": '"choice": "good" or "ccm" or "rdm" or "hallucination" or "bad"',
                       "verdict": '"verdict": "pass" or "fail"', "score": '"score": <an integer from 1'}[key]
        assert instruction in body["messages"][0]["content"]  # the judge is told the answer format
        assert request["headers"]["authorization"] == "Bearer sk-test"
    handoff = next(r for r in server.judge_requests() if header(r)[0] == "handoff")["body"]["messages"][1]["content"]
    assert "Agent planner handed the work to executor" in handoff and "[planner → executor handoff context]" in handoff


def test_the_turn_judge_confirms_rejects_and_adds_detections(server: ScriptedServer, tmp_path: Path) -> None:
    labels = {("refund-user-corrects", 1): "rdm", ("refund-user-reasks", 1): "good",
              ("refund-lost-handoff", 1): "bad", ("refund-hallucinated-answer", 1): "hallucination"}

    def answer(metric: str, session: str, turn: int | None, agent: str | None) -> Any:
        return labels.get((session, turn), "good") if metric == "turn" else FIXED[metric]

    server.script = judge(answer)
    outcome = run(server, tmp_path, *sorted({s for s, _ in labels}))
    turns = {a.session_id: a.turn_results[0] for a in outcome.analyses}
    corrected = turns["refund-user-corrects"]
    assert (corrected.is_bad, corrected.detection_type, corrected.confidence) == (True, "rdm", 0.95)  # 0.9 → halfway to 1
    assert "judge agrees" in corrected.reason
    reasked = turns["refund-user-reasks"]
    assert (reasked.is_bad, reasked.detection_type) == (False, "none") and reasked.reason.startswith("judge rejected")
    lost = turns["refund-lost-handoff"]
    assert (lost.is_bad, lost.detection_type, lost.confidence) == (True, "llm_judge", 0.7)
    assert [d.source for d in lost.detections] == ["judge"]
    invented = turns["refund-hallucinated-answer"]
    assert (invented.detection_type, invented.confidence) == ("hallucination", pytest.approx(0.933, abs=1e-3))
    summary = outcome.summary
    assert summary is not None and summary.conversation.llm_judge_detections == 1
    assert summary.conversation.ccm_detections == 0 and summary.conversation.rdm_detections == 1


def test_a_failed_judge_call_leaves_its_metric_null_never_zero(server: ScriptedServer, tmp_path: Path) -> None:
    def answer(metric: str, *_: Any) -> Any:
        if metric == "reasoning":
            return Reply({"error": {"message": "overloaded"}}, status=503)
        if metric == "response_quality":
            return text("I would rather not grade this.")
        return FIXED[metric]

    server.script = judge(answer)
    outcome = run(server, tmp_path, "refund-clean")
    [a] = outcome.analyses
    planner = a.turn_results[0].interactions[0]
    assert (planner.reasoning_score, planner.response_quality, planner.handoff_score) == (None, None, 1.0)
    assert planner.score == 1.0  # only the handoff applies now: renormalised, not dragged to 0
    assert a.reasoning_score is None and a.overall_score is not None
    assert len(a.judge.errors) == 5 and any("agent planner, reasoning" in e and "503" in e for e in a.judge.errors)
    assert any("no score found" in e for e in a.judge.errors)
    assert outcome.exit_code == 3 and "judge calls gave no verdict" in outcome.messages[0]  # 5/12 > 0.2
    assert run(server, tmp_path, "refund-clean", max_error_rate=0.5, output=tmp_path / "o2").exit_code == 0


def test_refused_structured_output_steps_down_and_is_remembered(server: ScriptedServer, tmp_path: Path) -> None:
    def script(path: str, body: dict[str, Any]) -> Any:
        if body.get("response_format", {}).get("type") == "json_schema":
            return Reply({"error": {"message": "response_format unsupported"}}, status=400)
        return judge(lambda metric, *_: FIXED[metric])(path, body)

    server.script = script
    outcome = run(server, tmp_path, "refund-clean", target={"judge_concurrency": 1})
    assert outcome.analyses[0].judge.errors == []
    modes = [r["body"].get("response_format", {}).get("type") for r in server.judge_requests()]
    assert modes.count("json_schema") == 1 and modes.count("json_object") == 12


def test_judge_calls_are_bounded_by_judge_concurrency(server: ScriptedServer, tmp_path: Path) -> None:
    lock, live, peak = threading.Lock(), [0], [0]
    inner = judge(lambda metric, *_: FIXED[metric])

    def script(path: str, body: dict[str, Any]) -> Any:
        with lock:
            live[0] += 1
            peak[0] = max(peak[0], live[0])
        time.sleep(0.03)
        with lock:
            live[0] -= 1
        return inner(path, body)

    server.script = script
    outcome = run(server, tmp_path, *LINES, target={"judge_concurrency": 3})
    assert outcome.exit_code in (0, 1) and len(outcome.analyses) == 8
    assert peak[0] == 3


def test_a_metric_switched_off_is_not_asked(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = judge(lambda metric, *_: FIXED[metric])
    off = {"judge_metrics": {"reasoning": False, "turn": False, "task_completion": False}}
    [a] = run(server, tmp_path, "refund-clean", target=off).analyses
    assert {header(r)[0] for r in server.judge_requests()} == {"tool_use", "handoff", "response_quality",
                                                               "coordination", "intent_drift"}
    assert a.reasoning_score is None and a.task_completion_source == "deterministic"


@pytest.mark.parametrize(("base_url", "status", "expected"), [
    ("http://127.0.0.1:9/v1", None, "cannot reach"),
    (None, 401, "refused the API key"),
])
def test_an_unusable_judge_stops_the_run_with_exit_3(server: ScriptedServer, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str], base_url: str | None,
                                                    status: int | None, expected: str) -> None:
    server.script = lambda path, body: Reply({"error": {"message": "bad key"}}, status=status or 500)
    code = analyze_command(sessions_file(tmp_path, *LINES), tmp_path / "out", judge_model="m",
                           judge_base_url=base_url or server.url)
    assert code == 3
    err = capsys.readouterr().err
    assert expected in err and "--judge-" in err and err.count("error:") == 1  # names the flag to fix
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["status"] == "aborted" and summary["exit_code"] == 3


def test_record_then_replay_gives_the_same_analysis(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = judge(lambda metric, session, *_: 3 if metric == "handoff" else FIXED[metric])
    recording = tmp_path / "judge.recording.jsonl"
    first = run(server, tmp_path, "refund-clean", "refund-user-corrects", record=recording, output=tmp_path / "a")
    calls = len(server.requests)
    again = run(server, tmp_path, "refund-clean", "refund-user-corrects", replay=recording, output=tmp_path / "b",
                judge_base_url="http://127.0.0.1:9/v1")
    assert [a.model_dump(exclude={"judge"}) for a in again.analyses] == \
        [a.model_dump(exclude={"judge"}) for a in first.analyses]
    assert len(server.requests) == calls and again.analyses[0].judge.calls == first.analyses[0].judge.calls
    assert again.analyses[0].turn_results[0].interactions[0].handoff_score == pytest.approx(0.65)  # (1.0 + 0.3) / 2
