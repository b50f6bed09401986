"""A recorded-sessions suite as an ordinary suite: its graders and its gate, in the results format of every run
(a `SampleResult` per session, a `RunSummary`, the common gate), so `evals report`, the HTML report, JUnit and the
history read it like any other run.

Each session is a sample of the `recorded_session` target (`sessions/target.py`: the recording replayed). Its
grades are those of the registered session graders (sessions/graders.py): the session, turn and agent scores
read off the session's analysis (made once per session by the run's `SessionAnalyser`, judged when a judge is
configured), the detectors run on the recording. The `overall` grade keeps the whole analysis in its metadata
(`results.ANALYSIS`), so the sessions view of `evals analyze` (`sessions.view`: `--json`, the Rich view, the HTML
report) is rebuilt from the common results (`analysis_of`).

The session gate (`target.gate`) becomes the common gate: each check a `simple` gate on one grader, joined by
`and`: min_overall_score the mean of `overall`, min_task_completion_rate the mean of `task_completion` (1 or 0,
sessions without a verdict left out), min_agent_score the minimum of `lowest_agent`. Each compares with `gte` and
the gate's float tolerance, as the session gate did; a session passes when it meets every check.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evals_cli.models.grader_specs.base import GraderBase
from evals_cli.models.specs import AnyGate, GateSpec, LogicalGate, SimpleGate
from evals_cli.sessions.graders import SessionDetectorSpec, SessionScoreSpec
from evals_cli.sessions.spec import RecordedSessionsTarget, SessionGateSpec
from evals_cli.sessions.target import RecordedSessionTarget

if TYPE_CHECKING:
    from evals_cli.sessions.suite import SessionsSuiteSpec
    from evals_cli.suite.spec import SuiteSpec

SCORES = ("overall", "conversation", "tool_use", "reasoning", "coordination", "intent_drift", "task_completion")
DETECTORS = ("ccm", "rdm", "hallucination", "unauthorized_tool", "hallucinated_parameter")


def grader_specs(target: RecordedSessionsTarget, analyser: Any = None) -> dict[str, GraderBase]:
    """The graders of a recorded-sessions run, by name: the session scores, the turns, the lowest agent (all
    reading the analyses of `analyser`, the run's `SessionAnalyser`, handed in by the runner: sessions/analyser.py),
    the detectors (tuned by the suite's thresholds)."""
    weights = {"interaction_weights": target.interaction_weights, "session_weights": target.session_weights,
               "thresholds": target.thresholds}
    scores = {name: SessionScoreSpec(metric=name, **weights) for name in SCORES}
    scores["turns"] = SessionScoreSpec(level="turn", **weights)
    scores["lowest_agent"] = SessionScoreSpec(level="agent", **weights)
    for spec in scores.values():
        spec._analyser = analyser
    specs: dict[str, GraderBase] = dict(scores)
    t = target.thresholds
    for name in DETECTORS:
        specs[name] = SessionDetectorSpec(detector=name, ccm_similarity=t.ccm_similarity,
                                          correction_phrases=t.correction_phrases)
    return specs


def gate_spec(spec: SessionGateSpec) -> AnyGate:
    """The session gate as the common gate (see the module's docstring)."""
    checks: list[AnyGate] = []
    if spec.min_overall_score is not None:
        checks.append(SimpleGate(metric_key="overall", value=spec.min_overall_score))
    if spec.min_task_completion_rate is not None:
        checks.append(SimpleGate(metric_key="task_completion", value=spec.min_task_completion_rate))
    if spec.min_agent_score is not None:
        checks.append(SimpleGate(metric_key="lowest_agent", aggregation="min", value=spec.min_agent_score))
    if len(checks) == 1:
        return checks[0]
    return LogicalGate(operator="and", gates=checks)


def common_suite(document: SessionsSuiteSpec, analyser: Any = None) -> SuiteSpec:
    """The ordinary suite a sessions document is: the `recorded_session` target over the session file (its
    dataset), the session graders (their scores reading the analyses of `analyser`, the run's `SessionAnalyser`)
    and the session gate as the common gate."""
    from evals_cli.suite.spec import SuiteSpec, refresh

    graders = grader_specs(document.target, analyser)
    refresh({"target": {"kind": "recorded_session"}, "graders": {n: {"kind": g.kind} for n, g in graders.items()}})
    suite = SuiteSpec(name=document.name, description=document.description, dataset=document.dataset,
                      max_samples=document.max_samples, concurrency=document.concurrency,
                      target=RecordedSessionTarget(path=document.dataset), judge=document.judge, graders=graders,
                      gate=GateSpec.model_validate(gate_spec(document.target.gate).model_dump()))
    suite._base_dir = document.base_dir
    return suite
