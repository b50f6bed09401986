"""One finished trace graded as the samples of a run: its conversations rebuilt by the traces reader, each run
through an Episode of the `traces` target (fed live instead of from a file), graded by the suite's graders and
decided by its gate. What comes out is the `SampleResult` `evals run` writes for a traced conversation.

A conversation that cannot be graded honestly (content capture off, a tool result never recorded) is an errored
result with its reason, never a score; so is a judge that could not be reached (its grade has no score, and the
gate, missing a grade the verdict needs, leaves the sample without one).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from evals_cli.endpoints.errors import InvalidResponse
from evals_cli.endpoints.secrets import Redactor
from evals_cli.gate.gate import Gate
from evals_cli.graders.base import Grader
from evals_cli.graders.grading import grade_sample
from evals_cli.models.pricing import price_of
from evals_cli.models.results import ErrorInfo, RoleUse, SampleResult
from evals_cli.models.sample import Sample
from evals_cli.models.trajectory import Trajectory, Usage
from evals_cli.targets.base import SampleFailed, Target, TargetContext
from evals_cli.targets.episode import Episode
from evals_cli.targets.traces import Traces, TracesTarget
from evals_cli.tools.mock import merge_tools
from evals_cli.traces.conversations import Conversation, build_conversations
from evals_cli.traces.masking import TraceCleaner
from evals_cli.watch.assembler import Finished
from evals_cli.watch.budget import judge_calls
from evals_cli.watch.tags import FINISHED_TAG, TRACE_TAG

if TYPE_CHECKING:  # annotations only
    from evals_cli.suite.spec import SuiteSpec



class LiveTraces(Traces):
    """The `traces` target over conversations handed in as they finish, not read from a file."""

    def __init__(self, spec: TracesTarget, ctx: TargetContext) -> None:
        Target.__init__(self, spec, ctx)
        self.path = self.trace_file = ctx.base_dir  # no file: what the suite's folder stands for
        self.traces = None  # type: ignore[assignment]
        self.by_id: dict[str, Conversation] = {}
        self.since = self.until = None

    def warnings(self) -> list[str]:
        return []

    async def run(self, sample: Sample, trajectory: Trajectory | None = None, *,
                  repeat: int | None = None) -> Trajectory:
        """The conversation's trajectory as rebuilt, taken whole: it was built for this one sample, so the copy
        the file-backed target makes (its conversations outlive a sample) is not needed."""
        trajectory = trajectory if trajectory is not None else Trajectory()
        conversation = self.by_id.pop(str(sample.id))
        trajectory.turns = conversation.trajectory.turns
        trajectory.stop_reason = conversation.trajectory.stop_reason
        if not conversation.complete:
            raise SampleFailed(InvalidResponse(f"conversation {conversation.id!r} cannot be graded: "
                                               + "; ".join(conversation.notes)), trajectory)
        return trajectory


@dataclass
class Graded:
    """A finished trace's results, and what it held that is no conversation."""

    results: list[SampleResult]
    notes: list[str]


class ConversationGrader:
    """The suite's graders and gate, over conversations as they finish."""

    def __init__(self, suite: SuiteSpec, graders: dict[str, Grader], gate: Gate, redact: Redactor) -> None:
        self.suite = suite
        self.graders, self.gate, self.redact = graders, gate, redact
        ctx = TargetContext(tools=suite.tools, user_tools=suite.user_tools, base_dir=suite.base_dir)
        assert isinstance(suite.target, TracesTarget)  # suite.py makes it so
        self.target = LiveTraces(suite.target, ctx)

    async def grade(self, finished: Finished) -> Graded:
        conversations, notes = build_conversations(finished.spans, TraceCleaner(finished.spans))
        results = [await self._one(c, finished) for c in conversations]
        return Graded(results, notes)

    async def _one(self, conversation: Conversation, finished: Finished) -> SampleResult:
        started = time.perf_counter()
        users = [t.user for t in conversation.trajectory.turns if t.user]
        begun = datetime.fromtimestamp(conversation.started, UTC).isoformat(timespec="seconds")
        sample = Sample(id=conversation.id, input=users or "(the traced conversation)",
                        tags=[f"{TRACE_TAG}{finished.trace_id}", f"{FINISHED_TAG}{finished.reason}"],
                        metadata={"trace": {"where": "live", "started": begun}})
        result = SampleResult(sample_id=str(sample.id), tags=sample.tags, input=sample.input_text())
        trajectory = Trajectory()
        self.target.by_id[str(sample.id)] = conversation
        try:
            await Episode(self.target, sample, 0, None, trajectory).run()
        except SampleFailed as failed:
            trajectory.stop_reason = "error"
            result.trajectory, result.usage = trajectory, trajectory.usage()
            result.error = ErrorInfo(category="invalid_response", message=self.redact(str(failed.cause)))
            result.latency_s = conversation.latency_s
            return result
        finally:
            self.target.by_id.pop(str(sample.id), None)
        result.trajectory, result.usage = trajectory, trajectory.usage()
        tools = merge_tools(self.suite.tools, sample.tools, sample.inject)
        grades = self.gate.settle(await grade_sample(self.graders, sample, trajectory, tools,
                                                     user_tools=self.suite.user_tools))
        for grade in grades.values():
            if grade.error:
                grade.error, grade.rationale = self.redact(grade.error), self.redact(grade.rationale)
        result.grades = grades
        verdict = await self.gate.ajudge_sample(result.grades, trajectory, sample)
        result.score, result.passed, result.failed_by = verdict.score, verdict.passed, verdict.failed_by
        result.score_note = verdict.note
        if verdict.incomplete is not None:
            result.error = verdict.incomplete
        self._judge_use(result, time.perf_counter() - started)
        result.latency_s = conversation.latency_s  # the conversation's own time, as production took it
        return result

    def _judge_use(self, result: SampleResult, grading_s: float) -> None:
        """The judge's tokens and cost: what grading spends (the agent's tokens were production's)."""
        judged = [g for g in result.grades.values() if g.metadata.get("judge")]
        judge = Usage()
        use = RoleUse(latency_s=grading_s, calls=0)
        for grade in judged:
            usage = Usage.model_validate(grade.metadata.get("usage", {}))
            judge.add(usage)
            use.add(RoleUse(usage=usage, cost=price_of(self.suite.pricing, grade.metadata.get("judge"), usage)))
        result.judge_usage = judge
        if judged:
            use.calls = judge_calls(result)
            result.roles = {"judge": use}
            result.cost = use.cost if self.suite.pricing else None
