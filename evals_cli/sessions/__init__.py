"""Multi-agent sessions: evaluate recorded sessions (no live agents) at session, turn and agent level.

A recorded session is a sample of the `recorded_session` target kind (`target.py`), whose episode replays the
recording as its trajectory (`episode.py`), graded by the session grader kinds (`graders.py`; their scores read
the analysis `analyser.py` makes once per session, `analysis.py`), so a sessions run is an ordinary run, with
the results, summary and gate of every run. `suite.py` (the document: `SessionsSuiteSpec`,
`load_sessions_suite`) becomes that suite (`common.py`), after `prepare.py` checked everything that can fail
before a judge call (`evals validate` collects its problems); the runner prepares and runs it
(runner/sessions.py). `view.py` and `outcome.py` (what `evals analyze` shows, derived from the results),
`cli.py` (the suite `evals analyze` builds, and its printing). Kept import-free on purpose.
"""
