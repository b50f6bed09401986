"""Deterministic coordination signals between agents, and the deterministic fallbacks of the session metrics.

- handoffs: an interaction hands off when it names `handoff_to`, or when the next interaction of the turn is
  another agent's (the work moved on whether or not the recorder named it). Its key entities are the facts
  (identifiers, numbers; `text.py`) of the task and of the turn's user message: what the next agent cannot
  guess. Tool results are left out on purpose: they carry many incidental ids no summary needs; the judge
  weighs those. The deterministic handoff score is 0 for an empty context, else the share of key entities
  it carries (1 when there are none); below `thresholds.handoff_coverage` the context counts as lost.
- redundant calls: the same tool with the same canonical parameters (sorted keys) as an earlier call by a
  *different* agent: work redone because it was not passed on.
- out-of-role calls: a tool outside the calling agent's `tools_available` (the UNAUTHORIZED_TOOL violations).
- repeated calls: one agent making the same call (same tool, same canonical parameters) more than twice in a
  turn: a loop, such as the one an agent's step cap cuts off. Reported, not scored (no coordination between
  agents is involved).
The deterministic coordination score is the mean of those that apply: 1 - redundant/calls, 1 - lost/handoffs,
1 - out-of-role/calls (null with no call and no handoff).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from evals_cli.graders.calls import canonical_args
from evals_cli.models.trajectory import ToolCall
from evals_cli.sessions.models import AgentSession, SessionTurn
from evals_cli.sessions.results import Coordination, ToolValidation
from evals_cli.sessions.text import Evidence, content_tokens, facts


@dataclass
class Handoff:
    turn_index: int
    index: int
    source: str
    target: str
    score: float  # deterministic: entity coverage, 0 when the context is empty
    missing: list[str] = field(default_factory=list)
    lost: bool = False

    def describe(self) -> str:
        what = "an empty context" if self.score == 0 and not self.missing else f"a context missing {', '.join(self.missing)}"
        return f"turn {self.turn_index + 1} · {self.source} → {self.target}: {what}"


def handoff_target(turn: SessionTurn, index: int) -> str | None:
    interaction = turn.agent_interactions[index]
    if interaction.handoff_to:
        return interaction.handoff_to
    following = turn.agent_interactions[index + 1] if index + 1 < len(turn.agent_interactions) else None
    return following.agent_id if following is not None and following.agent_id != interaction.agent_id else None


def handoffs(session: AgentSession, coverage_needed: float) -> list[Handoff]:
    found = []
    task_facts = facts(session.task)
    for t, turn in enumerate(session.turns):
        keys = {f.key: f for f in [*task_facts, *facts(turn.user_message)]}
        for i, interaction in enumerate(turn.agent_interactions):
            target = handoff_target(turn, i)
            if target is None:
                continue
            context = interaction.context_text().strip()
            if not context:
                found.append(Handoff(t, i, interaction.agent_id, target, 0.0, lost=True))
                continue
            evidence = Evidence([context])
            missing = [str(f) for f in keys.values() if not evidence.supports(f)]
            score = 1.0 - len(missing) / len(keys) if keys else 1.0
            found.append(Handoff(t, i, interaction.agent_id, target, score, missing, lost=score < coverage_needed))
    return found


def redundant_calls(session: AgentSession) -> list[tuple[str, str]]:
    """(agent that redid the call, description) for every call redoing another agent's."""
    seen: dict[str, tuple[str, int]] = {}
    found = []
    for t, turn in enumerate(session.turns):
        for interaction in turn.agent_interactions:
            for _, call in interaction.tool_calls:
                key = call.tool_name + ":" + canonical_args(ToolCall(name=call.tool_name, arguments=call.parameters))
                first = seen.setdefault(key, (interaction.agent_id, t))
                if first[0] != interaction.agent_id:
                    found.append((interaction.agent_id, f"turn {t + 1} · {interaction.agent_id} redid "
                                  f"{call.tool_name} with the same parameters as {first[0]} (turn {first[1] + 1})"))
    return found


REPEATS_ALLOWED = 2  # as no_loops' max_repeats: a retry is no loop, a third identical call is


def repeated_calls(session: AgentSession) -> list[tuple[str, str]]:
    """(agent, description) for every call one agent made more than REPEATS_ALLOWED times in one turn."""
    found = []
    for t, turn in enumerate(session.turns):
        counts: dict[tuple[str, str, str], int] = {}
        for interaction in turn.agent_interactions:
            for _, call in interaction.tool_calls:
                same = (interaction.agent_id, call.tool_name, canonical_args(
                    ToolCall(name=call.tool_name, arguments=call.parameters)))
                counts[same] = counts.get(same, 0) + 1
        for (agent, tool, _), count in counts.items():
            if count > REPEATS_ALLOWED:
                found.append((agent, f"turn {t + 1} · {agent} called {tool} {count} times with the same parameters"))
    return found


def coordination_signals(session: AgentSession, validation: ToolValidation, found_handoffs: list[Handoff]) -> Coordination:
    redundant = redundant_calls(session)
    out_of_role = [f"turn {v.turn_index + 1} · {v.detail}" for v in validation.violations
                   if v.kind == "UNAUTHORIZED_TOOL"]
    lost = [h.describe() for h in found_handoffs if h.lost]
    parts = []
    if validation.calls:
        parts += [1 - len(redundant) / validation.calls, 1 - len(out_of_role) / validation.calls]
    if found_handoffs:
        parts.append(1 - len(lost) / len(found_handoffs))
    det = round(sum(parts) / len(parts), 6) if parts else None
    return Coordination(score=det, deterministic_score=det, redundant_calls=[d for _, d in redundant], lost_handoffs=lost,
                        out_of_role_calls=out_of_role, repeated_calls=[d for _, d in repeated_calls(session)])


def work_text(session: AgentSession) -> str:
    """What the agents produced: outputs, handoff contexts, tool calls and the final responses."""
    parts: list[str] = []
    for turn in session.turns:
        parts.append(turn.final_response)
        for interaction in turn.agent_interactions:
            parts += interaction.outputs
            parts.append(interaction.context_text())
            parts += [f"{c.tool_name} {canonical_args(ToolCall(name=c.tool_name, arguments=c.parameters))}"
                      for _, c in interaction.tool_calls]
    return "\n".join(parts)


def intent_drift_fallback(session: AgentSession) -> float | None:
    """1 - the share of the task's content tokens found in the agents' work (null for a task with none)."""
    task = content_tokens(session.task)
    if not task:
        return None
    return 1.0 - len(task & content_tokens(work_text(session))) / len(task)
