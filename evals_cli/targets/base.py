"""The target contract and its registry."""

from __future__ import annotations

from typing import Any, ClassVar

from evals_cli.models.sample import Sample
from evals_cli.models.trajectory import Trajectory


class SampleFailed(Exception):
    """A sample could not run to the end; the partial trajectory is kept for the results line."""

    def __init__(self, cause: BaseException, trajectory: Trajectory) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.trajectory = trajectory


class Target:
    """Base of every target kind."""

    kind: ClassVar[str]

    async def run(self, sample: Sample, trajectory: Trajectory | None = None) -> Trajectory:
        """Fill `trajectory` (the runner passes one in, so a sample cut short by its timeout keeps what it
        did) and return it; raise SampleFailed on errors."""
        raise NotImplementedError

    def endpoints(self) -> list[Any]:
        """The endpoints this target calls, for error messages."""
        return []


TARGET_KINDS: dict[str, type[Target]] = {}


def register_target(cls: type[Target]) -> type[Target]:
    TARGET_KINDS[cls.kind] = cls
    return cls
