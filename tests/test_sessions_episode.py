"""A recorded session is an episode of the common pipeline: its trajectory is the recording replayed (turns, each
agent's steps, tool calls with their recorded results, handoffs), and its detectors and scores are graders of the
grader registry, graded from the sample like every other kind: the scores read the analysis the sessions run
made, which the sample carries."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from evals_cli.graders.base import GRADERS, GradeContext, GraderContext
from evals_cli.models.results import Grade, SampleResult
from evals_cli.models.sample import Sample
from evals_cli.models.trajectory import Step, Trajectory
from evals_cli.sessions.analysis import analyze_session
from evals_cli.sessions.episode import recorded_session, session_analysis, session_sample, session_trajectory
from evals_cli.sessions.reader import iter_sessions
from evals_cli.sessions.results import SessionAnalysis
from evals_cli.sessions.spec import RecordedSessionsTarget

ROOT = Path(__file__).resolve().parent.parent
SESSIONS = {s.id: s for s in iter_sessions(ROOT / "datasets" / "multi_agent_sessions.jsonl")}


def analysed(session_id: str) -> SessionAnalysis:
    """The analysis a sessions run without a judge makes of the session (default target)."""
    return asyncio.run(analyze_session(SESSIONS[session_id], RecordedSessionsTarget()))


def grade(spec: dict[str, Any], session_id: str | None, analysis: SessionAnalysis | None = None) -> Grade:
    """The grade of the sample the sessions run builds: the recording with its analysis (`analysis`, else the
    run's without a judge)."""
    entry = GRADERS[spec["kind"]]
    grader = entry.impl("g", entry.spec.model_validate(spec), GraderContext(base_dir=ROOT))
    if session_id is None:
        sample, trajectory = Sample(id="live", input="hi"), Trajectory()
    else:
        session = SESSIONS[session_id]
        sample = session_sample(session, analysis or analysed(session_id))
        trajectory = session_trajectory(session)
    ctx = GradeContext(sample=sample, trajectory=trajectory, view=trajectory, turn=None, ground_truth=None)
    return asyncio.run(grader.grade(ctx))


def test_the_trajectory_replays_turns_agents_calls_results_and_handoffs() -> None:
    session = SESSIONS["refund-clean"]
    trajectory = session_trajectory(session)
    assert [t.user for t in trajectory.turns] == [t.user_message for t in session.turns]
    assert [t.answer for t in trajectory.turns] == [t.final_response for t in session.turns]
    first = session.turns[0]
    recorded_calls = [(c.tool_name, c.parameters, c.result) for i in first.agent_interactions for _, c in i.tool_calls]
    replayed = [(c.name, c.arguments, json.loads(c.result)) for c in trajectory.turns[0].tool_calls]
    assert replayed == recorded_calls and replayed
    agents = [s.agent for s in trajectory.turns[0].steps]
    assert set(agents) >= {i.agent_id for i in first.agent_interactions}
    handoffs = [(s.agent, s.handoff_to) for s in trajectory.turns[0].steps if s.handoff_to]
    assert handoffs == [(i.agent_id, i.handoff_to) for i in first.agent_interactions if i.handoff_to]


def test_a_recorded_trajectory_survives_the_results_file_and_a_live_step_keeps_its_shape() -> None:
    session = SESSIONS["refund-clean"]
    result = SampleResult(sample_id=session.id, trajectory=session_trajectory(session))
    back = SampleResult.model_validate_json(result.model_dump_json())
    assert back.trajectory == result.trajectory
    assert "agent" not in Step(content="hi").model_dump() and "handoff_to" not in Step().model_dump_json()


def test_the_sample_carries_the_recording_and_its_analysis() -> None:
    session = SESSIONS["refund-user-reasks"]
    sample = session_sample(session)
    assert sample.id == session.id and sample.input == [t.user_message for t in session.turns]
    assert recorded_session(sample) == session and session_analysis(sample) is None
    assert recorded_session(Sample(id="x", input="hi")) is None
    analysis = analysed(session.id)
    assert session_analysis(session_sample(session, analysis)) == analysis


@pytest.mark.parametrize(("detector", "session_id", "score"), [
    ("unauthorized_tool", "refund-unauthorized-tool", 0.0),
    ("unauthorized_tool", "refund-clean", 1.0),
    ("hallucinated_parameter", "refund-hallucinated-parameter", 0.5),
    ("hallucinated_parameter", "refund-clean", 1.0),
    ("ccm", "refund-user-reasks", 0.0),
    ("ccm", "refund-clean", 1.0),
    ("rdm", "refund-user-corrects", 0.0),
    ("rdm", "refund-user-reasks", 1.0),
    ("hallucination", "refund-hallucinated-answer", 0.0),
    ("hallucination", "refund-clean", 1.0),
])
def test_each_detector_is_a_registered_grader(detector: str, session_id: str, score: float) -> None:
    found = grade({"kind": "session_detector", "detector": detector}, session_id)
    assert found.applicable and found.score == score
    if score < 1:
        assert detector in found.rationale


def test_a_detector_with_nothing_to_check_is_not_applicable_never_a_zero() -> None:
    one_turn = grade({"kind": "session_detector", "detector": "ccm"}, "refund-unauthorized-tool")
    assert not one_turn.applicable and one_turn.score == 1.0
    live = grade({"kind": "session_detector", "detector": "rdm"}, None)
    assert not live.applicable and "not a recorded session" in live.rationale


def test_turn_detectors_grade_each_turn() -> None:
    found = grade({"kind": "session_detector", "detector": "ccm"}, "refund-user-reasks")
    assert found.per_turn_grades is not None
    assert [(t.turn, t.score) for t in found.per_turn_grades] == [(0, 0.0)]
    assert "re-asks" in found.per_turn_grades[0].rationale


def test_session_turn_and_agent_scores_are_the_analysis_scores() -> None:
    session = SESSIONS["refund-unauthorized-tool"]
    analysis = analysed(session.id)
    overall = grade({"kind": "session_score"}, session.id)
    assert overall.score == analysis.overall_score and overall.score is not None and overall.score < 1
    lowest = grade({"kind": "session_score", "level": "agent"}, session.id)
    low_agent = min(analysis.per_agent_scores.items(), key=lambda kv: kv[1].overall or 0)
    assert lowest.score == low_agent[1].overall and low_agent[0] in lowest.rationale
    turns = grade({"kind": "session_score", "level": "turn"}, "refund-user-reasks")
    assert turns.score == 0.5 and [t.score for t in turns.per_turn_grades or []] == [0.0, 1.0]
    done = grade({"kind": "session_score", "metric": "task_completion"}, "refund-clean")
    assert done.score == 1.0


def test_a_score_that_does_not_apply_is_not_a_zero() -> None:
    reasoning = grade({"kind": "session_score", "metric": "reasoning"}, "refund-clean")  # no judge: not measured
    assert not reasoning.applicable
    missing = grade({"kind": "session_score", "level": "agent", "agent": "nobody"}, "refund-clean")
    assert not missing.applicable
    live = grade({"kind": "session_score"}, None)
    assert not live.applicable and "not a recorded session" in live.rationale


def test_a_score_reads_the_analysis_it_is_handed_never_its_own() -> None:
    """A judged analysis is graded as judged: the score is the one the run computed, not a deterministic redo."""
    judged = analysed("refund-clean").model_copy(update={"reasoning_score": 0.25, "overall_score": 0.5})
    assert grade({"kind": "session_score", "metric": "reasoning"}, "refund-clean", judged).score == 0.25
    assert grade({"kind": "session_score"}, "refund-clean", judged).score == 0.5


def test_a_recording_without_its_analysis_is_an_error_never_a_score() -> None:
    session = SESSIONS["refund-clean"]
    ctx = GradeContext(sample=session_sample(session), trajectory=session_trajectory(session),
                       view=session_trajectory(session), turn=None, ground_truth=None)
    entry = GRADERS["session_score"]
    found = asyncio.run(entry.impl("g", entry.spec(), GraderContext(base_dir=ROOT)).grade(ctx))
    assert found.score is None and found.error is not None and "without its analysis" in found.error


def test_evals_run_on_recorded_sessions_writes_the_results_of_every_run(tmp_path: Path) -> None:
    """Sample results, a RunSummary, the common gate with the session gate's verdict, and JUnit like any run."""
    from evals_cli.models.results import RunSummary
    from evals_cli.sessions.results import analysis_of
    from evals_cli.thresholds import OPS
    from tests.helpers import run_cli

    out, junit = tmp_path / "out", tmp_path / "junit.xml"
    done = run_cli("run", "suites/multi_agent.yaml", "--no-judge", "-o", str(out), "--junit", str(junit))
    assert done.returncode == 1, done.stdout + done.stderr  # seven sessions are broken on purpose
    lines = [SampleResult.model_validate_json(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r.sample_id for r in lines] == list(SESSIONS)
    summary = RunSummary.model_validate_json((out / "summary.json").read_text())
    assert summary.total == 8 and summary.exit_code == 1 and summary.gate is not None and not summary.gate.passed
    analyses = [analysis_of(r) for r in lines]
    overall = [a.overall_score for a in analyses if a is not None and a.overall_score is not None]
    assert len(overall) == 8
    mean = sum(overall) / len(overall)  # the session gate's own check: mean overall_score >= 0.8 (the suite's)
    assert not OPS["gte"](mean, 0.8) and f"overall avg_score = {mean:.3f} not ≥ 0.8" in summary.gate.message
    clean = next(r for r in lines if r.sample_id == "refund-clean")
    assert clean.passed and clean.trajectory.final_answer == SESSIONS["refund-clean"].turns[-1].final_response
    broken = next(r for r in lines if r.sample_id == "refund-unauthorized-tool")
    assert broken.grades["unauthorized_tool"].score == 0.0 and not broken.passed
    assert junit.read_text().count("<testcase") == 8


def test_the_session_gate_becomes_the_common_gate() -> None:
    from evals_cli.sessions.common import gate_spec
    from evals_cli.sessions.spec import SessionGateSpec

    one = gate_spec(SessionGateSpec(min_overall_score=0.7))
    assert one.kind == "simple" and one.metric_key == "overall" and one.value == 0.7  # type: ignore[union-attr]
    every = gate_spec(SessionGateSpec(min_overall_score=None, min_task_completion_rate=0.9, min_agent_score=0.5))
    assert every.kind == "logical"
    assert [(g.metric_key, g.aggregation, g.value) for g in every.gates] == [  # type: ignore[union-attr]
        ("task_completion", "avg_score", 0.9), ("lowest_agent", "min", 0.5)]


def test_two_bad_calls_of_one_agent_in_one_turn_are_two() -> None:
    """Step indices restart in every interaction: the planner's unauthorized call before a handoff and its second
    one after it were counted as one (1/2 calls, score 0.5; found in review). Both are bad: 0.0."""
    session = SESSIONS["refund-unauthorized-tool"].model_copy(deep=True)
    turn = session.turns[0]
    first = turn.agent_interactions[0]
    turn.agent_interactions.append(first.model_copy(deep=True))  # the planner gets control back and calls again
    SESSIONS["twice"] = session
    try:
        graded = grade({"kind": "session_detector", "detector": "unauthorized_tool"}, "twice")
    finally:
        del SESSIONS["twice"]
    assert graded.score == 0.0 and graded.rationale.startswith("unauthorized_tool: 2/2 calls")


def test_the_library_run_of_a_recorded_sessions_suite_returns_the_common_summary(tmp_path: Path) -> None:
    """docs/python-api.md: `evals_cli.run` returns a `RunSummary` for every kind of suite, recorded sessions too."""
    import evals_cli
    from evals_cli.models.results import RunSummary

    outcome = evals_cli.run("suites/multi_agent.yaml", evals_cli.RunOptions(output=tmp_path / "out", no_judge=True))
    assert isinstance(outcome.summary, RunSummary) and outcome.summary.total == 8
    assert outcome.exit_code == 1 and outcome.summary.exit_code == 1
