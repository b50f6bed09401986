"""Fold analyses into a `SessionsSummary` one by one, so a run of any size needs no more than one in memory."""

from __future__ import annotations

from collections import Counter

from evals_cli.sessions.results import AgentMinimum, ConversationStats, JudgeInfo, SessionAnalysis, SessionsSummary

MAX_ERRORS_KEPT = 20


class SessionsAccumulator:
    def __init__(self, name: str, dataset: str) -> None:
        self.name = name
        self.dataset = dataset
        self.sessions = self.errored = 0
        self.overall: list[float] = []
        self.completed = self.completion_known = 0
        self.min_agent: AgentMinimum | None = None
        self.agent_totals: dict[str, list[float]] = {}
        self.conversation = ConversationStats()
        self.severities: Counter[str] = Counter()
        self.judge = JudgeInfo()
        self.judge_errors = 0

    def add(self, analysis: SessionAnalysis) -> None:
        self.sessions += 1
        if analysis.error is not None:
            self.errored += 1
            return
        if analysis.overall_score is not None:
            self.overall.append(analysis.overall_score)
        if analysis.task_completion is not None:
            self.completion_known += 1
            self.completed += int(analysis.task_completion)
        for agent_id, scores in analysis.per_agent_scores.items():
            if scores.overall is None:
                continue
            self.agent_totals.setdefault(agent_id, []).append(scores.overall)
            if self.min_agent is None or scores.overall < self.min_agent.score:
                self.min_agent = AgentMinimum(session_id=analysis.session_id, agent_id=agent_id, score=scores.overall)
        for name in ConversationStats.model_fields:
            setattr(self.conversation, name, getattr(self.conversation, name) + getattr(analysis.conversation, name))
        self.severities.update(analysis.tool_validation.by_severity)
        judge = analysis.judge
        self.judge.model = self.judge.model or judge.model
        self.judge.calls += judge.calls
        self.judge.prompt_tokens += judge.prompt_tokens
        self.judge.completion_tokens += judge.completion_tokens
        self.judge_errors += len(judge.errors)
        room = MAX_ERRORS_KEPT - len(self.judge.errors)
        self.judge.errors += judge.errors[: max(room, 0)]

    def summary(self) -> SessionsSummary:
        return SessionsSummary(
            name=self.name, dataset=self.dataset, sessions=self.sessions, errored=self.errored,
            mean_overall_score=sum(self.overall) / len(self.overall) if self.overall else None,
            task_completion_rate=self.completed / self.completion_known if self.completion_known else None,
            min_agent=self.min_agent,
            per_agent_mean={a: sum(v) / len(v) for a, v in sorted(self.agent_totals.items())},
            conversation=self.conversation.model_copy(), violations_by_severity=dict(self.severities),
            judge=self.judge.model_copy(),
        )
