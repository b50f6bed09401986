"""Every finding of a session's analysis, pinned to the turn it concerns and explained: the detections (and the
judge's overrulings), the tool violations and the coordination findings.

The HTML report and the terminal view of `evals analyze` both list a turn's findings from `turn_findings`, each
with the same explanation (explanations.py), so what one shows the other shows too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from evals_cli.sessions.explanations import explain
from evals_cli.sessions.results import Detection, SessionAnalysis

_TURN = re.compile(r"^turn (\d+) · ")
PINNED_KINDS = ("lost handoff", "redundant call", "repeated call")  # coordination findings, each pinned to a turn


@dataclass
class Finding:
    """One detection or finding pinned to a turn: its kind, what it means and why it matters, and the evidence."""

    kind: str
    css: str  # bad, mid (a MEDIUM or coordination finding), muted (overruled by the judge)
    meaning: str
    evidence: str
    detail: str = ""


def pinned(items: list[str]) -> dict[int, list[str]]:
    """Coordination findings ('turn 2 · ...') by the turn (1-based) they name."""
    by_turn: dict[int, list[str]] = {}
    for item in items:
        found = _TURN.match(item)
        if found:
            by_turn.setdefault(int(found.group(1)), []).append(item[found.end():])
    return by_turn


def detection_finding(d: Detection) -> Finding:
    if d.overruled_by_judge:
        return Finding(d.type, "muted", f"{explain(d.type) or d.type}; overruled: {explain('overruled')}",
                       d.evidence, f"{d.source}, confidence {d.confidence:.2f}; the judge: {d.judge_reason or '—'}")
    how = f"{d.source}, confidence {d.confidence:.2f}" + ("; stated by the user" if d.stated_by_user else "")
    return Finding(d.type, "bad", explain(d.type) or d.type, d.evidence, how)


def coordination_by_turn(a: SessionAnalysis) -> dict[str, dict[int, list[str]]]:
    """The coordination findings of a session, per kind, by the turn (1-based) they name."""
    c = a.coordination
    return {"lost handoff": pinned(c.lost_handoffs), "redundant call": pinned(c.redundant_calls),
            "repeated call": pinned(c.repeated_calls)}


def turn_findings(a: SessionAnalysis, t: int, coordination: dict[str, dict[int, list[str]]] | None = None
                  ) -> list[Finding]:
    """Turn `t`'s (0-based) findings, in the order a reader meets them: detections, the judge's own verdict when
    it is the only one, tool violations, coordination findings. `coordination`: coordination_by_turn(a), when the
    caller lists every turn."""
    verdict = next((r for r in a.turn_results if r.turn_index == t), None)
    found = [detection_finding(d) for d in (verdict.detections if verdict else [])]
    if verdict is not None and verdict.is_bad and not verdict.detections and verdict.reason:
        found.append(Finding(verdict.detection_type, "bad", explain(verdict.detection_type), verdict.reason))
    found += [Finding(v.kind, "bad" if v.severity == "HIGH" else "mid", explain(v.kind) or v.kind, v.detail,
                      f"{v.severity} · {v.agent_id} · {v.tool}")
              for v in a.tool_validation.violations if v.turn_index == t]
    by_kind = coordination if coordination is not None else coordination_by_turn(a)
    for kind in PINNED_KINDS:
        found += [Finding(kind, "mid", explain(kind), item) for item in by_kind[kind].get(t + 1, [])]
    return found
