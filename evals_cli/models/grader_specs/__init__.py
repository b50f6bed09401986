"""Grader specs, one module per family; `GraderSpec` is the `kind`-discriminated union the suite uses.

A new grader kind adds its spec class in its family's module and one line to the union below. The union is
written out, not built from the grader registry, because models never import graders (the implementations
register with `evals_cli.graders.base.GRADERS`, naming the spec they read); tests/test_registry.py fails when
the two disagree. The union's order is the order `unknown kind` errors list the kinds in.
"""

from typing import Annotated

from pydantic import Field

from evals_cli.models.grader_specs.base import GraderBase
from evals_cli.models.grader_specs.judge import Choice, ModelJudgeSpec
from evals_cli.models.grader_specs.text import ToolGraderSpec
from evals_cli.models.grader_specs.trajectory import (
    GroundingSpec,
    NoLoopsSpec,
    StopBehaviorSpec,
    ToolArgsSpec,
    ToolOrderSpec,
    ToolsAvoidedSpec,
    ToolSchemaSpec,
)

GraderSpec = Annotated[
    ToolGraderSpec
    | ToolOrderSpec
    | ToolsAvoidedSpec
    | ToolArgsSpec
    | NoLoopsSpec
    | StopBehaviorSpec
    | ToolSchemaSpec
    | GroundingSpec
    | ModelJudgeSpec,
    Field(discriminator="kind"),
]

__all__ = ["Choice", "GraderBase", "GraderSpec", "ModelJudgeSpec", "ToolGraderSpec", "ToolOrderSpec", "ToolsAvoidedSpec"]
