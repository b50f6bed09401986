"""Telemetry bound to its episode (evals_cli/traces/peers.py, receiver.py): a command agent's spans belong to the
episode whose process tree holds the connection they came on, whatever they are tagged with. One episode's agent
that reads another's id from /proc/<pid>/environ and posts spans tagged with it feeds nobody and is an error; a
process outside every episode is refused and counted. Real agent processes, real HTTP on 127.0.0.1."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers import ROOT, read_jsonl, run_cli

FORGER = ROOT / "tests" / "agents" / "forging_agent.py"
LINUX = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the binding reads Linux's /proc")


def _forgery_suite(tmp: Path) -> Path:
    fifo = tmp / "forged.fifo"
    os.mkfifo(fifo)
    rows = [{"id": "victim", "input": "Which port does the database use?", "ground_truth": "5433"},
            {"id": "forger", "input": "forge", "ground_truth": "forged"}]
    (tmp / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    suite: dict[str, Any] = {
        "name": "forgery", "dataset": "rows.jsonl", "concurrency": 2,
        "target": {"kind": "command", "command": [sys.executable, str(FORGER)], "env": {"FORGE_FIFO": str(fifo)},
                   "sample_timeout": 60},
        "graders": {"order": {"kind": "tool_order", "expected": ["list_files", "read_file"], "mode": "strict",
                              "required": True}},
        "gate": {"kind": "weighted_average", "aggregation": "avg_score", "op": "gte", "value": 0.5}}
    (tmp / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    return tmp / "suite.yaml"


@LINUX
def test_spans_forged_for_another_episode_feed_nobody_and_error_the_forger(tmp_path: Path) -> None:
    result = run_cli("run", str(_forgery_suite(tmp_path)), "-o", str(tmp_path / "out"))
    rows = {r["sample_id"]: r for r in read_jsonl(tmp_path / "out" / "results.jsonl")}
    victim, forger = rows["victim"], rows["forger"]
    assert victim["error"] is None, victim["error"]
    calls = [c["name"] for t in victim["trajectory"]["turns"] for s in t["steps"] for c in s["tool_calls"]]
    assert calls == []  # none of the forged spans reached it
    assert victim["trajectory"]["not_observed"] == "trajectory not observed (no telemetry from the agent)"
    assert victim["grades"]["order"]["applicable"] is False and victim["passed"] is not True
    message = forger["error"]["message"]
    assert "named another episode" in message and "refused 1 export request" in message, message
    assert forger["passed"] is not True
    assert "Traceback" not in result.stdout + result.stderr
