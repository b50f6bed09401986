"""The pydantic models passed between pipeline stages."""

from evals_cli.models.results import ErrorInfo, Grade, RunSummary, SampleResult, TurnGrade
from evals_cli.models.sample import Message, Sample
from evals_cli.models.specs import GateSpec, SuiteSpec
from evals_cli.models.tools import ToolSpec
from evals_cli.models.trajectory import Step, ToolCall, Trajectory, Turn, Usage

__all__ = [
    "ErrorInfo", "GateSpec", "Grade", "Message", "RunSummary", "Sample", "SampleResult", "Step", "SuiteSpec",
    "ToolCall", "ToolSpec", "Trajectory", "Turn", "TurnGrade", "Usage",
]
