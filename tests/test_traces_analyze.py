"""`evals analyze TRACES`: OpenTelemetry trace files run through the recorded-sessions analysis."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import read_jsonl, run_cli

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "traces"


@pytest.mark.parametrize("convention", ["genai", "openinference"])
def test_traces_are_analysed_and_a_tool_never_offered_is_unauthorized(convention: str, tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = run_cli("analyze", str(FIXTURES / f"{convention}.otlp.jsonl"), "-o", str(out), "--no-judge", "--json")
    document = json.loads(result.stdout)
    sessions = {s["session_id"]: s for s in document["sessions"]}
    assert list(sessions) == ["order-42", "order-7"]
    violations = sessions["order-7"]["tool_validation"]["violations"]
    assert [(v["kind"], v["tool"], v["agent_id"]) for v in violations] == [("UNAUTHORIZED_TOOL", "delete_account",
                                                                            "support")]
    assert sessions["order-42"]["tool_validation"]["violations"] == []
    assert result.returncode == (0 if document["summary"]["gate"]["passed"] else 1)
    assert "2 of 2 traced conversations read" in result.stderr
    assert "it never checks an answer against an expectation" in result.stderr  # its question, not a verdict on them
    # what was analysed is kept in the run folder, as a session file
    assert [s["id"] for s in read_jsonl(out / "traced_sessions.jsonl")] == ["order-42", "order-7"]
    refund = read_jsonl(out / "traced_sessions.jsonl")[0]["turns"][1]["agent_interactions"]
    assert [(i["agent_id"], i["handoff_to"]) for i in refund] == [("support", "billing"), ("billing", "support"),
                                                                  ("support", None)]
    assert refund[0]["handoff_context"] == {"reason": "refund order 42"}


def test_format_otlp_is_auto_detected_and_can_be_forced(tmp_path: Path) -> None:
    trace = tmp_path / "spans.txt"  # no telling suffix: the first line decides
    trace.write_text((FIXTURES / "genai.otlp.jsonl").read_text(encoding="utf-8"), encoding="utf-8")
    auto = run_cli("analyze", str(trace), "-o", str(tmp_path / "a"), "--no-judge", "-q")
    forced = run_cli("analyze", str(trace), "-o", str(tmp_path / "b"), "--no-judge", "-q", "--format", "otlp")
    assert auto.returncode == forced.returncode == 0
    assert auto.stdout.startswith("Gate PASSED") and "traced conversations read" not in auto.stderr  # -q
    assert (tmp_path / "a" / "traced_sessions.jsonl").is_file()
    # a session file forced as traces: exit 2, each line named, no traceback
    sessions = tmp_path / "sessions.jsonl"
    sessions.write_text('{"id": "s1", "task": "t", "agents": [], "turns": []}\n', encoding="utf-8")
    wrong = run_cli("analyze", str(sessions), "--format", "otlp", "-o", str(tmp_path / "c"))
    assert wrong.returncode == 2
    assert f"{sessions}:1: not an OTLP/JSON ExportTraceServiceRequest" in wrong.stderr
    assert "Traceback" not in wrong.stderr + wrong.stdout


def test_unreadable_lines_and_conversations_are_warned_and_the_rest_analysed(tmp_path: Path) -> None:
    path = FIXTURES / "edge_cases.otlp.jsonl"
    result = run_cli("analyze", str(path), "-o", str(tmp_path / "run"), "--no-judge", "--json")
    assert result.returncode in (0, 1)
    assert [s["session_id"] for s in json.loads(result.stdout)["sessions"]] == ["legacy-1", "cut-1", "orphan-1"]
    assert "3 of 5 traced conversations read" in result.stderr
    for expected in (f"warning: {path}:2: not JSON", f"warning: {path}:4: conversation 'cut-1'",
                     "cut off mid-call", f"warning: {path}:7: conversation 'noresult-1'"):
        assert expected in result.stderr
    written = (tmp_path / "run" / "traced_sessions.jsonl").read_text(encoding="utf-8")
    assert "SECRETSECRET" not in written and "SECRETSECRET" not in result.stdout + result.stderr


def test_nothing_readable_exits_2_naming_each_conversation(tmp_path: Path) -> None:
    result = run_cli("analyze", str(FIXTURES / "no_content.otlp.jsonl"), "-o", str(tmp_path / "run"), "--no-judge")
    assert result.returncode == 2
    assert "no conversation could be read" in result.stderr
    assert "conversation 'order-42'" in result.stderr and "conversation 'order-7'" in result.stderr
    assert "content capture was off" in result.stderr
    assert "Traceback" not in result.stderr
