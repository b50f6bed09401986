"""OpenTelemetry export of a run: a span per run, per sample, per model call and per tool call, with the
GenAI semantic-convention attributes, and the grades on the sample span.

Spans are built from each finished result (its trajectory holds every step's start time and latency), so
tracing adds nothing to the agent loop itself. Needs the optional extra: `pip install 'evals-cli[otel]'`.
"""

from __future__ import annotations

from typing import Any

from evals_cli.errors import ConfigError
from evals_cli.models.results import RunSummary, SampleResult

INSTALL_HINT = "--otel needs the OpenTelemetry extra: pip install 'evals-cli[otel]'"


class Telemetry:
    """The no-op default."""

    def run_started(self, suite: str, model: str) -> None:
        pass

    def sample_finished(self, result: SampleResult, started_ns: int, ended_ns: int) -> None:
        pass

    def run_finished(self, summary: RunSummary) -> None:
        pass


def otel_requested(flag: bool) -> bool:
    """--otel, or OTEL_EXPORTER_OTLP_ENDPOINT set (read through evals_cli/settings.py)."""
    if flag:
        return True
    from evals_cli.settings import knob

    return bool(knob("otel_endpoint"))


def make_telemetry(enabled: bool, provider: Any = None) -> Telemetry:
    """A tracing Telemetry when enabled (OTLP over HTTP to OTEL_EXPORTER_OTLP_ENDPOINT unless a provider is
    given), else the no-op one."""
    if not enabled:
        return Telemetry()
    try:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        raise ConfigError(INSTALL_HINT) from None
    if provider is None:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError:
            raise ConfigError(INSTALL_HINT) from None
        from opentelemetry.sdk.resources import Resource

        provider = TracerProvider(resource=Resource.create({"service.name": "evals-cli"}))
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return OtelTelemetry(provider)


class OtelTelemetry(Telemetry):
    def __init__(self, provider: Any) -> None:
        from opentelemetry import trace

        self.trace = trace
        self.provider = provider
        self.tracer = provider.get_tracer("evals_cli")
        self.run_span: Any = None
        self.model = ""

    def run_started(self, suite: str, model: str) -> None:
        self.model = model
        self.run_span = self.tracer.start_span(f"evals run {suite}", attributes={"evals.suite": suite})

    def sample_finished(self, result: SampleResult, started_ns: int, ended_ns: int) -> None:
        parent = self.trace.set_span_in_context(self.run_span) if self.run_span else None
        attributes: dict[str, Any] = {"evals.sample_id": result.sample_id, "evals.repeat": result.repeat,
                                      "gen_ai.usage.input_tokens": result.usage.prompt_tokens,
                                      "gen_ai.usage.output_tokens": result.usage.completion_tokens}
        for name, grade in result.grades.items():
            if grade.score is not None and grade.applicable:  # n/a is not a score (see Grade.applicable)
                attributes[f"evals.grade.{name}"] = grade.score
        if result.score is not None:
            attributes["evals.score"] = result.score
        if result.passed is not None:
            attributes["evals.passed"] = result.passed
        if result.error is not None:
            attributes["error.type"] = result.error.category
        span = self.tracer.start_span(f"sample {result.sample_id}", context=parent, start_time=started_ns,
                                      attributes=attributes)
        context = self.trace.set_span_in_context(span)
        for turn in result.trajectory.turns:
            for step in turn.steps:
                begin = int(step.started * 1e9) if step.started else started_ns
                end = begin + int(step.latency_s * 1e9)
                call = self.tracer.start_span(f"chat {self.model}", context=context, start_time=begin, attributes={
                    "gen_ai.operation.name": "chat", "gen_ai.system": "openai", "gen_ai.request.model": self.model,
                    "gen_ai.usage.input_tokens": step.usage.prompt_tokens,
                    "gen_ai.usage.output_tokens": step.usage.completion_tokens,
                    "gen_ai.response.finish_reasons": [step.finish_reason or ""]})
                call.end(end_time=end)
                for tool_call in step.tool_calls:
                    tool = self.tracer.start_span(f"execute_tool {tool_call.name}", context=context, start_time=end,
                                                  attributes={"gen_ai.operation.name": "execute_tool",
                                                              "gen_ai.tool.name": tool_call.name,
                                                              "gen_ai.tool.call.id": tool_call.id,
                                                              "evals.tool.mocked": True,
                                                              "evals.tool.is_error": tool_call.is_error})
                    tool.end(end_time=end)
        span.end(end_time=ended_ns)

    def run_finished(self, summary: RunSummary) -> None:
        if self.run_span is not None:
            if summary.gate is not None and summary.gate.passed is not None:
                self.run_span.set_attribute("evals.gate.passed", summary.gate.passed)
            self.run_span.set_attribute("evals.samples", summary.total)
            self.run_span.end()
        self.provider.force_flush()
