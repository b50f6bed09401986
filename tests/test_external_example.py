"""The shipped external-agent example (suites/external_agent.yaml, `make eval-external`) replays offline: its
recorded replies and spans are graded with no process started (the program named does not even exist)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import ROOT, read_jsonl, run_cli

SUITE = ROOT / "suites" / "external_agent.yaml"
RECORDING = ROOT / "suites" / "external_agent.recording.jsonl"


def test_the_example_replays_offline_graded_on_its_spans(tmp_path: Path) -> None:
    result = run_cli("run", str(SUITE), "--replay", str(RECORDING), "-o", str(tmp_path / "out"),
                     env={"EXTERNAL_AGENT_PYTHON": str(tmp_path / "absent-python")})
    assert result.returncode in (0, 1), result.stdout + result.stderr
    rows = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert sorted(r["sample_id"] for r in rows) == ["db-host", "db-port"]
    for row in rows:
        assert row["error"] is None and "not_observed" not in row["trajectory"]
        assert row["grades"]["tool_order"]["applicable"] is True  # graded on the spans, not n/a
        assert row["trajectory"]["turns"][0]["steps"], row
    called = {r["sample_id"]: [c["name"] for s in r["trajectory"]["turns"][0]["steps"] for c in s["tool_calls"]]
              for r in rows}
    assert any(called.values())  # the recorded agent called its tools, and the spans said so


def test_make_eval_external_replays_the_recording() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\neval-external:", 1)[1].split("\n\n", 1)[0]
    assert "--replay suites/external_agent.recording.jsonl" in recipe and "suites/external_agent.yaml" in recipe
