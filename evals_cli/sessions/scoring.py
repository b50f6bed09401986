"""The weighted formulas, in one place so the tests can check them by hand.

Every average drops what does not apply (null) and renormalises the remaining weights
(`evals_cli.gate.scores.weighted`, the gate's own rule): an agent without tools is not punished for using none, and a
session whose judge failed on reasoning is scored on the rest.

- interaction score = weighted(tool_use, reasoning, handoff, response_quality; interaction_weights)
- agent metric      = mean of that metric over the agent's interactions (nulls dropped)
- agent overall     = weighted(the agent's metric means; interaction_weights)
- session overall   = weighted(conversation, tool_use, coordination, reasoning, 1 - intent_drift; session_weights)
- a metric measured twice (deterministically and by the judge) is the mean of the two.
Results are rounded to 6 decimals: 0.75, not 0.7499999999999999, in the results file.
"""

from __future__ import annotations

from collections.abc import Iterable

from evals_cli.gate.scores import weighted
from evals_cli.sessions.results import AgentScores, InteractionResult
from evals_cli.sessions.spec import InteractionWeights, SessionWeights

METRICS = ("tool_use", "reasoning", "handoff", "response_quality")
FIELDS = {"tool_use": "tool_use_score", "reasoning": "reasoning_score", "handoff": "handoff_score",
          "response_quality": "response_quality"}


def rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def mean(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return rounded(sum(present) / len(present)) if present else None


def both(deterministic: float | None, judged: float | None) -> float | None:
    """A metric with a deterministic part and a judged part: their mean, or whichever exists."""
    return mean([deterministic, judged])


def interaction_score(result: InteractionResult, weights: InteractionWeights) -> float | None:
    return rounded(weighted({m: getattr(result, FIELDS[m]) for m in METRICS}, weights.model_dump()))


def agent_scores(role: str, interactions: list[InteractionResult], weights: InteractionWeights) -> AgentScores:
    means = {m: mean(getattr(i, FIELDS[m]) for i in interactions) for m in METRICS}
    overall = rounded(weighted(means, weights.model_dump()))
    return AgentScores(role=role, overall=overall, interactions_count=len(interactions), **means)


def session_overall(conversation: float | None, tool_use: float | None, coordination: float | None,
                    reasoning: float | None, intent_drift: float | None, weights: SessionWeights) -> float | None:
    scores = {"conversation": conversation, "tool_use": tool_use, "coordination": coordination,
              "reasoning": reasoning, "intent_drift": None if intent_drift is None else 1.0 - intent_drift}
    return rounded(weighted(scores, weights.model_dump()))
