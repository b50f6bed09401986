"""End to end on the shipped dataset and suite: `analyze_command` deterministic-only and with a scripted judge,
`run_sessions_suite` from the suite file and from the main SuiteSpec once RecordedSessionsTarget is in its
target union (simulated here exactly as the integration steps describe)."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import Field, ValidationInfo, field_validator

import evals_cli.suite.loader as loader
from evals_cli.analyze import analyze_command, run_sessions_suite
from evals_cli.report import load_sessions
from evals_cli.runner import RunOptions
from evals_cli.sessions.spec import RecordedSessionsTarget
from evals_cli.sessions.suite import load_sessions_suite
from evals_cli.suite.spec import GraderSpec, SuiteSpec
from evals_cli.targets.openai_chat import OpenAIChatTarget
from tests.scripted_server import ScriptedServer, is_judge, judge_score, text

ROOT = Path(__file__).resolve().parent.parent
DATASET = ROOT / "datasets" / "multi_agent_sessions.jsonl"
SUITE = ROOT / "suites" / "multi_agent.yaml"
EXPECTED_TURN_1 = {"refund-clean": "none", "refund-unauthorized-tool": "none", "refund-hallucinated-parameter": "none",
                   "refund-lost-handoff": "none", "refund-user-reasks": "ccm", "refund-user-corrects": "rdm",
                   "refund-hallucinated-answer": "hallucination", "refund-reviewer-redoes": "none"}


def lines(directory: Path) -> dict[str, dict[str, Any]]:
    """Each session's analysis, read back from the run's results (the results of every run)."""
    return {a.session_id: a.model_dump(mode="json") for a in load_sessions(directory).analyses}


def saved_summary(directory: Path) -> dict[str, Any]:
    """The run's sessions summary, rebuilt from its results and its common summary.json."""
    return load_sessions(directory).summary.model_dump(mode="json")


def test_analyze_deterministic_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert analyze_command(DATASET, tmp_path / "out") == 0  # default gate: mean overall_score >= 0.7
    out = capsys.readouterr().out
    rows = lines(tmp_path / "out")
    assert {sid: r["turn_results"][0]["detection_type"] for sid, r in rows.items()} == EXPECTED_TURN_1
    assert all(r["judge"]["model"] is None and r["judge"]["calls"] == 0 for r in rows.values())
    assert rows["refund-lost-handoff"]["per_agent_scores"]["planner"]["handoff"] == 0.0
    assert rows["refund-unauthorized-tool"]["tool_validation"]["by_severity"] == {"HIGH": 1}
    summary = saved_summary(tmp_path / "out")
    assert summary["sessions"] == 8 and summary["exit_code"] == 0 and summary["gate"]["passed"] is True
    assert summary["mean_overall_score"] == pytest.approx(sum(r["overall_score"] for r in rows.values()) / 8)
    assert summary["min_agent"] == {"session_id": "refund-unauthorized-tool", "agent_id": "planner", "score": 0.0}
    for expected in ("refund-user-corrects  overall 0.81", "├── turn 1 ✗ rdm (0.90)", "│   ├── planner 1.00",
                     "agent      overall   tool use", "turn 1 redundant call: reviewer redid lookup_order",
                     "→ planner should pass more context when delegating", "slowest tool call turn 1 · reviewer · "
                     "lookup_order 2900 ms", "judge: off", "Gate PASSED: mean overall_score (over 8 sessions) = 0.775"):
        assert expected in out, expected


def scripted_judge(path: str, body: dict[str, Any]) -> Any:
    """A judge that knows the dataset: bad turns and poor work where the sessions were built to fail."""
    user = body["messages"][1]["content"] if is_judge(body) else ""
    found = re.search(r"Metric: (\w+)\nSession: ([\w-]+)", user)
    assert found is not None
    metric, session = found.groups()
    if metric == "turn":
        turn_1 = "Session: " + session + ", turn 1\n" in user
        label = {"refund-user-corrects": "rdm", "refund-user-reasks": "ccm", "refund-hallucinated-answer":
                 "hallucination", "refund-lost-handoff": "bad"}.get(session, "good") if turn_1 else "good"
        return text(json.dumps({"reason": "scripted", "choice": label}))
    if metric == "task_completion":
        failed = session in ("refund-lost-handoff", "refund-hallucinated-answer")
        return text(json.dumps({"reason": "scripted", "verdict": "fail" if failed else "pass"}))
    poor = {("handoff", "refund-lost-handoff"), ("tool_use", "refund-unauthorized-tool"),
            ("coordination", "refund-unauthorized-tool"), ("coordination", "refund-lost-handoff")}
    return judge_score(2 if (metric, session) in poor else 9)


