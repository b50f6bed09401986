"""The sessions view of a recorded-sessions run, derived from its common results: what `evals analyze` prints
(`--json`, the Rich view, `-q`) and what `evals report` and the sessions HTML report show of its folder.

The run writes the results of every run (a `SampleResult` per session, a `RunSummary`, the common gate:
`sessions.common`); each session's analysis is read back from its results line (`analysis_of`) and the
`SessionsSummary` (seed-003's summary: means, lowest agent, detections, judge use) is folded from those analyses.
The verdict is the common gate's: the session gate's checks are listed one by one with the numbers the analyses
give, and whether the gate passed, and the exit code, are the run's.

`analyze.json` in the run folder says that `evals analyze` wrote it (so `evals report` shows this view, not the
table of samples) and keeps what the view needs beside the common files: the session file read (the HTML report
shows its conversations) and the session gate's thresholds (its checks).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from evals_cli.errors import EXIT_INCOMPLETE, ConfigError
from evals_cli.models.base import Record
from evals_cli.models.results import RunSummary
from evals_cli.output.files import SUMMARY_NAME, read_results, results_path
from evals_cli.sessions.results import GateCheck, SessionAnalysis, SessionGateResult, SessionsSummary, analysis_of
from evals_cli.sessions.spec import SessionGateSpec
from evals_cli.sessions.summary import SessionsAccumulator
from evals_cli.thresholds import GATE_UNDECIDED, OPS, SYMBOLS, UNDECIDED
from evals_cli.wording import plural

ANALYZE_NAME = "analyze.json"
MAX_KEPT = 200  # analyses kept in memory for the display; the results file has them all


class AnalyzeRecord(Record):
    """analyze.json (see the module's docstring)."""

    schema_version: int = 1
    dataset: str
    gate: SessionGateSpec


def write_record(folder: Path, record: AnalyzeRecord) -> None:
    (folder / ANALYZE_NAME).write_text(record.model_dump_json(indent=2) + "\n", encoding="utf-8")


def read_record(target: Path) -> AnalyzeRecord | None:
    """The analyze.json of a run folder (or of the folder of a results file); None when there is none."""
    path = results_path(target).parent / ANALYZE_NAME
    try:
        return AnalyzeRecord.model_validate_json(path.read_text(encoding="utf-8"))
    except OSError:
        return None
    except ValueError as exc:
        raise ConfigError(f"{path}: not an analyze record ({str(exc).splitlines()[0][:200]}); evals analyze "
                          f"writes it beside the results: restore it, or delete it to read the run as a table of "
                          f"samples") from None


def analyses(target: Path, warnings: list[str] | None = None) -> Iterator[SessionAnalysis]:
    """Each session's analysis, read back from the run's results lines, lazily, in the order written."""
    for result in read_results(target, warnings):
        analysis = analysis_of(result)
        if analysis is None:
            raise ConfigError(f"{results_path(target)}: the line of {result.sample_id!r} is not a recorded "
                              "session's result; give the folder of an evals analyze run")
        yield analysis


def _check(name: str, metric: float | None, value: float, detail: str = "") -> GateCheck:
    passed = None if metric is None else OPS["gte"](metric, value)
    return GateCheck(name=name, metric=metric, value=value, passed=passed, detail=detail)


def gate_view(summary: SessionsSummary, spec: SessionGateSpec, run: RunSummary) -> SessionGateResult:
    """The session gate's checks over the analyses, with the common gate's verdict (`run.gate`: the same checks,
    decided on the same scores) and the run's exit code: a run that did not complete (exit 3) shows none."""
    checks = []
    if spec.min_overall_score is not None:
        checks.append(_check("mean overall_score", summary.mean_overall_score, spec.min_overall_score,
                             f"over {plural(summary.sessions - summary.errored, 'session')}"))
    if spec.min_task_completion_rate is not None:
        checks.append(_check("task completion rate", summary.task_completion_rate, spec.min_task_completion_rate))
    if spec.min_agent_score is not None:
        low = summary.min_agent
        checks.append(_check("lowest agent score", None if low is None else low.score, spec.min_agent_score,
                             "" if low is None else f"{low.agent_id} in {low.session_id}"))
    parts = []
    for c in checks:
        if c.metric is None:
            parts.append(f"{c.name}: nothing to measure")
            continue
        where = f" ({c.detail})" if c.detail else ""
        parts.append(f"{c.name}{where} = {c.metric:.3f} {SYMBOLS['gte'] if c.passed else 'not ' + SYMBOLS['gte']} "
                     f"{c.value:g}")
    verdict = run.gate.passed if run.gate is not None else None
    if any(c.passed is None for c in checks) or (verdict is None and run.exit_code != EXIT_INCOMPLETE):
        return SessionGateResult(passed=None, checks=checks, message=UNDECIDED + "; ".join(parts))
    if run.exit_code == EXIT_INCOMPLETE:  # no verdict from the sessions that survived
        return SessionGateResult(passed=None, checks=checks,
                                 message=f"Gate not evaluated: run aborted ({abort_reason(run)})")
    return SessionGateResult(passed=verdict, checks=checks,
                             message=f"Gate {'PASSED' if verdict else 'FAILED'}: " + "; ".join(parts))


def abort_reason(run: RunSummary) -> str | None:
    """Why the run did not complete, as the sessions view says it: a gate with nothing to measure says so in its
    own message, so the common summary's "the gate could not be evaluated" is not repeated."""
    reason = run.abort_reason
    return None if reason is None or reason.startswith(GATE_UNDECIDED) else reason


def finish(acc: SessionsAccumulator, run: RunSummary, gate: SessionGateSpec) -> SessionsSummary:
    """The SessionsSummary of the analyses folded in `acc`: its verdict, status and times the common summary's."""
    summary = acc.summary()
    summary.started_at, summary.finished_at, summary.duration_s = run.started_at, run.finished_at, run.duration_s
    summary.exit_code = run.exit_code
    summary.status = "aborted" if run.exit_code == EXIT_INCOMPLETE or run.status != "completed" else "completed"
    summary.abort_reason = abort_reason(run)
    summary.gate = gate_view(summary, gate, run)
    return summary


@dataclass
class SessionsView:
    """A run's sessions view: the analyses kept for display (at most MAX_KEPT), how many more the results file
    holds, the summary, and what to warn about."""

    analyses: list[SessionAnalysis]
    summary: SessionsSummary
    hidden: int = 0
    warnings: list[str] = field(default_factory=list)


def load_view(target: Path, run: RunSummary | None, record: AnalyzeRecord, order: list[int] | None = None,
              keep: int | None = MAX_KEPT) -> SessionsView:
    """Read a run's analyses back and fold its summary. `order`: each written line's place in the session file
    (the analyses kept are shown in that order; without it, as written); `keep` None keeps them all. Without a
    common summary (a killed run) the summary has no gate verdict and exit 3."""
    warnings: list[str] = []
    acc = SessionsAccumulator(run.suite if run is not None else results_path(target).parent.name,
                              record.dataset if run is not None else "")
    kept: list[tuple[int, SessionAnalysis]] = []
    hidden = 0
    for i, analysis in enumerate(analyses(target, warnings)):
        acc.add(analysis)
        if keep is None or i < keep:
            kept.append((order[i] if order is not None and i < len(order) else i, analysis))
        else:
            hidden += 1
    shown = [a for _, a in sorted(kept, key=lambda pair: pair[0])]
    if run is not None:
        return SessionsView(shown, finish(acc, run, record.gate), hidden, warnings)
    summary_file = results_path(target).parent / SUMMARY_NAME
    warnings.append(f"{summary_file}: unreadable summary; aggregates recomputed from the results, no gate verdict"
                    if summary_file.is_file() else
                    "no summary.json (the run did not finish): aggregates recomputed, no gate verdict")
    rebuilt = acc.summary()
    rebuilt.status, rebuilt.exit_code = "aborted", EXIT_INCOMPLETE
    rebuilt.abort_reason = ("summary.json is unreadable: no verdict" if summary_file.is_file() else
                            "no summary.json: the run is still going, or was stopped before it finished")
    return SessionsView(shown, rebuilt, hidden, warnings)


def document(view: SessionsView, target: Path) -> dict[str, object]:
    """The `--json` document: the summary and every session's analysis (read back from the results when more
    were analysed than kept, in the order written)."""
    found = analyses(target) if view.hidden else view.analyses
    sessions = [a.model_dump(mode="json") for a in found]
    return {"summary": view.summary.model_dump(mode="json"), "sessions": sessions}
