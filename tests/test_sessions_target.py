"""Recorded sessions are a target kind (issue 38 item 1): `kind: recorded_session` replays each session of a session
file through an Episode, and a `kind: recorded_sessions` document is the ordinary suite of that target, run by the
common `Execution` (its aborts: a judge that cannot be reached stops the run, exit 3, nothing graded after it)."""

from __future__ import annotations

import json
from pathlib import Path

from evals_cli.runner.prepare import PreparedRun
from evals_cli.runner.run import prepare
from evals_cli.sessions.target import RecordedSession
from tests.helpers import ROOT, read_jsonl, run_cli
from tests.real_model_server import closed_port

DATASET = ROOT / "datasets" / "multi_agent_sessions.jsonl"


def test_a_recorded_sessions_document_is_prepared_as_an_ordinary_suite(tmp_path: Path) -> None:
    from evals_cli.run_options import RunOptions

    prepared = prepare(ROOT / "suites" / "multi_agent.yaml", RunOptions(no_judge=True, output=tmp_path / "out"))
    assert isinstance(prepared, PreparedRun) and isinstance(prepared.target, RecordedSession)
    assert prepared.suite.target.kind == "recorded_session"  # type: ignore[attr-defined]
    assert {"overall", "lowest_agent", "unauthorized_tool"} <= set(prepared.graders)


def test_a_suite_of_the_target_kind_runs_like_any_suite(tmp_path: Path) -> None:
    """Written by hand: the session file is the dataset, one sample per session, graded by the detectors."""
    suite = tmp_path / "suite.yaml"
    suite.write_text(f"name: plain\ntarget: {{kind: recorded_session, path: {DATASET}}}\n"
                     "graders:\n  unauthorized: {kind: session_detector, detector: unauthorized_tool}\n"
                     "gate: {kind: simple, metric_key: unauthorized, value: 0.5}\n", encoding="utf-8")
    assert run_cli("validate", str(suite)).returncode == 0
    done = run_cli("run", str(suite), "-o", str(tmp_path / "out"), "-q")
    assert done.returncode == 0, done.stderr
    lines = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert len(lines) == 8 and lines[0]["input"].startswith("Refund order ORD-1001")  # the session's task
    assert lines[0]["trajectory"]["turns"][0]["steps"][1]["handoff_to"] == "executor"  # the recording replayed


def test_a_judge_that_cannot_be_reached_stops_the_run(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    done = run_cli("analyze", str(DATASET), "-o", str(tmp_path / "out"), "--json", "--judge-model", "m",
                   "--judge-base-url", url, "--judge-api-key", "sk-unreachable-key")
    assert done.returncode == 3, done.stderr
    document = json.loads(done.stdout)
    assert document["sessions"] == [] and document["summary"]["status"] == "aborted"
    assert document["summary"]["abort_reason"].startswith("judge unavailable: cannot reach judge endpoint")
    assert document["summary"]["abort_reason"].endswith("; stopped analysing")
    assert (tmp_path / "out" / "results.jsonl").read_text() == ""  # no session graded without its judge
    assert "sk-unreachable-key" not in done.stdout + done.stderr
