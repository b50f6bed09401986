"""`target: {kind: recorded_sessions}`: the dataset-level options of a multi-agent sessions evaluation.

Read only by the sessions pipeline (`SessionsSuiteSpec`), never by the live suite's target union: a recorded
sessions suite is a document kind of its own. A leaf module (pydantic only, no evals_cli import), so anything may
import it without a cycle; hence its own strict base instead of `evals_cli.models.base.StrictModel` (same config:
unknown keys are errors, so a typo never passes silently).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, allow_inf_nan=False)  # NaN never passes


class _Weights(_Strict):
    """Weights are relative: metrics that do not apply are dropped and the rest renormalised."""

    @model_validator(mode="after")
    def _not_all_zero(self) -> _Weights:
        if sum(self.model_dump().values()) <= 0:
            raise ValueError("the weights add up to 0; give at least one a positive weight")
        return self


class InteractionWeights(_Weights):
    """How one agent's interaction metrics make its score (per interaction and per agent)."""

    tool_use: float = Field(default=0.35, ge=0, description="Right tools, valid parameters.")
    reasoning: float = Field(default=0.25, ge=0, description="Quality of the agent's thoughts (judge).")
    handoff: float = Field(default=0.20, ge=0, description="Context passed to the next agent.")
    response_quality: float = Field(default=0.20, ge=0, description="Output fit for the agent's role (judge).")


class SessionWeights(_Weights):
    """How the session-level metrics make overall_score."""

    conversation: float = Field(default=0.30, ge=0, description="Share of turns not flagged bad.")
    tool_use: float = Field(default=0.25, ge=0, description="Mean tool-use score of all interactions.")
    coordination: float = Field(default=0.20, ge=0, description="Coordination between the agents.")
    reasoning: float = Field(default=0.15, ge=0, description="Mean reasoning score of all interactions.")
    intent_drift: float = Field(default=0.10, ge=0, description="Weight of (1 - intent_drift_score).")


class Thresholds(_Strict):
    """Detector thresholds, and the score limits below which a recommendation is made."""

    ccm_similarity: float = Field(default=0.6, ge=0.0, le=1.0, description="Consecutive user messages at least this "
                                  "similar (max of difflib ratio and content-token Jaccard) mean the user re-asked.")
    handoff_coverage: float = Field(default=0.5, ge=0.0, le=1.0, description="Share of the key entities (identifiers "
                                    "and numbers of the task and the user message) a handoff context must carry.")
    correction_phrases: list[str] = Field(default_factory=list, description="Extra phrases (case-insensitive) "
                                          "that mark a user correcting the previous answer.")
    tool_use: float = Field(default=0.7, ge=0.0, le=1.0, description="Recommend when an agent's tool use is below this.")
    reasoning: float = Field(default=0.7, ge=0.0, le=1.0, description="Recommend when an agent's reasoning is below this.")
    handoff: float = Field(default=0.7, ge=0.0, le=1.0, description="Recommend when an agent's handoffs are below this.")
    response_quality: float = Field(default=0.7, ge=0.0, le=1.0, description="Recommend when responses score below this.")
    coordination: float = Field(default=0.7, ge=0.0, le=1.0, description="Recommend when coordination is below this.")
    intent_drift: float = Field(default=0.5, ge=0.0, le=1.0, description="Recommend when intent drift is above this.")
    rdm_rate: float = Field(default=0.2, ge=0.0, le=1.0, description="Recommend when this share of turns got corrected.")
    ccm_rate: float = Field(default=0.2, ge=0.0, le=1.0, description="Recommend when this share of turns got re-asked.")
    hallucination_rate: float = Field(default=0.0, ge=0.0, le=1.0, description="Recommend when this share of final "
                                      "answers (and at least one) state facts absent from the tool results.")


class JudgeMetrics(_Strict):
    """Which metrics ask the judge (when a judge is configured). Off: the deterministic part alone, or null."""

    tool_use: bool = Field(default=True, description="Judge tool choice, averaged with the deterministic checks.")
    reasoning: bool = Field(default=True, description="Judge agents' thoughts (no deterministic fallback).")
    handoff: bool = Field(default=True, description="Judge handoff contexts, averaged with entity coverage.")
    response_quality: bool = Field(default=True, description="Judge outputs for the role (no deterministic fallback).")
    turn: bool = Field(default=True, description="Judge each turn: confirms or rejects the deterministic "
                       "detections and can flag a bad turn they missed.")
    coordination: bool = Field(default=True, description="Judge coordination, averaged with deterministic signals.")
    intent_drift: bool = Field(default=True, description="Judge intent drift (fallback: task/output token overlap).")
    task_completion: bool = Field(default=True, description="Judge task completion (fallback: last turn not bad).")


class SessionGateSpec(_Strict):
    """Pass/fail over all sessions; every check that is set must hold (null turns a check off)."""

    min_overall_score: float | None = Field(default=0.7, ge=0.0, le=1.0, description="Mean overall_score at least this.")
    min_task_completion_rate: float | None = Field(default=None, ge=0.0, le=1.0,
                                                   description="Share of sessions with the task completed.")
    min_agent_score: float | None = Field(default=None, ge=0.0, le=1.0,
                                          description="Every agent of every session scores at least this.")

    @model_validator(mode="after")
    def _one_check(self) -> SessionGateSpec:
        if self.min_overall_score is None and self.min_task_completion_rate is None and self.min_agent_score is None:
            raise ValueError("the gate checks nothing; set min_overall_score, min_task_completion_rate or "
                             "min_agent_score")
        return self


class RecordedSessionsTarget(_Strict):
    """Recorded multi-agent sessions are evaluated as they are: no agent is called, only (optionally) a judge."""

    kind: Literal["recorded_sessions"] = "recorded_sessions"
    interaction_weights: InteractionWeights = Field(default_factory=InteractionWeights,
                                                    description="Weights of the per-agent metrics.")
    session_weights: SessionWeights = Field(default_factory=SessionWeights,
                                            description="Weights of the session metrics in overall_score.")
    thresholds: Thresholds = Field(default_factory=Thresholds, description="Detector and recommendation limits.")
    judge_metrics: JudgeMetrics = Field(default_factory=JudgeMetrics, description="Judge on/off per metric.")
    gate: SessionGateSpec = Field(default_factory=SessionGateSpec, description="The session-level gate.")
    judge_concurrency: int = Field(default=8, ge=1, description="Judge calls in flight at once, over all sessions "
                                   "(never more than the run's concurrency).")
    judge_confirms: bool = Field(default=True, description="on: the turn judge confirms or overrules the "
                                 "inferred deterministic detections (never a correction the user stated; an "
                                 "overruled one stays in turn_results, marked "
                                 "overruled_by_judge, counted in overruled_detections); off: deterministic "
                                 "detections are final, the judge can only add its own.")
