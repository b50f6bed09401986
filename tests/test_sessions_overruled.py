"""A deterministic detection the judge overrules never vanishes: it stays in `turn_results` marked
`overruled_by_judge` with the judge's reason and is counted apart (`overruled_detections`); with
`--judge-confirms off` (or `judge_confirms: off` in a recorded_sessions suite) deterministic detections are final."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evals_cli.runner import RunOptions
from evals_cli.sessions.cli import run_sessions_suite
from tests.helpers import run_cli
from tests.scripted_server import ScriptedServer, text

ROOT = Path(__file__).resolve().parent.parent
DATASET = ROOT / "datasets" / "multi_agent_sessions.jsonl"
CORRECTED = "refund-user-corrects"  # turn 1 is followed by an explicit user correction: rdm


def lenient_judge(path: str, body: dict[str, Any]) -> Any:
    """A judge that finds every turn good, every metric fine and every task done."""
    content = body["messages"][1]["content"]
    if "Metric: turn\n" in content:
        return text(json.dumps({"reason": "the answer looked fine to me", "choice": "good"}))
    if "Metric: task_completion\n" in content:
        return text(json.dumps({"reason": "done", "verdict": "pass"}))
    return text(json.dumps({"reason": "fine", "score": 9}))


def rows(out: Path) -> dict[str, dict[str, Any]]:
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines() if x.strip()]
    return {r["session_id"]: r for r in lines}


def analyze(server: ScriptedServer, tmp_path: Path, *extra: str) -> tuple[dict[str, dict[str, Any]], dict[str, Any],
                                                                          str]:
    server.script = lenient_judge
    out = tmp_path / "out"
    result = run_cli("analyze", str(DATASET), "-o", str(out), "--judge-model", "scripted", "--judge-base-url",
                     server.url, *extra)
    assert result.returncode in (0, 1), result.stderr
    return rows(out), json.loads((out / "summary.json").read_text()), result.stdout


def test_an_overruled_detection_stays_visible_and_is_counted_apart(server: ScriptedServer, tmp_path: Path) -> None:
    found, summary, stdout = analyze(server, tmp_path)
    turn = found[CORRECTED]["turn_results"][0]
    assert turn["is_bad"] is False and turn["detection_type"] == "none"
    [rdm] = [d for d in turn["detections"] if d["type"] == "rdm"]
    assert rdm["overruled_by_judge"] is True and rdm["judge_reason"] == "the answer looked fine to me"
    assert rdm["source"] == "deterministic"
    conversation = found[CORRECTED]["conversation"]
    assert conversation["rdm_detections"] == 0 and conversation["overruled_detections"] >= 1
    overruled = sum(1 for r in found.values() for t in r["turn_results"] for d in t["detections"]
                    if d["overruled_by_judge"])
    assert overruled >= 2  # rdm here, ccm and hallucination in their sessions
    assert summary["conversation"]["overruled_detections"] == overruled
    assert f"{overruled} detection(s) overruled by the judge" in stdout
    assert "judge overruled rdm" in stdout


def test_judge_confirms_off_keeps_deterministic_detections_final(server: ScriptedServer, tmp_path: Path) -> None:
    found, summary, _ = analyze(server, tmp_path, "--judge-confirms", "off")
    turn = found[CORRECTED]["turn_results"][0]
    assert (turn["is_bad"], turn["detection_type"]) == (True, "rdm")
    assert not any(d["overruled_by_judge"] for d in turn["detections"])
    assert "judge_confirms off" in turn["reason"] and "the answer looked fine to me" in turn["reason"]
    assert found[CORRECTED]["conversation"]["rdm_detections"] == 1
    assert summary["conversation"]["overruled_detections"] == 0
    assert len(server.judge_requests()) > 0  # the judge still ran


def test_judge_confirms_takes_only_on_or_off(tmp_path: Path) -> None:
    result = run_cli("analyze", str(DATASET), "-o", str(tmp_path / "out"), "--judge-confirms", "maybe")
    assert result.returncode == 2 and "--judge-confirms" in result.stderr


@pytest.mark.parametrize(("key", "bad"), [("off", True), ("on", False)])
def test_the_suite_key(server: ScriptedServer, tmp_path: Path, key: str, bad: bool) -> None:
    server.script = lenient_judge
    suite = (f"name: s\ndataset: {DATASET.as_posix()}\ntarget:\n  kind: recorded_sessions\n  judge_confirms: {key}\n"
             f"judge:\n  base_url: {server.url}\n  api_key: sk-test\n  model: scripted\n")
    path = tmp_path / "suite.yaml"
    path.write_text(suite, encoding="utf-8")
    run_sessions_suite(path, RunOptions(output=tmp_path / "out"), quiet=True)
    turn = rows(tmp_path / "out")[CORRECTED]["turn_results"][0]
    assert turn["is_bad"] is bad
    assert any(d["type"] == "rdm" for d in turn["detections"])
