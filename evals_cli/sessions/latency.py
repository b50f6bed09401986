"""Where the time went: per agent, per turn and per tool (count, total, p50, p95, max), and the slowest
interaction and tool call named (`turn 2 · executor · issue_refund`), because "the session was slow" is not
actionable and "the reviewer's second lookup took 4 s" is. Missing latencies are left out, never counted as 0.
Quantiles interpolate linearly (`evals_cli.stats.quantile`, numpy's default)."""

from __future__ import annotations

from evals_cli.sessions.models import AgentSession
from evals_cli.sessions.results import LatencyStats, SessionLatency, SlowestStep, TurnLatency
from evals_cli.stats import quantile


def stats(values: list[float]) -> dict[str, float | int | None]:
    ordered = sorted(values)
    if not ordered:
        return {"count": 0, "total_ms": 0.0, "p50_ms": None, "p95_ms": None, "max_ms": None}
    return {"count": len(ordered), "total_ms": round(sum(ordered), 3), "p50_ms": round(quantile(ordered, 0.5), 3),
            "p95_ms": round(quantile(ordered, 0.95), 3), "max_ms": ordered[-1]}


def session_latency(session: AgentSession) -> SessionLatency:
    per_agent: dict[str, list[float]] = {a.agent_id: [] for a in session.agents}
    per_tool: dict[str, list[float]] = {}
    per_turn: list[TurnLatency] = []
    slowest: SlowestStep | None = None
    slowest_call: SlowestStep | None = None
    for t, turn in enumerate(session.turns):
        in_turn = []
        for interaction in turn.agent_interactions:
            agent = interaction.agent_id
            if interaction.latency_ms is not None:
                in_turn.append(interaction.latency_ms)
                per_agent[agent].append(interaction.latency_ms)
                if slowest is None or interaction.latency_ms > slowest.latency_ms:
                    slowest = SlowestStep(name=f"turn {t + 1} · {agent}", kind="interaction", turn_index=t,
                                          agent_id=agent, latency_ms=interaction.latency_ms)
            for _, call in interaction.tool_calls:
                if call.latency_ms is None:
                    continue
                per_tool.setdefault(call.tool_name, []).append(call.latency_ms)
                if slowest_call is None or call.latency_ms > slowest_call.latency_ms:
                    slowest_call = SlowestStep(name=f"turn {t + 1} · {agent} · {call.tool_name}", kind="tool_call",
                                               turn_index=t, agent_id=agent, tool=call.tool_name,
                                               latency_ms=call.latency_ms)
        per_turn.append(TurnLatency(turn_index=t, **stats(in_turn)))
    measured = [v for values in per_agent.values() for v in values]
    total = session.total_latency_ms if session.total_latency_ms is not None else (sum(measured) if measured else None)
    return SessionLatency(
        total_ms=total,
        per_agent={a: LatencyStats(**stats(v)) for a, v in per_agent.items()},
        per_turn=per_turn,
        per_tool={name: LatencyStats(**stats(v)) for name, v in sorted(per_tool.items())},
        slowest_interaction=slowest,
        slowest_tool_call=slowest_call,
    )
