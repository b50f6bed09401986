"""The HTML report of a recorded-sessions run (`evals analyze --html`, `evals report` of a recorded_sessions run).

A finding such as "hallucination: RF-9999" can only be checked against what was said, so each session shows
its conversation turn by turn (the user's message, every agent's thoughts, tool calls with their arguments and
results, outputs and handoffs, the answer the user got) with the findings pinned to the turn, the agent and the
call they concern, each kind explained in one line. A turn's badge follows every verdict on it: a turn with a
HIGH tool violation is never badged "good".

A session's analysis (`SessionAnalysis`, read back from its results line) holds the verdicts, not the
conversation; the conversation is the recording the run read (`summary.dataset`, from the run's analyze.json).
`session_records` is the one place that reads them both: a change of the sessions results format is adapted
there.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evals_cli.exporters.common import KINDS, prepare
from evals_cli.exporters.html_charts import Histogram, histogram
from evals_cli.exporters.html_pages import environment, pretty
from evals_cli.sessions.findings import PINNED_KINDS, Finding, coordination_by_turn, turn_findings
from evals_cli.sessions.models import AgentInteraction, AgentSession
from evals_cli.sessions.results import (
    InteractionResult,
    SessionAnalysis,
    SessionsSummary,
    ToolViolation,
    TurnResult,
)

SESSION_STATUSES = [("clean", "no problem found"), ("problems", "with problems"), ("errored", "errored")]
OPEN_SESSIONS = 25  # sessions with problems start expanded when there are at most this many



@dataclass(frozen=True)
class SessionRecord:
    """One session as the report reads it: the analysis (results line) and the recording it was made from
    (None when the recording is no longer where the run read it)."""

    analysis: SessionAnalysis
    recording: AgentSession | None


def _recordings(path: Path, wanted: set[str]) -> dict[str, AgentSession]:
    from evals_cli.sessions.reader import iter_rows

    found: dict[str, AgentSession] = {}
    for _, row in iter_rows(path):
        if isinstance(row, AgentSession) and row.id in wanted and row.id not in found:
            found[row.id] = row
            if len(found) == len(wanted):
                break
    return found


def session_records(analyses: Iterable[SessionAnalysis], summary: SessionsSummary,
                    recording: Path | None = None) -> tuple[list[SessionRecord], list[str]]:
    """Every session of the run with its recorded conversation, and notes on what could not be shown. The
    recording is `recording`, else the file the run read (`summary.dataset`); a session whose recording is
    missing or no longer matches its analysis (a file edited since) is shown without its conversation."""
    items = list(analyses)
    notes: list[str] = []
    path = recording if recording is not None else (Path(summary.dataset) if summary.dataset else None)
    found: dict[str, AgentSession] = {}
    if path is None:
        notes.append("the run names no session file: conversations are not shown")
    elif not path.is_file():
        notes.append(f"{path}: the session file the run read is not there any more: conversations are not shown")
    else:
        from evals_cli.errors import ConfigError

        try:
            found = _recordings(path, {a.session_id for a in items})
        except (ConfigError, OSError) as exc:
            notes.append(f"{path}: unreadable ({exc}): conversations are not shown")
    records = []
    for analysis in items:
        session = found.get(analysis.session_id)
        if session is not None and analysis.turn_results and len(session.turns) != len(analysis.turn_results):
            notes.append(f"{analysis.session_id}: {path} has {len(session.turns)} turns, the analysis "
                         f"{len(analysis.turn_results)}: the file changed since the run; conversation not shown")
            session = None
        elif session is None and path is not None and path.is_file() and not analysis.error:
            notes.append(f"{analysis.session_id}: not in {path} any more: conversation not shown")
        records.append(SessionRecord(analysis, session))
    return records, notes


# --- what the page shows --------------------------------------------------------------------------------------

@dataclass
class Chip:
    """A badge on a turn, a call or an agent: its text, its colour (bad, mid, good, muted) and what it means."""

    text: str
    css: str
    title: str = ""


@dataclass
class StepView:
    kind: str  # thought, tool, output
    text: str = ""
    tool: str = ""
    arguments: str = ""
    result: str = ""
    latency_ms: float | None = None
    violations: list[ToolViolation] = field(default_factory=list)


@dataclass
class InteractionView:
    agent_id: str
    role: str
    steps: list[StepView]
    handoff_to: str | None
    handoff_context: str
    latency_ms: float | None
    scores: InteractionResult | None
    chips: list[Chip] = field(default_factory=list)

    @property
    def notes(self) -> list[str]:
        """The judge's reasons and findings on this interaction, less the tool violations (each is shown on its
        call and among the turn's findings)."""
        notes = self.scores.notes if self.scores is not None else []
        return [n for n in notes if n.split(" ", 1)[0] not in KINDS]


