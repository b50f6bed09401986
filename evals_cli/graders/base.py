"""What a grader is, what it is built with and what it sees, and the registry of grader kinds under its type.

A kind is a module of `evals_cli.graders.kinds` that registers its implementation with the spec model it reads:

    @GRADERS.register("tool_order", spec=ToolOrderSpec)
    class ToolOrderGrader(Grader[ToolOrderSpec]): ...

Every kind is built the same way, `impl(name, spec, GraderContext)`, so building a suite's graders needs no
branch per kind. The spec model lives in the kind's module, next to its grader; the suite's `GraderSpec` union
is built from the same registry (evals_cli/kinds.py, which evals_cli/suite/spec.py reads without importing this
module), so no other file lists the kinds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from evals_cli import kinds
from evals_cli.models.grader_specs.base import GraderBase
from evals_cli.models.grader_specs.extractors import extract, extract_guarded
from evals_cli.models.results import Grade
from evals_cli.models.sample import Sample
from evals_cli.models.tools import ToolSpec
from evals_cli.models.trajectory import Trajectory
from evals_cli.registry import Registry, must_override

if TYPE_CHECKING:
    from evals_cli.computer.protocol import EpisodeComputer
    from evals_cli.endpoints.clients import ModelClients
    from evals_cli.endpoints.resolve import Endpoint, JudgeOverrides
    from evals_cli.models.specs import JudgeSpec, Price

SpecT = TypeVar("SpecT", bound=GraderBase)


@dataclass(frozen=True)
class GradeContext:
    """What one grading call sees. In per-turn mode, `view` holds only the graded turn.
    `tools` are the mocked tools the agent was offered (suite tools merged with the sample's); `user_tools` the
    simulated user's own (dual control: the suite's `user_tools`). `computer`: the episode's computer, its
    sandbox still up (checks run in it: `sandbox_check`), or the recording that replays it; None: no sandbox."""

    sample: Sample
    trajectory: Trajectory
    view: Trajectory
    turn: int | None
    ground_truth: Any
    tools: dict[str, ToolSpec] = field(default_factory=dict)
    user_tools: dict[str, ToolSpec] = field(default_factory=dict)
    computer: EpisodeComputer | None = None

    def submission(self, extractor: str, config: dict[str, Any]) -> str:
        """The submission, extracted in this thread (a custom extractor's exits are refused, but its time is not
        bounded); kinds prefer `asubmission`."""
        return extract(extractor, self.view, config)

    async def asubmission(self, extractor: str, config: dict[str, Any]) -> str:
        """The submission, a custom extractor run under the custom-code guard: off the event loop, exits refused,
        its time counted against the sample's sample_timeout (see extract_guarded)."""
        return await extract_guarded(extractor, self.view, config)


@dataclass(frozen=True)
class GraderContext:
    """What a grader is built with: the same for every kind, so that a kind needing more (a judge's endpoints)
    takes it from here instead of from a constructor signature of its own.

    `offline`: the grader is built only to check its spec (validating a suite that is itself invalid): no
    endpoint is resolved and no model will be called.
    """

    base_dir: Path
    pool: ModelClients | None = None
    judge: JudgeSpec | None = None  # the suite's judge block: the default endpoint of judge graders
    agent: Endpoint | None = None  # the judge's last fallback: the agent's own endpoint
    offline: bool = False
    judge_overrides: JudgeOverrides | None = None  # --judge-model/--judge-base-url/--judge-api-key: win over all
    pricing: Mapping[str, Price] = field(default_factory=dict)  # the suite's pricing: table (what tokens cost)
    agent_model: str | None = None  # the model the agent under test asks (its price; a row's agent_model wins)


class Grader(Generic[SpecT]):
    """Base of every grader kind (public: `evals_cli.Grader`): a grade from a finished episode. Built from
    `(name, spec, GraderContext)`; subclasses implement `grade(ctx)`, reading the sample, the trajectory and the
    submission its extractor picks from `ctx` (a GradeContext), and register with `GRADERS`. A grader that
    cannot grade raises or returns `Grade.failed(...)` (an error, never a zero).

    A custom extractor (`extractor: file.py:func`) is suite code: whoever builds graders from a suite loads it
    first (`bind_extractor`, runner/build_graders.py) and hands the grader the spec naming the loaded one."""

    per_turn: ClassVar[bool] = False
    uses_judge: ClassVar[bool] = False  # calls a model: skipped by --no-judge, graded after the others
    #: Grades the agent's steps (tool calls, their order and arguments), not only its replies: n/a with the reason
    #: when an external agent's steps were not observed (`Trajectory.not_observed`), never a pass on nothing.
    reads_steps: ClassVar[bool] = False

    def __init__(self, name: str, spec: SpecT, ctx: GraderContext) -> None:
        self.name = name
        self.spec = spec

    @property
    def kind(self) -> str:
        """The kind the suite asked for (every registered spec has a `kind` field; GraderBase itself has none)."""
        return str(getattr(self.spec, "kind", type(self).__name__))

    @must_override
    async def grade(self, ctx: GradeContext) -> Grade:
        raise NotImplementedError

    def check_sample(self, sample: Sample) -> list[str]:
        """Problems this grader will have with a sample, found before any model call (default: none)."""
        return []

    def incomplete_run(self, max_error_rate: float) -> str | None:
        """Why the run cannot have a verdict, seen over every sample this grader graded (the session graders:
        a session that could not be analysed, more than `max_error_rate` of their judge calls without a
        verdict); None (the default): nothing."""
        return None


GRADERS: Registry[type[Grader[Any]]] = kinds.GRADERS

