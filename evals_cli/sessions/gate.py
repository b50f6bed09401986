"""The session-level gate: mean overall_score, task-completion rate, and the weakest agent of any session.

Each check that is set must hold. A check with nothing to measure (no session scored, no task verdict) makes
the gate undecided (passed None, exit 3), as in the main gate: an empty run never passes. Comparisons reuse
the main gate's `OPS` (with its float tolerance: 0.7 averages that land on 0.69999 still pass 0.7).
"""

from __future__ import annotations

from evals_cli.gate import OPS, SYMBOLS, UNDECIDED
from evals_cli.sessions.results import GateCheck, SessionGateResult, SessionsSummary
from evals_cli.sessions.spec import SessionGateSpec
from evals_cli.wording import plural


def _check(name: str, metric: float | None, value: float, detail: str = "") -> GateCheck:
    passed = None if metric is None else OPS["gte"](metric, value)
    return GateCheck(name=name, metric=metric, value=value, passed=passed, detail=detail)


def decide(summary: SessionsSummary, spec: SessionGateSpec) -> SessionGateResult:
    checks = []
    if spec.min_overall_score is not None:
        checks.append(_check("mean overall_score", summary.mean_overall_score, spec.min_overall_score,
                             f"over {plural(summary.sessions - summary.errored, 'session')}"))
    if spec.min_task_completion_rate is not None:
        checks.append(_check("task completion rate", summary.task_completion_rate, spec.min_task_completion_rate))
    if spec.min_agent_score is not None:
        low = summary.min_agent
        checks.append(_check("lowest agent score", None if low is None else low.score, spec.min_agent_score,
                             "" if low is None else f"{low.agent_id} in {low.session_id}"))
    parts = []
    for c in checks:
        if c.metric is None:
            parts.append(f"{c.name}: nothing to measure")
            continue
        where = f" ({c.detail})" if c.detail else ""
        parts.append(f"{c.name}{where} = {c.metric:.3f} {SYMBOLS['gte'] if c.passed else 'not ' + SYMBOLS['gte']} "
                     f"{c.value:g}")
    if any(c.passed is None for c in checks):
        return SessionGateResult(passed=None, checks=checks, message=UNDECIDED + "; ".join(parts))
    passed = all(c.passed for c in checks)
    return SessionGateResult(passed=passed, checks=checks,
                             message=f"Gate {'PASSED' if passed else 'FAILED'}: " + "; ".join(parts))
