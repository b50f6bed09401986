"""The Rich view of a sessions evaluation: an overview table, then per session the tree (turns → agents with
their scores), the per-agent table, each finding on its turn explained as the HTML report explains it
(sessions/findings.py), the recommendations, and a footer with the gate's verdict.
Same conventions as the run table: `—` for a score that does not apply, green/yellow/red by score, plain text
when stdout is not a terminal (see `display.console.make_console`)."""

from __future__ import annotations

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from evals_cli.sessions.findings import coordination_by_turn, turn_findings
from evals_cli.sessions.results import SessionAnalysis, SessionsSummary, TurnResult
from evals_cli.wording import plural


def fmt(score: float | None) -> str:
    return "—" if score is None else f"{score:.2f}"


def style(score: float | None, low_is_good: bool = False) -> str:
    if score is None:
        return "dim"
    value = 1 - score if low_is_good else score
    return "green" if value >= 0.8 else ("yellow" if value >= 0.5 else "red")


def scored(label: str, score: float | None, low_is_good: bool = False) -> Text:
    return Text.assemble(f"{label} ", (fmt(score), style(score, low_is_good)))


def task_mark(analysis: SessionAnalysis) -> Text:
    if analysis.task_completion is None:
        return Text("?", style="yellow")
    return Text("✓", style="green") if analysis.task_completion else Text("✗", style="red")


def overview_table(analyses: list[SessionAnalysis], title: str) -> Table:
    table = Table(title=title, box=box.SIMPLE_HEAVY, title_justify="left")
    for name in ("session", "overall", "task", "bad turns", "violations", "coordination", "drift", "slowest step"):
        table.add_column(name, justify="left" if name in ("session", "slowest step") else "right",
                         no_wrap=name == "session")  # an id is what people search for: never cut
    for a in analyses:
        if a.error:
            table.add_row(a.session_id, Text("error", style="yellow"), "", "", "", "", "", a.error[:60])
            continue
        c = a.conversation
        found = ", ".join(sorted({t.detection_type for t in a.turn_results if t.is_bad}))
        sev = a.tool_validation.by_severity
        violations = ", ".join(f"{n} {s}" for s, n in sorted(sev.items())) or "0"
        slow = a.latency.slowest_tool_call or a.latency.slowest_interaction
        table.add_row(a.session_id, Text(fmt(a.overall_score), style(a.overall_score)), task_mark(a),
                      f"{c.bad_responses}/{c.total_responses}" + (f" ({found})" if found else ""), violations,
                      Text(fmt(a.coordination_score), style(a.coordination_score)),
                      Text(fmt(a.intent_drift_score), style(a.intent_drift_score, low_is_good=True)),
                      f"{slow.name} {slow.latency_ms:.0f} ms" if slow else "—")
    return table


def _turn_label(turn: TurnResult) -> Text:
    head = Text(f"turn {turn.turn_index + 1} ")
    if not turn.is_bad:
        head.append("✓ good", style="green")
        overruled = sorted({d.type for d in turn.detections if d.overruled_by_judge})
        if overruled:
            head.append(f" (judge overruled {', '.join(overruled)})", style="yellow")
    else:
        head.append(f"✗ {turn.detection_type} ({turn.confidence:.2f})", style="red")
    if turn.reason:
        head.append(f" — {turn.reason[:140]}", style="dim")
    return head


def session_tree(a: SessionAnalysis) -> Tree:
    source = f" ({a.task_completion_source})" if a.task_completion_source else ""
    root = Text.assemble((a.session_id, "bold"), "  ", scored("overall", a.overall_score), " · task ",
                         task_mark(a), source, " · ", scored("coordination", a.coordination_score), " · ",
                         scored("drift", a.intent_drift_score, low_is_good=True))
    tree = Tree(root)
    for turn in a.turn_results:
        branch = tree.add(_turn_label(turn))
        for i in turn.interactions:
            line = Text.assemble((i.agent_id, "bold"), " ", (fmt(i.score), style(i.score)))
            for label, value in (("tool use", i.tool_use_score), ("reasoning", i.reasoning_score),
                                 ("handoff", i.handoff_score), ("response", i.response_quality)):
                if value is not None:
                    line.append("  ")
                    line.append_text(scored(label, value))
            if i.handoff_to:
                line.append(f" → {i.handoff_to}", style="dim")
            branch.add(line)
    return tree


