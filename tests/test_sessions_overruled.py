"""A deterministic detection the judge overrules never vanishes: it stays in `turn_results` marked
`overruled_by_judge` with the judge's reason and is counted apart (`overruled_detections`); with
`--judge-confirms off` (or `judge_confirms: off` in a recorded_sessions suite) deterministic detections are final.
The judge may overrule inferred detections only: a correction the user stated ("No, that's wrong") counts
whatever the judge says (issue 24, item 7: seed 003's lenient judge erased it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evals_cli.analyze import run_sessions_suite
from evals_cli.report import load_sessions
from evals_cli.runner import RunOptions
from tests.helpers import run_cli
from tests.scripted_server import ScriptedServer, text

ROOT = Path(__file__).resolve().parent.parent
DATASET = ROOT / "datasets" / "multi_agent_sessions.jsonl"
CORRECTED = "refund-user-corrects"  # turn 1 is followed by an explicit user correction: rdm
REASKED = "refund-user-reasks"  # turn 1 is followed by the same question again: ccm, inferred


def lenient_judge(path: str, body: dict[str, Any]) -> Any:
    """A judge that finds every turn good, every metric fine and every task done."""
    content = body["messages"][1]["content"]
    if "Metric: turn\n" in content:
        return text(json.dumps({"reason": "the answer looked fine to me", "choice": "good"}))
    if "Metric: task_completion\n" in content:
        return text(json.dumps({"reason": "done", "verdict": "pass"}))
    return text(json.dumps({"reason": "fine", "score": 9}))


def rows(out: Path) -> dict[str, dict[str, Any]]:
    """Each session's analysis, read back from the run's results (the results of every run)."""
    return {a.session_id: a.model_dump(mode="json") for a in load_sessions(out).analyses}


def analyze(server: ScriptedServer, tmp_path: Path, *extra: str) -> tuple[dict[str, dict[str, Any]], dict[str, Any],
                                                                          str]:
    server.script = lenient_judge
    out = tmp_path / "out"
    result = run_cli("analyze", str(DATASET), "-o", str(out), "--judge-model", "scripted", "--judge-base-url",
                     server.url, *extra)
    assert result.returncode in (0, 1), result.stderr
    return rows(out), load_sessions(out).summary.model_dump(mode="json"), result.stdout


def test_an_overruled_detection_stays_visible_and_is_counted_apart(server: ScriptedServer, tmp_path: Path) -> None:
    found, summary, stdout = analyze(server, tmp_path)
    turn = found[REASKED]["turn_results"][0]
    assert turn["is_bad"] is False and turn["detection_type"] == "none"
    [ccm] = [d for d in turn["detections"] if d["type"] == "ccm"]
    assert ccm["overruled_by_judge"] is True and ccm["judge_reason"] == "the answer looked fine to me"
    assert ccm["source"] == "deterministic" and ccm["stated_by_user"] is False
    conversation = found[REASKED]["conversation"]
    assert conversation["ccm_detections"] == 0 and conversation["overruled_detections"] == 1
    overruled = sum(1 for r in found.values() for t in r["turn_results"] for d in t["detections"]
                    if d["overruled_by_judge"])
    assert overruled == 2  # ccm here, hallucination in its session; never the user's own correction
    assert summary["conversation"]["overruled_detections"] == overruled
    assert f"{overruled} detection(s) overruled by the judge" in stdout
    assert "judge overruled ccm" in stdout


def test_a_correction_the_user_stated_counts_whatever_the_judge_says(server: ScriptedServer, tmp_path: Path) -> None:
    """Seed 003: "No, that's wrong. I asked about the headphones" after turn 1, and a judge that finds every turn
    good. The lenient judge used to erase it (rdm_detections 1 -> 0, counted as overruled instead)."""
    found, summary, stdout = analyze(server, tmp_path)
    turn = found[CORRECTED]["turn_results"][0]
    assert (turn["is_bad"], turn["detection_type"]) == (True, "rdm")
    [rdm] = [d for d in turn["detections"] if d["type"] == "rdm"]
    assert rdm["stated_by_user"] is True and rdm["overruled_by_judge"] is False and rdm["judge_reason"] is None
    assert "the judge found the turn good" in turn["reason"] and "the answer looked fine to me" in turn["reason"]
    conversation = found[CORRECTED]["conversation"]
    assert (conversation["rdm_detections"], conversation["bad_responses"], conversation["overruled_detections"]) == \
        (1, 1, 0)
    assert summary["conversation"]["rdm_detections"] == 1
    assert "judge overruled rdm" not in stdout
    assert len(server.judge_requests()) > 0  # the judge was asked, and said good


def test_a_soft_correction_is_inferred_and_the_judge_may_overrule_it() -> None:
    """A leading "No," may answer the agent's own question ("Shall I cancel it?" "No, keep it."): inferred."""
    from evals_cli.sessions.analysis import conversation_stats
    from evals_cli.sessions.detectors import combine_turn
    from evals_cli.sessions.results import Detection

    soft = Detection(type="rdm", confidence=0.7, source="deterministic", evidence="turn 2 corrects ('no, ')")
    turn = combine_turn(0, [soft], None, ("good", "the user only declined an offer"))
    assert turn.is_bad is False and turn.detections[0].overruled_by_judge is True
    stated = soft.model_copy(update={"confidence": 0.9, "stated_by_user": True})
    ccm = Detection(type="ccm", confidence=0.8, source="deterministic", evidence="turn 2 re-asks")
    turn = combine_turn(0, [stated, ccm], 0.8, ("good", "fine"))
    assert (turn.is_bad, turn.detection_type) == (True, "rdm")
    assert [(d.type, d.overruled_by_judge) for d in turn.detections] == [("rdm", False), ("ccm", True)]
    stats = conversation_stats([turn])  # the overruled ccm is counted as overruled, not as a ccm of a bad turn
    assert (stats.rdm_detections, stats.ccm_detections, stats.overruled_detections) == (1, 0, 1)


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
    turn = rows(tmp_path / "out")[REASKED]["turn_results"][0]
    assert turn["is_bad"] is bad
    assert any(d["type"] == "ccm" for d in turn["detections"])