@dataclass
class TurnView:
    number: int  # from 1
    user: str | None
    interactions: list[InteractionView]
    final_response: str | None
    verdict: TurnResult | None
    chips: list[Chip]
    findings: list[Finding]

    @property
    def flagged(self) -> bool:
        return any(c.css in ("bad", "mid") for c in self.chips)


@dataclass
class SessionView:
    index: int
    anchor: str
    name: str
    analysis: SessionAnalysis
    status: str
    status_text: str
    problems: list[str]
    turns: list[TurnView] = field(default_factory=list)
    recorded: bool = False
    source_notes: list[str] = field(default_factory=list)  # what the recording says of itself (a trace cut off, ...)
    agents: dict[str, str] = field(default_factory=dict)  # agent id -> role

    @property
    def badge(self) -> str:
        """The sample report's badge colours: clean green, with problems red, errored purple."""
        return {"clean": "passed", "errored": "errored"}.get(self.status, "failed")


def _session_problems(a: SessionAnalysis) -> list[str]:
    """What a person should look at in a session, in words (the session has no pass/fail of its own)."""
    found = [f"turn {t.turn_index + 1}: {t.detection_type}" for t in a.turn_results if t.is_bad]
    if a.task_completion is False:
        found.append("task not completed")
    found += [f"{n} {sev} tool violation{'s' if n > 1 else ''}" for sev, n in sorted(a.tool_validation.by_severity.items())]
    c = a.coordination
    found += [f"{len(items)} {what}" for items, what in ((c.redundant_calls, "redundant call(s)"),
                                                         (c.lost_handoffs, "lost handoff(s)"),
                                                         (c.out_of_role_calls, "out-of-role call(s)"),
                                                         (c.repeated_calls, "repeated call(s)")) if items]
    if a.judge.errors:
        found.append(f"{len(a.judge.errors)} judge call(s) without a verdict")
    return found


def _text(value: Any) -> str:
    return value if isinstance(value, str) else pretty(value)


def _turn_chips(verdict: TurnResult | None, turn_violations: list[ToolViolation],
                coordination: dict[str, dict[int, list[str]]], t: int) -> list[Chip]:
    """The badges of turn `t` (0-based): its detection, its tool violations by severity, its coordination
    findings, a judge's overruling; "good" when none of them is bad."""
    chips: list[Chip] = []
    if verdict is not None and verdict.is_bad:
        chips.append(Chip(f"{verdict.detection_type} ({verdict.confidence:.2f})", "bad",
                          KINDS.get(verdict.detection_type, verdict.detection_type)))
    for severity, css in (("HIGH", "bad"), ("MEDIUM", "mid")):
        kinds = sorted({v.kind for v in turn_violations if v.severity == severity})
        if kinds:
            chips.append(Chip(f"{severity}: {', '.join(k.lower() for k in kinds)}", css,
                              "; ".join(f"{k}: {KINDS.get(k, k)}" for k in kinds)))
    for kind in PINNED_KINDS:
        items = coordination[kind].get(t + 1, [])
        if items:
            chips.append(Chip(f"{kind}{'s' if len(items) > 1 else ''}", "mid", KINDS[kind]))
    if any(d.overruled_by_judge for d in (verdict.detections if verdict else [])):
        chips.append(Chip("overruled by the judge", "muted", KINDS["overruled"]))
    if not any(c.css in ("bad", "mid") for c in chips):
        chips.insert(0, Chip("good", "good", "no detection, no tool violation, no coordination finding"))
    return chips


