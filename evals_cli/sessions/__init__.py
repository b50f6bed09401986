"""Multi-agent sessions: evaluate recorded sessions (no live agents) at session, turn and agent level.

A recorded session is a sample whose trajectory is the recording replayed (`episode.py`), graded by the session
grader kinds (`graders.py`), so a sessions run writes the results, summary and gate of every run
(`common.py`). `suite.py` (the document: `SessionsSuiteSpec`, `load_sessions_suite`), `prepare.py`
(`PreparedSessions`: everything checked before a judge call; `evals validate` collects its problems),
`runner.py` (`SessionsRun`: analyse, grade, write, summarise), `view.py` (what `evals analyze` shows, derived
from the results), `cli.py` (printing for `evals analyze`). `evals_cli.run` dispatches to it by the suite's
kind. Kept import-free on purpose.
"""
