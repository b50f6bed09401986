"""What a recorded-sessions run returns to `evals analyze`: its sessions view (`sessions.view`), derived from the
common results the run wrote, with the run's exit code and the common summary beside it. The run itself is an
ordinary one (`runner/sessions.py`: the suite of the `recorded_session` target, run by `Execution`).

Exit codes, as for `evals run`: 0 gate passed, 1 gate failed, 2 invalid input (ConfigError, file:line), 3
incomplete (the judge unreachable or refusing the key, more than `max_error_rate` of the judge calls without a
verdict, a session that could not be analysed: `sessions/analyser.py`; or nothing to gate on).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from evals_cli.models.results import RunSummary
from evals_cli.run_options import RunOutcome
from evals_cli.sessions.results import SessionAnalysis, SessionsSummary
from evals_cli.sessions.view import AnalyzeRecord, load_view


@dataclass
class SessionsOutcome(RunOutcome[SessionsSummary]):
    """`RunOutcome` of `evals analyze`: the sessions view of the run (`sessions.view`), derived from the common
    results it wrote; `run` is the common summary (summary.json)."""

    analyses: list[SessionAnalysis] = field(default_factory=list)  # input order, at most MAX_KEPT
    hidden: int = 0  # analysed but not kept for display
    run: RunSummary | None = None


def sessions_outcome(outcome: RunOutcome[RunSummary], record: AnalyzeRecord, order: list[int]) -> SessionsOutcome:
    """The sessions view of a finished run (`order`: each written line's place in the session file)."""
    view = load_view(outcome.output_dir, outcome.summary, record, order)
    reason = view.summary.abort_reason
    return SessionsOutcome(summary=view.summary, output_dir=outcome.output_dir, exit_code=outcome.exit_code,
                           messages=[reason] if reason else [], analyses=view.analyses, hidden=view.hidden,
                           run=outcome.summary)
