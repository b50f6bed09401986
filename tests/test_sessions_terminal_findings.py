"""Issue 36 (a newcomer's stumble): `evals analyze` in the terminal explains each finding (what it means, why it
matters) as the HTML report does, from the same text; and issue 35 item 7: no handoff advice for a session
without handoffs."""

from __future__ import annotations

import json
from pathlib import Path

from evals_cli.exporters.common import KINDS
from evals_cli.exporters.html_sessions import render_sessions_html
from evals_cli.report import load_sessions
from evals_cli.sessions.explanations import FINDINGS
from tests.helpers import ROOT, run_cli
from tests.test_html_sessions import Turns

DATASET = ROOT / "datasets" / "multi_agent_sessions.jsonl"


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_the_terminal_explains_every_finding_the_html_report_explains(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = run_cli("analyze", str(DATASET), "-o", str(out), "--no-judge")
    terminal = _flat(result.stdout)
    view = load_sessions(out)
    pinned = Turns(render_sessions_html(view.analyses, view.summary)).sessions
    kinds = {kind for turns in pinned.values() for turn in turns for kind in turn["findings"]}
    assert kinds >= {"UNAUTHORIZED_TOOL", "HALLUCINATED_PARAMETER", "lost handoff", "redundant call", "ccm", "rdm",
                     "hallucination"}
    for kind in sorted(kinds):
        assert _flat(KINDS[kind]) in terminal, kind  # the HTML's explanation, word for word
    # each explanation says what the finding means and why it matters
    assert all(e.meaning and e.matters for e in FINDINGS.values())
    assert _flat("turn 1 hallucination: the final response states RF-9999, 43.99") in terminal


def test_no_handoff_advice_for_a_session_without_handoffs(tmp_path: Path) -> None:
    """The demo traces hold one agent and no handoff: drift advice must not tell it to restate the task in
    handoffs it never makes."""
    result = run_cli("analyze", str(ROOT / "suites" / "demo.traces.otlp.jsonl"), "--no-judge", "--json",
                     "-o", str(tmp_path / "run"))
    sessions = json.loads(result.stdout)["sessions"]
    advice = [r for s in sessions for r in s["recommendations"]]
    assert any("intent drift" in r for r in advice)  # the drift is still reported
    assert not any("handoff" in r for r in advice), advice
    # a session with handoffs keeps its handoff advice
    multi = run_cli("analyze", str(DATASET), "--no-judge", "--json", "-o", str(tmp_path / "multi"))
    lost = next(s for s in json.loads(multi.stdout)["sessions"] if s["session_id"] == "refund-lost-handoff")
    assert any("restate the task in every handoff" in r for r in lost["recommendations"])
