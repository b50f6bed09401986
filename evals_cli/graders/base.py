"""What a grader is, and the registry that maps a spec `kind` to its implementation."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from evals_cli.graders.extractors import extract
from evals_cli.models.results import Grade
from evals_cli.models.sample import Sample
from evals_cli.models.tools import ToolSpec
from evals_cli.models.trajectory import Trajectory


@dataclass(frozen=True)
class GradeContext:
    """What one grading call sees. In per-turn mode, `view` holds only the graded turn.
    `tools` are the mocked tools the agent was offered (suite tools merged with the sample's)."""

    sample: Sample
    trajectory: Trajectory
    view: Trajectory
    turn: int | None
    ground_truth: Any
    tools: dict[str, ToolSpec] = field(default_factory=dict)

    def submission(self, extractor: str, config: dict[str, Any]) -> str:
        return extract(extractor, self.view, config)


class Grader:
    """Base of every grader kind. Subclasses set `kind` and implement `grade`."""

    kind: ClassVar[str]
    per_turn: ClassVar[bool] = False
    uses_judge: ClassVar[bool] = False

    def __init__(self, name: str, spec: Any) -> None:
        self.name = name
        self.spec = spec

    async def grade(self, ctx: GradeContext) -> Grade:
        raise NotImplementedError

    def check_sample(self, sample: Sample) -> list[str]:
        """Problems this grader will have with a sample, found before any model call (default: none)."""
        return []


GRADER_KINDS: dict[str, type[Grader]] = {}


def register_grader(cls: type[Grader]) -> type[Grader]:
    """Class decorator: make a grader kind available to suites."""
    GRADER_KINDS[cls.kind] = cls
    return cls


Factory = Callable[[str, Any], Grader]
