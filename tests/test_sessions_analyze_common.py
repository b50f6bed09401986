"""`evals analyze` runs through the pipeline of every run (issue 25 item 4): a `SampleResult` per session, a
`RunSummary`, the common gate. What it prints (`--json`, the Rich view, `-q`) is derived from what it wrote, with
the exit code and the verdict of the common gate; `evals report`, the HTML report and the history read its
folder, and the folders it wrote before (a `SessionAnalysis` per line, a `SessionsSummary`) are still read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import evals_cli.sessions.analyser as sessions_analyser
from evals_cli.history import scan_runs
from evals_cli.models.results import RunSummary, SampleResult
from evals_cli.report import load_sessions, run_kind
from evals_cli.runner.run import run_sessions
from evals_cli.sessions.options import SessionsOptions
from evals_cli.sessions.results import analysis_of
from evals_cli.sessions.spec import RecordedSessionsTarget
from evals_cli.sessions.suite import SessionsSuiteSpec
from evals_cli.sessions.view import ANALYZE_NAME
from tests.helpers import ROOT, run_cli

DATASET = ROOT / "datasets" / "multi_agent_sessions.jsonl"
OLD_FORMAT = ROOT / "tests" / "fixtures" / "analyze_sessions_format"  # written by evals analyze before this


def results(folder: Path) -> list[SampleResult]:
    return [SampleResult.model_validate_json(line) for line in (folder / "results.jsonl").read_text().splitlines()]


def test_analyze_writes_the_results_of_every_run_and_prints_what_they_hold(tmp_path: Path) -> None:
    done = run_cli("analyze", str(DATASET), "-o", str(tmp_path / "run"), "--json")
    assert done.returncode == 0, done.stderr
    lines = results(tmp_path / "run")
    summary = RunSummary.model_validate_json((tmp_path / "run" / "summary.json").read_text())
    assert summary.total == 8 and summary.exit_code == 0 and summary.gate is not None and summary.gate.passed
    assert summary.gate.message.startswith("Gate PASSED: overall avg_score = 0.775")
    assert (tmp_path / "run" / ANALYZE_NAME).is_file() and run_kind(tmp_path / "run") == "sessions"
    document = json.loads(done.stdout)
    analyses = [analysis_of(r) for r in lines]
    assert [a.model_dump(mode="json") for a in analyses if a is not None] == document["sessions"]  # input order
    shown = document["summary"]
    assert shown["sessions"] == 8 and shown["exit_code"] == 0 and shown["gate"]["passed"] is True
    assert shown["gate"]["message"] == "Gate PASSED: mean overall_score (over 8 sessions) = 0.775 ≥ 0.7"
    assert shown["mean_overall_score"] == pytest.approx(summary.graders["overall"].avg_score)
    assert shown["started_at"] == summary.started_at and shown["duration_s"] == summary.duration_s
    assert [r.sample_id for r in lines] == [s["session_id"] for s in document["sessions"]]


@pytest.mark.parametrize(("gate", "code"), [
    ({"min_overall_score": 0.7}, 0),
    ({"min_overall_score": 0.8}, 1),
    ({"min_overall_score": None, "min_task_completion_rate": 0.85}, 0),  # 7 of 8 tasks completed
    ({"min_overall_score": None, "min_task_completion_rate": 0.9}, 1),
    ({"min_overall_score": 0.5, "min_agent_score": 0.5}, 1),
    ({"min_overall_score": 0.5, "min_agent_score": 0.0}, 0),
])
def test_the_verdict_shown_is_the_common_gates(tmp_path: Path, gate: dict[str, Any], code: int) -> None:
    suite = SessionsSuiteSpec(name="t", dataset=str(DATASET), target=RecordedSessionsTarget(gate=gate))
    outcome = run_sessions(suite, SessionsOptions(output=tmp_path / "out", no_judge=True))
    assert outcome.exit_code == code and outcome.run is not None and outcome.run.exit_code == code
    assert outcome.summary.exit_code == code and outcome.run.gate is not None and outcome.summary.gate is not None
    assert outcome.summary.gate.passed is outcome.run.gate.passed is (code == 0)
    assert all(check.passed is not None for check in outcome.summary.gate.checks)
    assert (all(check.passed for check in outcome.summary.gate.checks)) is (code == 0)
    assert outcome.summary.gate.message.startswith("Gate PASSED" if code == 0 else "Gate FAILED")


def test_a_session_that_could_not_be_analysed_is_an_errored_result_never_a_zero(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = sessions_analyser.analyze_session

    async def flaky(session: Any, *args: Any) -> Any:  # our analysis, not the SDK: a bug in one session
        if session.id == "refund-lost-handoff":
            raise RuntimeError("boom")
        return await real(session, *args)

    monkeypatch.setattr(sessions_analyser, "analyze_session", flaky)
    suite = SessionsSuiteSpec(name="t", dataset=str(DATASET), target=RecordedSessionsTarget())
    outcome = run_sessions(suite, SessionsOptions(output=tmp_path / "out", no_judge=True))
    assert outcome.exit_code == 3 and outcome.messages == ["1/8 sessions could not be analysed"]
    [broken] = [r for r in results(tmp_path / "out") if r.error is not None]
    assert broken.sample_id == "refund-lost-handoff" and broken.score is None and broken.passed is None
    # every score read off the analysis is the analysis's error (never a zero); the detectors, run on the recording
    # itself, still grade it
    scores = [g for name, g in broken.grades.items() if name not in ("ccm", "rdm", "hallucination",
                                                                     "unauthorized_tool", "hallucinated_parameter")]
    assert len(scores) == 9 and all(g.score is None and g.error == "internal error: RuntimeError: boom" for g in scores)
    shown = {a.session_id: a for a in outcome.analyses}
    assert shown["refund-lost-handoff"].error == "internal error: RuntimeError: boom"
    assert shown["refund-lost-handoff"].overall_score is None
    assert outcome.summary.errored == 1 and outcome.summary.status == "aborted" and outcome.summary.gate is not None
    assert outcome.summary.gate.passed is None
    assert outcome.summary.gate.message == "Gate not evaluated: run aborted (1/8 sessions could not be analysed)"
    again = load_sessions(tmp_path / "out")  # `evals report` rebuilds the same view from the folder
    assert again.summary.model_dump(exclude={"dataset"}) == outcome.summary.model_dump(exclude={"dataset"})
    assert [a.session_id for a in again.analyses if a.error] == ["refund-lost-handoff"]


def test_report_and_history_read_an_analyze_folder(tmp_path: Path) -> None:
    run = tmp_path / "results" / "run"
    assert run_cli("analyze", str(DATASET), "-o", str(run), "-q").returncode == 0
    done = run_cli("report", str(run))
    assert done.returncode == 0 and "refund-user-corrects  overall 0.81" in done.stdout
    assert "Gate PASSED: mean overall_score (over 8 sessions) = 0.775 ≥ 0.7" in done.stdout
    [entry] = scan_runs(tmp_path / "results")
    assert (entry.kind, entry.suite, entry.gate, entry.total, entry.exit_code) == \
        ("sessions", "analyze-multi_agent_sessions", "PASSED", 8, 0)
    assert entry.detail == "8 sessions, task completion 88%"


def test_a_folder_of_analyze_reused_by_a_suite_run_is_shown_as_that_run(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run_cli("analyze", str(DATASET), "-o", str(out), "-q").returncode == 0
    assert run_cli("run", "suites/multi_agent.yaml", "--no-judge", "-o", str(out), "-q").returncode == 1
    assert not (out / ANALYZE_NAME).exists() and run_kind(out) == "samples"


def test_folders_written_before_the_common_format_are_still_read(tmp_path: Path) -> None:
    old = tmp_path / "old"
    shutil.copytree(OLD_FORMAT, old)
    assert run_kind(old) == "sessions"
    view = load_sessions(old)
    assert len(view.analyses) == 8 and view.summary.gate is not None and view.summary.gate.passed is True
    html = tmp_path / "old.html"
    done = run_cli("report", str(old), "--html", str(html))
    assert done.returncode == 0, done.stderr
    assert "Gate PASSED: mean overall_score (over 8 sessions) = 0.775 ≥ 0.7" in done.stdout
    assert "refund-reviewer-redoes" in html.read_text(encoding="utf-8")
    [entry] = scan_runs(tmp_path)
    assert (entry.kind, entry.gate, entry.total) == ("sessions", "PASSED", 8)


@pytest.mark.slow  # over a CPU-second of subprocesses: make test-slow (CI runs it)
def test_more_sessions_than_the_view_keeps_are_all_in_the_json_document(tmp_path: Path) -> None:
    """Past MAX_KEPT analyses the view keeps the first ones; `--json` still lists every session, read back from
    the results in the order written, and the summary counts them all."""
    from evals_cli.sessions.view import MAX_KEPT

    rows = [json.loads(line) for line in DATASET.read_text().splitlines() if line.strip()]
    many = tmp_path / "many.jsonl"
    total = MAX_KEPT + 5
    many.write_text("".join(json.dumps(dict(rows[i % len(rows)], id=f"s{i:03d}")) + "\n" for i in range(total)))
    done = run_cli("analyze", str(many), "-o", str(tmp_path / "run"), "--json", "-c", "8")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    written = [analysis_of(r) for r in results(tmp_path / "run")]
    assert document["sessions"] == [a.model_dump(mode="json") for a in written if a is not None]
    assert len(document["sessions"]) == document["summary"]["sessions"] == total
    table = run_cli("analyze", str(many), "-o", str(tmp_path / "again"))
    assert table.returncode == 0 and "... 5 more sessions in the results file" in table.stdout


def test_an_analyze_folder_with_an_unreadable_summary_is_listed_stopped_with_no_verdict(tmp_path: Path) -> None:
    run = tmp_path / "results" / "run"
    assert run_cli("analyze", str(DATASET), "-o", str(run), "-q").returncode == 0
    (run / "summary.json").write_text('{"schema_version": 1, "trunc', encoding="utf-8")
    [entry] = scan_runs(tmp_path / "results")
    assert (entry.kind, entry.status, entry.gate, entry.total, entry.exit_code) == \
        ("sessions", "stopped", "stopped", 8, None), entry
    assert entry.detail == "summary.json is unreadable (after 8 sessions): no verdict"
    done = run_cli("report", str(run))
    assert "summary.json is unreadable" in done.stdout + done.stderr
    assert "no summary.json" not in done.stdout + done.stderr and "PASSED" not in done.stdout
