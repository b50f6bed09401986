"""`kind: recorded_session`: a recorded multi-agent session replayed through an Episode, like a traced
conversation (`targets/traces.py`). No agent and no model are called: each sample is one session of the session
file (read by `sessions/reader.py`, turned into a `Sample` by `episode.session_sample`), and `run` returns the
recording as its trajectory (`episode.session_trajectory`), which the session graders (`sessions/graders.py`)
grade. A `kind: recorded_sessions` suite document (`sessions/suite.py`) becomes a suite of this target.

The dataset is the session file itself (the dataset reader hands this target the reading: `read_dataset`); the
recording's own figures are the result's (`recorded_result`: the session's task as its input, its recorded cost
and latency), and a run of recorded sessions has no resume, so a reused `-o` folder is a new run of them
(`replaces_results`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field

from evals_cli.endpoints.errors import InvalidResponse
from evals_cli.models.base import StrictModel
from evals_cli.models.results import SampleResult
from evals_cli.models.sample import Sample
from evals_cli.models.trajectory import Trajectory
from evals_cli.targets.base import TARGETS, SampleFailed, Target, TargetContext

if TYPE_CHECKING:
    from evals_cli.sessions.view import AnalyzeRecord


class RecordedSessionTarget(StrictModel):
    """Recorded multi-agent sessions, replayed as they happened (no agent is called)."""

    kind: Literal["recorded_session"] = "recorded_session"
    path: str = Field(description="Session file (JSONL, or JSON: one session or a list), relative to the suite; "
                      "the suite's dataset when it names none.")


@TARGETS.register("recorded_session", spec=RecordedSessionTarget)
class RecordedSession(Target):
    """Each sample's session, as recorded."""

    calls_model = False  # nothing is called: the session graders' judge is configured on its own
    replaces_results: ClassVar[bool] = True  # no resume: a reused -o folder is a new run of the same sessions
    spec: RecordedSessionTarget

    def __init__(self, spec: RecordedSessionTarget, ctx: TargetContext) -> None:
        super().__init__(spec, ctx)
        self.dataset_file = (ctx.base_dir / Path(spec.path).expanduser()).resolve()
        self.view_record: AnalyzeRecord | None = None  # `evals analyze`: written as analyze.json as its run starts
        self.positions: dict[str, int] = {}  # each session's place in the file, as read (the view's order)

    @classmethod
    def default_dataset(cls, spec: dict[str, Any]) -> str | None:
        """The suite's dataset when it names none: the session file, one sample per session."""
        path = spec.get("path")
        return path if isinstance(path, str) else None

    def fill_row(self, raw: dict[str, Any]) -> dict[str, Any]:
        return raw  # rows are built from sessions (read_dataset); the dataset reader's hook names this target

    def read_dataset(self, path: Path) -> Iterator[tuple[str, Sample | list[str]]]:
        """("file:line", the session's sample or its problems) for every session of the file."""
        from evals_cli.sessions.episode import session_sample
        from evals_cli.sessions.reader import iter_rows

        for index, (where, row) in enumerate(iter_rows(path)):
            if not isinstance(row, list):
                self.positions.setdefault(row.id, index)
            yield where, row if isinstance(row, list) else session_sample(row)

    def begin_run(self, folder: Path) -> None:
        """A run starts writing into `folder`: the results of an earlier run there are dropped (no resume), and the
        folder is marked as `evals analyze`'s when it runs (else a reused folder of analyze becomes this run's)."""
        from evals_cli.output.files import RESULTS_NAME
        from evals_cli.sessions.view import ANALYZE_NAME, write_record

        (folder / RESULTS_NAME).unlink(missing_ok=True)
        if self.view_record is None:
            (folder / ANALYZE_NAME).unlink(missing_ok=True)
        else:
            write_record(folder, self.view_record)

    async def run(self, sample: Sample, trajectory: Trajectory | None = None, *,
                  repeat: int | None = None) -> Trajectory:
        from evals_cli.sessions.episode import recorded_session, session_trajectory

        trajectory = trajectory if trajectory is not None else Trajectory()
        session = recorded_session(sample)
        if session is None:
            raise SampleFailed(InvalidResponse(f"sample {sample.id!r} carries no recorded session; a "
                                               "recorded_session target reads its session file"), trajectory)
        trajectory.turns = session_trajectory(session).turns
        return trajectory

    def recorded_result(self, sample: Sample, result: SampleResult) -> None:
        """The recording's own figures: the session's task, its recorded cost and latency (no model was called
        here, so no role used anything)."""
        from evals_cli.sessions.episode import recorded_session

        session = recorded_session(sample)
        if session is None:
            return
        result.input, result.cost = session.task, session.total_cost
        result.latency_s = (session.total_latency_ms or 0.0) / 1000
        result.roles = {}