def _steps(a: SessionAnalysis, it: AgentInteraction, t: int,
           violations: dict[tuple[int, int], list[ToolViolation]]) -> list[StepView]:
    """One agent interaction's steps (thoughts, tool calls with their violations, outputs), in order."""
    steps = []
    for s, step in enumerate(it.agent_steps):
        if step.thought:
            steps.append(StepView("thought", step.thought))
        if step.tool_call is not None:
            call = step.tool_call
            steps.append(StepView("tool", tool=call.tool_name, arguments=pretty(call.parameters),
                                  result=_text(call.result), latency_ms=call.latency_ms,
                                  violations=violations.get((t, s), []) if _owns(a, t, it.agent_id, s) else []))
        if step.output:
            steps.append(StepView("output", step.output))
    return steps


def turn_views(a: SessionAnalysis, session: AgentSession | None) -> list[TurnView]:
    """Each turn with its conversation (when recorded) and every verdict on it, the badges following them."""
    verdicts = {t.turn_index: t for t in a.turn_results}
    violations: dict[tuple[int, int], list[ToolViolation]] = {}
    for v in a.tool_validation.violations:
        violations.setdefault((v.turn_index, v.step_index), []).append(v)
    by_agent_turn = {(v.turn_index, v.agent_id) for v in a.tool_validation.violations}
    coordination = coordination_by_turn(a)
    count = len(session.turns) if session is not None else len(a.turn_results)
    turns = []
    for t in range(count):
        verdict = verdicts.get(t)
        recorded = session.turns[t] if session is not None else None
        findings = turn_findings(a, t, coordination)
        turn_violations = [v for v in a.tool_validation.violations if v.turn_index == t]
        chips = _turn_chips(verdict, turn_violations, coordination, t)
        interactions: list[InteractionView] = []
        if recorded is not None:
            scored = verdict.interactions if verdict is not None else []
            for i, it in enumerate(recorded.agent_interactions):
                steps = _steps(a, it, t, violations)
                score = scored[i] if i < len(scored) and scored[i].agent_id == it.agent_id else None
                agent_chips = []
                if (t, it.agent_id) in by_agent_turn:
                    worst = "HIGH" if any(v.severity == "HIGH" and v.agent_id == it.agent_id
                                          for v in turn_violations) else "MEDIUM"
                    agent_chips.append(Chip(f"{worst} tool violation", "bad" if worst == "HIGH" else "mid"))
                interactions.append(InteractionView(
                    agent_id=it.agent_id, role=session.agent(it.agent_id).role if session else "", steps=steps,
                    handoff_to=it.handoff_to, handoff_context=it.context_text(), latency_ms=it.latency_ms,
                    scores=score, chips=agent_chips))
        elif verdict is not None:  # no recording: the verdicts alone, as the analysis has them
            interactions = [InteractionView(i.agent_id, "", [], i.handoff_to, "", None, i) for i in verdict.interactions]
        turns.append(TurnView(number=t + 1, user=recorded.user_message if recorded else None,
                              interactions=interactions,
                              final_response=recorded.final_response if recorded else None,
                              verdict=verdict, chips=chips, findings=findings))
    return turns


def _owns(a: SessionAnalysis, turn: int, agent: str, step: int) -> bool:
    """A violation is pinned by (turn, step); two interactions of a turn can have a step of the same index."""
    return any(v.turn_index == turn and v.step_index == step and v.agent_id == agent
               for v in a.tool_validation.violations)


