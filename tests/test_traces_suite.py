"""Suites over traces: `target: {kind: traces, path: FILE}` grades each traced conversation with the live run's
graders, no agent called."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import yaml

from tests.helpers import read_jsonl, run_cli
from tests.scripted_server import ScriptedServer, judge_score

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "traces"


def _suite(tmp: Path, trace: str = "genai.otlp.jsonl", rows: list[dict[str, Any]] | None = None,
           **extra: Any) -> Path:
    shutil.copy(FIXTURES / trace, tmp / "traces.jsonl")
    suite: dict[str, Any] = {
        "name": "traced", "target": {"kind": "traces", "path": "traces.jsonl"},
        "graders": {"loops": {"kind": "no_loops"}, "forbidden": {"kind": "forbidden_tools"}},
        "gate": {"kind": "weighted_average", "aggregation": "avg_score", "op": "gte", "value": 0.5},
    }
    if rows is not None:
        (tmp / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        suite["dataset"] = "rows.jsonl"
    suite.update(extra)
    (tmp / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    return tmp / "suite.yaml"


def _results(out: Path) -> dict[str, dict[str, Any]]:
    return {r["sample_id"]: r for r in read_jsonl(out / "results.jsonl")}


def test_without_a_dataset_every_conversation_is_a_sample(tmp_path: Path) -> None:
    result = run_cli("run", str(_suite(tmp_path)), "-o", str(tmp_path / "out"))
    results = _results(tmp_path / "out")
    assert list(results) == ["order-42", "order-7"]
    assert results["order-42"]["passed"] is True
    # the recorded trajectory is what was graded: a tool never offered fails the sample, as in a live run
    calls = [c["name"] for t in results["order-7"]["trajectory"]["turns"] for s in t["steps"] for c in s["tool_calls"]]
    assert calls == ["delete_account"] and results["order-7"]["passed"] is False
    assert results["order-42"]["trajectory"]["turns"][1]["user"] == "It arrived broken, please refund it."
    assert result.returncode == 0  # the gate (avg_score >= 0.5) passed


def test_dataset_rows_match_conversations_by_id_and_carry_expectations(tmp_path: Path) -> None:
    rows = [{"id": "order-42", "expected_tool_order": ["lookup_order", "transfer_to_billing"]},
            {"id": "order-7", "forbidden_tools": ["delete_account"], "ground_truth": "closed"},
            {"id": "order-99", "expected_tool_order": ["lookup_order"]}]
    graders = {"order": {"kind": "tool_order"}, "forbidden": {"kind": "forbidden_tools"}}
    run_cli("run", str(_suite(tmp_path, rows=rows, graders=graders)), "-o", str(tmp_path / "out"))
    results = _results(tmp_path / "out")
    assert results["order-42"]["grades"]["order"]["score"] == 1.0
    assert results["order-7"]["grades"]["forbidden"]["score"] == 0.0
    # a row naming no conversation is an errored sample saying why, never a score
    assert "no conversation with id 'order-99'" in results["order-99"]["error"]["message"]
    assert results["order-99"]["score"] is None and results["order-99"]["passed"] is None


def test_sampling_options_work_on_conversations(tmp_path: Path) -> None:
    suite = _suite(tmp_path)
    run_cli("run", str(suite), "-o", str(tmp_path / "n"), "-n", "1")
    assert list(_results(tmp_path / "n")) == ["order-42"]
    run_cli("run", str(suite), "-o", str(tmp_path / "id"), "--sample-id", "order-7")
    assert list(_results(tmp_path / "id")) == ["order-7"]
    # the fixture was recorded at one moment: a window after it keeps nothing, one around it keeps both
    later = run_cli("run", str(suite), "-o", str(tmp_path / "late"), "--since", "2099-01-01")
    assert later.returncode == 2 and "no sample matches" in later.stderr
    run_cli("run", str(suite), "-o", str(tmp_path / "all"), "--since", "2020-01-01", "--until", "2099-01-01T00:00Z")
    assert list(_results(tmp_path / "all")) == ["order-42", "order-7"]


def test_the_window_is_refused_for_a_live_target_and_bad_dates_are_named(tmp_path: Path) -> None:
    suite = _suite(tmp_path)
    bad = run_cli("run", str(suite), "-o", str(tmp_path / "bad"), "--since", "last tuesday")
    assert bad.returncode == 2 and "'last tuesday' is not an ISO 8601 date" in bad.stderr
    live = tmp_path / "live"
    live.mkdir()
    (live / "data.jsonl").write_text('{"id": "a", "input": "hi"}\n', encoding="utf-8")
    (live / "suite.yaml").write_text(yaml.safe_dump({
        "name": "live", "dataset": "data.jsonl",
        "target": {"kind": "openai_chat", "base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key": "k"},
        "graders": {"loops": {"kind": "no_loops"}}}), encoding="utf-8")
    refused = run_cli("run", str(live / "suite.yaml"), "--since", "2026-01-01")
    assert refused.returncode == 2 and "--since: a time window over recorded conversations" in refused.stderr


def test_a_conversation_that_cannot_be_graded_is_an_error_and_bad_lines_are_warned(tmp_path: Path) -> None:
    result = run_cli("run", str(_suite(tmp_path, "edge_cases.otlp.jsonl")), "-o", str(tmp_path / "out"))
    results = _results(tmp_path / "out")
    assert set(results) == {"legacy-1", "cut-1", "orphan-1", "3af7651916cd43dd8448eb211c80319c", "noresult-1"}
    # cut off mid-call: graded as recorded (one call, no loop, nothing forbidden), its stop reason said
    assert results["cut-1"]["error"] is None and results["cut-1"]["trajectory"]["stop_reason"] == "cut_off"
    assert "was never recorded" in results["noresult-1"]["error"]["message"]  # no empty result is graded
    assert results["noresult-1"]["passed"] is None
    assert results["legacy-1"]["error"] is None and results["legacy-1"]["passed"] is True
    assert "traces.jsonl:2: not JSON" in result.stderr and "warning: " in result.stderr
    assert "SECRETSECRET" not in (tmp_path / "out" / "results.jsonl").read_text(encoding="utf-8")
    assert result.returncode == 3  # 2 of 5 conversations errored: past the default max_error_rate, no verdict


def test_nothing_readable_is_exit_2(tmp_path: Path) -> None:
    result = run_cli("run", str(_suite(tmp_path, "no_content.otlp.jsonl")), "-o", str(tmp_path / "out"))
    assert result.returncode == 2
    assert "no conversation could be read" in result.stderr and "content capture was off" in result.stderr
    assert "Traceback" not in result.stderr


def test_model_judge_grades_the_recorded_answer(tmp_path: Path, server: ScriptedServer) -> None:
    """The judge sees the traced conversation's answer; only the judge is called (no agent endpoint exists)."""
    server.script = lambda path, body: judge_score(10, "the refund was confirmed")
    (tmp_path / "rubric.j2").write_text("Did the agent resolve this?\nQ: {{ input }}\nA: {{ submission }}\n",
                                        encoding="utf-8")
    graders = {"judge": {"kind": "model_judge", "rubric": "rubric.j2", "base_url": server.url, "model": "judge",
                         "api_key": "k"}}
    run_cli("run", str(_suite(tmp_path, graders=graders)), "-o", str(tmp_path / "out"), "--sample-id", "order-42")
    assert _results(tmp_path / "out")["order-42"]["grades"]["judge"]["score"] == 1.0
    (request,) = server.requests
    assert "Billing refunded order 42: 30 EUR are on their way." in json.dumps(request["body"])
