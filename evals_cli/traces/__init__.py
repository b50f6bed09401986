"""OpenTelemetry traces of agents in production, read as evals-cli conversations (OTLP/JSON files, the GenAI
semantic conventions and OpenInference's): `read_traces` is the entry point; `evals analyze` and the `traces`
target build on it. Self-contained: it depends on the models, the secrets masking and the text caps only."""

from evals_cli.traces.conversations import AgentInfo, Conversation
from evals_cli.traces.reader import TraceSet, read_traces

__all__ = ["AgentInfo", "Conversation", "TraceSet", "read_traces"]
