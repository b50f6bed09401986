"""`kind: traces`: grade what happened in production. The agent is not called; each sample is one conversation
of an OpenTelemetry trace file (OTLP/JSON, read by evals_cli/traces), and `run` returns the trajectory it
recorded, so the same graders as a live run (tool_order, forbidden_tools, no_loops, final answers, model_judge,
per-reply judges) grade it.

Samples: without a `dataset:` the suite's dataset is the trace file itself, one sample per conversation (id =
the conversation id), graded by the graders that need no expectations; with one, rows are matched to
conversations by `id` and carry the expectations, and a row may leave `input` out (the conversation's user
messages fill it). `since` / `until` (or --since / --until) keep the conversations that started in a window.
A conversation cut off mid-call is graded as recorded (stop reason `cut_off`: trajectory graders grade it, answer
graders fail it with no answer); one that cannot be graded honestly (content not captured, a tool result never
recorded) is an errored sample with its reason, never a score; a row naming no conversation of the file is an
errored sample too.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any, Literal

from pydantic import Field, field_validator

from evals_cli.endpoints.errors import InvalidResponse
from evals_cli.endpoints.resolve import NO_KEY, Endpoint
from evals_cli.models.base import StrictModel
from evals_cli.models.sample import Sample
from evals_cli.models.trajectory import Trajectory
from evals_cli.targets.base import TARGETS, SampleFailed, Target, TargetContext
from evals_cli.traces import Conversation, TraceSet, read_traces


def parse_when(value: str, field: str) -> datetime:
    """An ISO 8601 date or date-time (UTC when it names no zone)."""
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        try:
            moment = datetime.combine(date.fromisoformat(value), datetime.min.time())
        except ValueError:
            raise ValueError(f"{field}: {value!r} is not an ISO 8601 date or date-time, e.g. 2026-11-01 or "
                             "2026-11-01T09:30:00Z") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


class TracesTarget(StrictModel):
    """Recorded conversations from OpenTelemetry traces, graded as they happened (no agent is called)."""

    kind: Literal["traces"] = "traces"
    path: str = Field(description="OTLP/JSON trace file (one ExportTraceServiceRequest per line, as the "
                      "OpenTelemetry collector's file exporter writes them) or a folder of them, relative to the suite.")
    since: str | None = Field(default=None, description="Only conversations that started at or after this ISO 8601 "
                              "date or date-time (UTC unless it names a zone); --since overrides it.")
    until: str | None = Field(default=None, description="Only conversations that started before this date or "
                              "date-time; --until overrides it.")

    @field_validator("since", "until")
    @classmethod
    def _iso(cls, value: str | None, info: Any) -> str | None:
        if value is not None:
            parse_when(value, info.field_name)
        return value


@dataclass(frozen=True)
class TracesEndpoint(Endpoint):
    """What a traces target stands for where the runner expects an endpoint: the trace file. No model is called."""

    def describe(self) -> str:
        return f"traces {self.model}"


@TARGETS.register("traces", spec=TracesTarget)
class Traces(Target):
    """Each sample's conversation, as recorded."""

    calls_model = False  # nothing is called: model_judge graders need a judge of their own
    checked_by_building = True  # building reads the trace file: `evals validate` reports what it cannot read
    spec: TracesTarget

    def __init__(self, spec: TracesTarget, ctx: TargetContext) -> None:
        super().__init__(spec, ctx)
        self.path = (ctx.base_dir / spec.path).resolve()
        self.trace_file = self.path  # the dataset reader reads this file as traces, whatever its lines look like
        self.traces: TraceSet = read_traces(self.path)
        self.by_id: dict[str, Conversation] = {c.id: c for c in self.traces.conversations}
        self.since = parse_when(spec.since, "since") if spec.since else None
        self.until = parse_when(spec.until, "until") if spec.until else None
        # said here, once, on stderr: a bad line of the file is no sample's error, and must not pass unseen
        from evals_cli.display.console import make_console

        err = make_console(stderr=True)
        for warning in self.warnings():
            err.print(f"warning: {warning}", markup=False, highlight=False, soft_wrap=True)

    @classmethod
    def default_dataset(cls, spec: dict[str, Any]) -> str | None:
        """The suite's dataset when it names none: the trace file, one sample per conversation."""
        path = spec.get("path")
        return path if isinstance(path, str) else None

    @classmethod
    def resolve_endpoint(cls, spec: TracesTarget, overrides: dict[str, Any] | None = None) -> Endpoint:
        """A stand-in named after the trace file: no model setting or EVAL_AGENT_MODEL is needed."""
        return TracesEndpoint(role="agent", base_url=None, api_key=NO_KEY, model=spec.path, timeout=120.0,
                              max_retries=0)

    def warnings(self) -> list[str]:
        """What could not be read or rebuilt, per file line and per conversation (said once per run)."""
        return self.traces.notes()

    def keeps(self, sample: Sample) -> bool:
        """Within the since/until window (a row naming no conversation is kept: it errors, saying so)."""
        conversation = self.by_id.get(str(sample.id))
        if conversation is None or (self.since is None and self.until is None):
            return True
        started = datetime.fromtimestamp(conversation.started, UTC)
        return (self.since is None or started >= self.since) and (self.until is None or started < self.until)

    def fill_row(self, raw: dict[str, Any]) -> dict[str, Any]:
        """A dataset row without `input`: the conversation's user messages (rows carry expectations only)."""
        if "input" in raw or "messages" in raw or "user" in raw:
            return raw
        conversation = self.by_id.get(str(raw.get("id")))
        users = [t.user for t in conversation.trajectory.turns if t.user] if conversation is not None else []
        return {**raw, "input": users or "(the traced conversation)"}

    async def run(self, sample: Sample, trajectory: Trajectory | None = None, *,
                  repeat: int | None = None) -> Trajectory:
        trajectory = trajectory if trajectory is not None else Trajectory()
        conversation = self.by_id.get(str(sample.id))
        if conversation is None:
            shown = ", ".join(list(self.by_id)[:5]) + (" ..." if len(self.by_id) > 5 else "")
            raise SampleFailed(InvalidResponse(f"no conversation with id {sample.id!r} in {self.spec.path} (its "
                                               f"conversations: {shown}); a row's id is the conversation id"),
                               trajectory)
        recorded = conversation.trajectory
        trajectory.turns = [turn.model_copy(deep=True) for turn in recorded.turns]
        trajectory.stop_reason = recorded.stop_reason
        trajectory.spans = recorded.spans.model_copy(deep=True) if recorded.spans is not None else None
        if not conversation.complete:
            raise SampleFailed(InvalidResponse(f"conversation {conversation.id!r} cannot be graded: "
                                               + "; ".join(conversation.notes)), trajectory)
        return trajectory