def _source_notes(session: AgentSession | None) -> list[str]:
    """The notes a recording carries about itself (`metadata.notes`: what a traced conversation's rebuilding
    could not see, or that it was cut off mid-call), as text."""
    notes = (session.metadata or {}).get("notes") if session is not None else None
    return [str(n) for n in notes] if isinstance(notes, list) else []


def session_view(index: int, record: SessionRecord) -> SessionView:
    analysis = record.analysis
    if analysis.error:
        status, text, problems = "errored", "error", [analysis.error]
    else:
        problems = _session_problems(analysis)
        status = "problems" if problems else "clean"
        text = f"{len(problems)} problem{'s' if len(problems) != 1 else ''}" if problems else "no problem found"
    session = record.recording
    return SessionView(index=index, anchor=f"s-{index}", name=analysis.session_id, analysis=analysis,
                       status=status, status_text=text, problems=problems,
                       turns=[] if analysis.error else turn_views(analysis, session), recorded=session is not None,
                       source_notes=_source_notes(session),
                       agents={a.agent_id: a.role for a in session.agents} if session else {})


@dataclass
class SessionsReportView:
    summary: SessionsSummary
    title: str
    sessions: list[SessionView]
    notes: list[str]
    histograms: list[Histogram]
    kinds: dict[str, str]
    noun: str = "sessions"
    statuses: list[tuple[str, str]] = field(default_factory=lambda: list(SESSION_STATUSES))
    open_problems: bool = True


def sessions_report_view(analyses: Iterable[SessionAnalysis], summary: SessionsSummary, title: str | None = None,
                         notes: Iterable[str] = (), recording: Path | None = None) -> SessionsReportView:
    records, missing = session_records(analyses, summary, recording)
    ok = [r.analysis for r in records if not r.analysis.error]
    histograms = [histogram(label, [getattr(a, key) for a in ok])
                  for key, label in (("overall_score", "overall score"), ("conversation_score", "conversation"),
                                     ("tool_use_score", "tool use"), ("coordination_score", "coordination"))]
    sessions = [session_view(i, r) for i, r in enumerate(records, 1)]
    return SessionsReportView(summary=summary, title=title or f"{summary.name} — sessions report", sessions=sessions,
                              notes=[*notes, *missing[:10], *([f"… and {len(missing) - 10} more"]
                                                              if len(missing) > 10 else [])],
                              histograms=histograms, kinds=KINDS,
                              open_problems=sum(1 for s in sessions if s.status != "clean") <= OPEN_SESSIONS)


def session_class(score: float | None, low_is_good: bool = False) -> str:
    """A sessions score coloured as the terminal view colours it (green from 0.8, amber from 0.5, red below)."""
    if score is None:
        return "muted"
    value = 1 - score if low_is_good else score
    return "good" if value >= 0.8 else ("mid" if value >= 0.5 else "bad")


def drift_class(score: float | None) -> str:
    """Intent drift: lower is better."""
    return session_class(score, low_is_good=True)


def render_sessions_html(analyses: Iterable[SessionAnalysis], summary: SessionsSummary, *, title: str | None = None,
                         notes: Iterable[str] = (), recording: Path | None = None) -> str:
    """The report of a sessions run as one HTML string: the gate and its checks, the per-agent means, a sortable,
    filterable table of sessions, and per session its conversation turn by turn with every finding pinned where
    it belongs, its agents, coordination, tool violations and recommendations. `recording`: the session file,
    when it is no longer where the run read it (`summary.dataset`)."""
    view = sessions_report_view(analyses, summary, title, notes, recording)
    env = environment()
    env.globals["score_class"] = session_class
    env.globals["drift_class"] = drift_class
    return env.get_template("sessions.html.j2").render(v=view, s=view.summary)


def write_sessions_html(analyses: Iterable[SessionAnalysis], summary: SessionsSummary, path: Path | str, *,
                        title: str | None = None, notes: Iterable[str] = (), recording: Path | None = None) -> Path:
    out = prepare(path)
    out.write_text(render_sessions_html(analyses, summary, title=title, notes=notes, recording=recording),
                   encoding="utf-8")
    return out
