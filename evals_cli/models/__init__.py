"""The pydantic models passed between pipeline stages: pure data, importing no other layer of the package
(the suite document, `SuiteSpec`, is composed from the registered kinds in evals_cli/suite/spec.py)."""

from evals_cli.models.results import ErrorInfo, Grade, RunSummary, SampleResult, TurnGrade
from evals_cli.models.sample import Message, Sample
from evals_cli.models.specs import GateSpec
from evals_cli.models.tools import ToolSpec
from evals_cli.models.trajectory import Step, ToolCall, Trajectory, Turn, Usage

__all__ = [
    "ErrorInfo", "GateSpec", "Grade", "Message", "RunSummary", "Sample", "SampleResult", "Step",
    "ToolCall", "ToolSpec", "Trajectory", "Turn", "TurnGrade", "Usage",
]