def agents_table(a: SessionAnalysis) -> Table:
    table = Table(box=box.SIMPLE, show_edge=False, pad_edge=False)
    for name in ("agent", "overall", "tool use", "reasoning", "handoff", "response", "interactions", "issues"):
        table.add_column(name, justify="left" if name == "agent" else "right")
    for agent_id, s in a.per_agent_scores.items():
        table.add_row(agent_id, *[Text(fmt(v), style(v)) for v in (s.overall, s.tool_use, s.reasoning, s.handoff,
                                                                   s.response_quality)],
                      str(s.interactions_count), str(len(s.issues)))
    return table


def explained_findings(a: SessionAnalysis) -> Text:
    """Each finding on its turn with its evidence, and what its kind means and why it matters the first time the
    kind appears in the session: the explanations the HTML report pins to the same findings."""
    text = Text()
    coordination = coordination_by_turn(a)
    explained: set[str] = set()
    for t in range(len(a.turn_results)):
        for f in turn_findings(a, t, coordination):
            text.append(f"  turn {t + 1} ", style="dim")
            text.append(f.kind, style={"bad": "red", "mid": "yellow"}.get(f.css, "dim"))
            text.append(f": {f.evidence[:300]}" if f.evidence else "")
            text.append(f" ({f.detail})\n" if f.detail else "\n", style="dim")
            if f.kind not in explained and f.meaning:
                explained.add(f.kind)
                text.append(f"      {f.meaning}\n", style="italic")
    return text


def findings(a: SessionAnalysis) -> Text:
    text = explained_findings(a)
    for rec in a.recommendations:
        text.append("  → ", style="cyan")
        text.append(rec + "\n")
    for error in a.judge.errors[:3]:
        text.append("  judge ", style="yellow")
        text.append(error[:200] + "\n")
    lat = a.latency
    if lat.total_ms is not None:
        text.append(f"  latency {lat.total_ms / 1000:.2f} s", style="dim")
        if lat.slowest_interaction:
            text.append(f" · slowest interaction {lat.slowest_interaction.name} "
                        f"{lat.slowest_interaction.latency_ms:.0f} ms", style="dim")
        if lat.slowest_tool_call:
            text.append(f" · slowest tool call {lat.slowest_tool_call.name} "
                        f"{lat.slowest_tool_call.latency_ms:.0f} ms", style="dim")
        text.append("\n")
    return text


def footer(summary: SessionsSummary, hidden: int = 0) -> Text:
    text = Text()
    c = summary.conversation
    completion = "—" if summary.task_completion_rate is None else f"{summary.task_completion_rate:.0%}"
    text.append(f"{plural(summary.sessions, 'session')} ({summary.errored} errored): mean overall "
                f"{fmt(summary.mean_overall_score)}, task completion {completion}")
    if summary.min_agent is not None:
        m = summary.min_agent
        text.append(f", lowest agent {m.agent_id} in {m.session_id} {m.score:.2f}")
    text.append(f"\nturns: {c.bad_responses}/{c.total_responses} bad (ccm {c.ccm_detections}, rdm {c.rdm_detections}, "
                f"hallucination {c.hallucination_detections}, judge {c.llm_judge_detections}"
                + (f"; {c.overruled_detections} detection(s) overruled by the judge" if c.overruled_detections else "")
                + "); tool violations: "
                + (", ".join(f"{s} {n}" for s, n in sorted(summary.violations_by_severity.items())) or "none") + "\n")
    judge = summary.judge
    if judge.model:
        text.append(f"judge {judge.model}: {judge.calls} calls, {len(judge.errors)} without a verdict, "
                    f"{judge.prompt_tokens + judge.completion_tokens:,} tokens\n")
    else:
        text.append("judge: off (deterministic metrics only; reasoning and response quality not measured)\n")
    if hidden:
        text.append(f"... {hidden} more {plural(hidden, 'session', count=False)} in the results file\n")
    if summary.abort_reason:
        text.append(f"Run {summary.status}: {summary.abort_reason}\n", style="bold yellow")
    return text


def gate_line(summary: SessionsSummary) -> Text:
    """The verdict, to be printed with soft_wrap=True (one line whatever the width: CI logs grep for it)."""
    if summary.gate is None:
        return Text("no gate")
    gate_style = {True: "bold green", False: "bold red", None: "bold yellow"}[summary.gate.passed]
    return Text(summary.gate.message, style=gate_style)


def render_sessions(analyses: list[SessionAnalysis], summary: SessionsSummary, hidden: int = 0,
                    details: bool = True) -> RenderableType:
    parts: list[RenderableType] = [overview_table(analyses, f"{summary.name}: multi-agent sessions")]
    if details:
        for a in analyses:
            if a.error:
                continue
            parts += [session_tree(a), agents_table(a), findings(a)]
    parts.append(footer(summary, hidden))
    return Group(*parts)
