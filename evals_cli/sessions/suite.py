"""A sessions suite: `suites/multi_agent.yaml` with `target: {kind: recorded_sessions, ...}`.

A document kind of its own, loaded by `load_sessions_suite` alone: the live suite's target union does not know
recorded_sessions. Run, it is the ordinary suite `sessions.common.common_suite` makes of it (the
`recorded_session` target, the session graders, the common gate). The session gate lives in `target.gate` (a top-level `gate`
is the live suites' grader gate). `convert` / `from_suite` still turn a SuiteSpec that carries a
RecordedSessionsTarget (built by hand, or by a loader that accepts one) into a `SessionsSuiteSpec`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import Field, ValidationError

from evals_cli.errors import ConfigError
from evals_cli.models.base import SuiteFile
from evals_cli.models.specs import JudgeSpec
from evals_cli.sessions.spec import RecordedSessionsTarget
from evals_cli.suite.kind import suite_kind
from evals_cli.suite.problems import format_validation_error
from evals_cli.suite.source import SuiteSource
from evals_cli.suite.yaml_file import line_finder, read_yaml_mapping

if TYPE_CHECKING:  # annotations only
    from evals_cli.suite.spec import SuiteSpec

NOT_FOR_SESSIONS = {"graders": "the session metrics are built in (tune target.interaction_weights and "
                               "target.session_weights)",
                    "tools": "recorded sessions declare their tools per agent (tools_available)",
                    "gate": "the session gate is target.gate", "repeats": "recorded sessions are analysed once",
                    "sample_tags": "sessions carry no tags", "pricing": "sessions carry total_cost",
                    "max_cost": "no agent is called"}


class SessionsSuiteSpec(SuiteFile):
    """A whole sessions suite."""

    name: str = Field(description="Suite name, used in output folder names.")
    description: str | None = Field(default=None, description="Free text.")
    dataset: str = Field(description="Session file (JSONL, or JSON: one session or a list), relative to the suite.")
    max_samples: int | None = Field(default=None, ge=1, description="Analyse at most this many sessions.")
    concurrency: int = Field(default=4, ge=1, description="Sessions analysed at once.")
    target: RecordedSessionsTarget = Field(description="Weights, thresholds, judge metrics and the gate.")
    judge: JudgeSpec | None = Field(default=None, description="The judge endpoint and model (else EVAL_JUDGE_*).")

    @classmethod
    def convert(cls, suite: SuiteSpec) -> tuple[SessionsSuiteSpec, list[str]]:
        """From the main SuiteSpec whose target is recorded_sessions: the spec, and the keys set that do not apply."""
        kind = getattr(suite.target, "kind", None)
        if kind != "recorded_sessions":
            raise ConfigError(f"suite {suite.name!r}: target.kind is {kind!r}, not recorded_sessions")
        given = [k for k in NOT_FOR_SESSIONS if k in suite.model_fields_set and getattr(suite, k)]
        spec = cls(name=suite.name, description=suite.description, dataset=suite.dataset,
                   max_samples=suite.max_samples, concurrency=suite.concurrency,
                   target=RecordedSessionsTarget.model_validate(suite.target), judge=suite.judge)
        spec._base_dir = Path(suite.base_dir)
        return spec, [f"suite {suite.name!r}: {k}: does not apply to recorded_sessions; {NOT_FOR_SESSIONS[k]}"
                      for k in given]

    @classmethod
    def from_suite(cls, suite: SuiteSpec) -> SessionsSuiteSpec:
        """`convert`, with a ConfigError for the keys that do not apply."""
        spec, problems = cls.convert(suite)
        if problems:
            raise ConfigError(problems)
        return spec


def load_sessions_suite(path: str | Path | SuiteSource) -> SessionsSuiteSpec:
    """Load and validate a sessions suite file the way `load_suite` loads others (env expansion, file:line); a
    `SuiteSource` is the file as read already by the start of a run."""
    text = path.text() if isinstance(path, SuiteSource) else None
    path = path.path if isinstance(path, SuiteSource) else Path(path)
    where = str(path)
    data, lines, problems = read_yaml_mapping(path, "suite file", "a mapping of suite keys (name, dataset, target, ...)",
                                              text=text)
    line_of = line_finder(lines)
    problems += [f"{where}:{line_of((k,))}: {k}: does not apply to recorded_sessions; {why}"
                 for k, why in NOT_FOR_SESSIONS.items() if k in data]
    try:
        spec = SessionsSuiteSpec.model_validate({k: v for k, v in data.items() if k not in NOT_FOR_SESSIONS})
    except ValidationError as exc:
        problems.extend(format_validation_error(exc, SessionsSuiteSpec, where, line_of))
        raise ConfigError(problems) from None
    if problems:
        raise ConfigError(problems)
    spec._base_dir = path.resolve().parent
    return spec


def is_sessions_suite(path: str | Path) -> bool:
    """Does the suite file say recorded_sessions? (see `evals_cli.suite.kind`)"""
    return suite_kind(path) == "recorded_sessions"