def test_analyze_with_a_scripted_judge(server: ScriptedServer, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    server.script = scripted_judge
    monkeypatch.setenv("EVAL_JUDGE_BASE_URL", server.url)
    monkeypatch.setenv("EVAL_JUDGE_MODEL", "scripted")  # the judge is on when a model is configured
    assert analyze_command(DATASET, tmp_path / "out") == 0
    rows = lines(tmp_path / "out")
    assert server.agent_requests() == [] and len(server.judge_requests()) == sum(r["judge"]["calls"] for r in rows.values())
    assert {sid: r["turn_results"][0]["detection_type"] for sid, r in rows.items()} == \
        dict(EXPECTED_TURN_1, **{"refund-lost-handoff": "llm_judge"})
    completion = {sid: (r["task_completion"], r["task_completion_source"]) for sid, r in rows.items()}
    assert completion["refund-lost-handoff"] == (False, "judge") and completion["refund-clean"] == (True, "judge")
    assert rows["refund-lost-handoff"]["per_agent_scores"]["planner"]["handoff"] == pytest.approx(0.1)  # (0 + 0.2) / 2
    assert rows["refund-clean"]["reasoning_score"] == 0.9
    summary = saved_summary(tmp_path / "out")
    assert summary["task_completion_rate"] == 0.75 and summary["judge"]["model"] == "scripted"
    out = capsys.readouterr().out
    assert "turn 1 ✗ llm_judge (0.70)" in out and "judge scripted:" in out and "reasoning 0.90" in out


def test_no_judge_flag_makes_no_call_even_with_a_judge_model(server: ScriptedServer, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVAL_JUDGE_MODEL", "scripted")
    assert analyze_command(DATASET, tmp_path / "out", judge_base_url=server.url, no_judge=True, quiet=True) == 0
    assert server.requests == []


def test_json_and_quiet_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert analyze_command(DATASET, tmp_path / "a", json_out=True) == 0
    document = json.loads(capsys.readouterr().out)
    assert [s["session_id"] for s in document["sessions"]] == list(EXPECTED_TURN_1)  # input order
    assert document["summary"]["gate"]["passed"] is True
    assert analyze_command(DATASET, tmp_path / "b", quiet=True) == 0
    assert capsys.readouterr().out.strip().startswith("Gate PASSED")


def test_the_shipped_suite_runs_and_its_gate_fails_as_designed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = load_sessions_suite(SUITE)
    assert spec.target.gate.min_overall_score == 0.8 and spec.dataset == "../datasets/multi_agent_sessions.jsonl"
    code = run_sessions_suite(SUITE, RunOptions(no_judge=True, output=tmp_path / "out"))
    assert code == 1  # seven of the eight sessions are broken on purpose
    out = capsys.readouterr().out
    assert "Gate FAILED: mean overall_score (over 8 sessions) = 0.775 not ≥ 0.8" in out
    assert "lowest agent score (planner in refund-unauthorized-tool) = 0.000 not ≥ 0.5" in out
    assert run_sessions_suite(SUITE, RunOptions(no_judge=True, output=tmp_path / "o2", max_samples=1), quiet=True) == 0
    assert len(lines(tmp_path / "o2")) == 1  # only refund-clean, which passes every check


def test_agent_options_are_refused_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_sessions_suite(SUITE, RunOptions(model="gpt-x", tags=["smoke"], repeats=3, output=tmp_path / "out")) == 2
    err = capsys.readouterr().err
    assert "--model sets the agent model" in err and "--tag" in err and "--repeats" in err
    assert not (tmp_path / "out").exists()
    assert run_sessions_suite(SUITE, RunOptions(repeats=1, no_judge=True, output=tmp_path / "ok"), quiet=True) == 1


def test_keys_that_do_not_apply_are_named_with_their_line(tmp_path: Path) -> None:
    text_ = SUITE.read_text().replace("concurrency: 4", "concurrency: 4\ngraders: {a: {kind: tool}}\nconcurency: 2")
    path = tmp_path / "suite.yaml"
    path.write_text(text_)
    with pytest.raises(Exception) as exc:
        load_sessions_suite(path)
    message = str(exc.value)
    assert f"{path}:10: graders: does not apply to recorded_sessions" in message
    assert f"{path}:11: concurency: unknown key 'concurency'; did you mean 'concurrency'?" in message


class IntegratedSuiteSpec(SuiteSpec):
    """SuiteSpec after the integration steps: the target union, and graders optional for recorded_sessions only."""

    target: Annotated[OpenAIChatTarget | RecordedSessionsTarget, Field(discriminator="kind")]  # type: ignore[assignment]
    graders: dict[str, GraderSpec] = Field(default_factory=dict, validate_default=True,
                                           description="Grader name -> grader spec (none for recorded_sessions).")

    @field_validator("graders")
    @classmethod
    def _graders_for_live_targets(cls, graders: dict[str, GraderSpec], info: ValidationInfo) -> dict[str, GraderSpec]:
        if not graders and getattr(info.data.get("target"), "kind", None) != "recorded_sessions":
            raise ValueError("required field is missing: give at least one grader")
        return graders


def test_the_main_loader_accepts_the_suite_once_integrated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(loader, "SuiteSpec", IntegratedSuiteSpec)
    spec = loader.load_suite(SUITE)
    assert spec.target.kind == "recorded_sessions" and spec.judge is not None
    assert run_sessions_suite(spec, RunOptions(no_judge=True, output=tmp_path / "out"), quiet=True) == 1
    assert "Gate FAILED" in capsys.readouterr().out
    broken = tmp_path / "s.yaml"
    broken.write_text(SUITE.read_text().replace("kind: recorded_sessions", "kind: recorded_session"))
    with pytest.raises(Exception, match="did you mean 'recorded_sessions'"):
        loader.load_suite(broken)


def test_live_suites_still_need_graders_once_integrated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The existing bad-input cases 'missing-graders' and 'empty-graders' keep their messages and lines."""
    from evals_cli.errors import ConfigError

    monkeypatch.setattr(loader, "SuiteSpec", IntegratedSuiteSpec)
    (tmp_path / "data.jsonl").write_text('{"input": "hi"}\n')
    head = "name: s\ndataset: data.jsonl\ntarget:\n  kind: openai_chat\n  model: m\n"
    for tail, expected in (("", "graders: required field is missing"), ("graders: {}\n", "suite.yaml:6: graders:")):
        (tmp_path / "suite.yaml").write_text(head + tail)
        with pytest.raises(ConfigError) as exc:
            loader.load_suite(tmp_path / "suite.yaml")
        assert expected in "\n".join(exc.value.problems)


def test_spec_is_a_leaf_module() -> None:
    """models/specs.py will import sessions/spec.py: spec.py must import nothing from evals_cli (no cycle)."""
    tree = ast.parse((ROOT / "evals_cli" / "sessions" / "spec.py").read_text())
    imported = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in imported if m and m.startswith("evals_cli")]


def validate_with_routing(path: Path) -> tuple[int, list[str]]:
    """The routing the integration steps add at the top of evals_cli/runner/plan.py:validate_suite."""
    from evals_cli.errors import ConfigError
    from evals_cli.sessions.prepare import check_sessions_suite
    from evals_cli.sessions.suite import is_sessions_suite

    assert is_sessions_suite(path)
    try:
        suite = loader.load_suite(path)
    except ConfigError as exc:
        return 0, exc.problems
    return check_sessions_suite(suite)


def test_validate_routing_reports_sessions_and_problems(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from evals_cli.sessions.suite import is_sessions_suite

    monkeypatch.setattr(loader, "SuiteSpec", IntegratedSuiteSpec)
    assert validate_with_routing(SUITE) == (8, [])
    assert not is_sessions_suite(ROOT / "suites" / "demo.yaml") and not is_sessions_suite(tmp_path / "missing.yaml")
    (tmp_path / "data.jsonl").write_text(DATASET.read_text().splitlines()[0] + "\n{broken\n")
    broken = tmp_path / "suite.yaml"
    broken.write_text(SUITE.read_text().replace("../datasets/multi_agent_sessions.jsonl", "data.jsonl")
                      .replace("concurrency: 4", "concurrency: 4\ngraders: {a: {kind: tool_order}}"))
    count, problems = validate_with_routing(broken)
    assert count == 1 and len(problems) == 2
    assert "graders: does not apply to recorded_sessions" in problems[0] and "data.jsonl:2: invalid JSON" in problems[1]


def test_a_reused_output_folder_holds_only_the_last_run(tmp_path: Path) -> None:
    assert analyze_command(DATASET, tmp_path / "out", quiet=True) == 0
    assert analyze_command(DATASET, tmp_path / "out", quiet=True) == 0
    assert len((tmp_path / "out" / "results.jsonl").read_text().splitlines()) == 8
